//! The profile's GPU section: device activities summed by kernel name and by
//! copy direction, and per device its busy time and memory (the memory space
//! a GPU plugin names after the device).

use kprof_abi::{direction, Kind};
use rustc_hash::FxHashMap;

use crate::base::devices::Device;
use crate::hot::aggregate::stats::Stats;
use crate::output::report::{Gpu, GpuCopy, GpuDevice, GpuKernel, MemorySpace};

use super::merge::Merged;

/// The GPU section of `merged` (`None` when no device activity was recorded).
/// `memory` is the report's memory per space, `run_ns` the run's duration.
pub fn section(
    merged: &Merged,
    memory: &[MemorySpace],
    devices: &[Device],
    text: &dyn Fn(u32) -> String,
    run_ns: u64,
) -> Option<Gpu> {
    if merged.devices.is_empty() {
        return None;
    }
    let mut per_device: Vec<GpuDevice> = merged
        .devices
        .iter()
        .map(|(&name, d)| {
            let device = text(name);
            let space = memory.iter().find(|m| m.space == device);
            GpuDevice {
                activities: d.activities,
                busy_ns: d.busy_ns(),
                idle_pct: if run_ns == 0 {
                    0.0
                } else {
                    100.0 * run_ns.saturating_sub(d.busy_ns()) as f64 / run_ns as f64
                },
                memory_high_water_bytes: space.map_or(0, |m| m.high_water_bytes),
                leaked_bytes: space.map_or(0, |m| m.leaks.iter().map(|l| l.bytes).sum()),
                leaked_allocations: space.map_or(0, |m| m.leaks.len() as u64),
                device,
            }
        })
        .collect();
    per_device.sort_by(|a, b| a.device.cmp(&b.device));
    let busy: FxHashMap<&str, u64> = per_device
        .iter()
        .map(|d| (d.device.as_str(), d.busy_ns))
        .collect();

    // Kernels: every node of kind gpu_kernel, whatever launched it, by name and device.
    let mut kernels: FxHashMap<(u32, String), Stats> = FxHashMap::default();
    for node in &merged.tree.nodes {
        if node.kind != Kind::GpuKernel {
            continue;
        }
        let device = usize::from(node.dev)
            .checked_sub(1)
            .and_then(|i| devices.get(i))
            .map_or_else(|| "Device".to_string(), Device::full_label);
        kernels
            .entry((node.name, device))
            .or_default()
            .merge(&node.stats);
    }
    let mut kernels: Vec<GpuKernel> = kernels
        .into_iter()
        .map(|((name, device), s)| {
            let device_busy = busy.get(device.as_str()).copied().unwrap_or(0);
            GpuKernel {
                name: text(name),
                count: s.count,
                total_ns: s.total_ns,
                mean_ns: s.mean(),
                min_ns: s.min(),
                max_ns: s.max_ns,
                busy_pct: if device_busy == 0 {
                    0.0
                } else {
                    100.0 * s.total_ns as f64 / device_busy as f64
                },
                device,
            }
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.device.cmp(&b.device))
    });

    let mut copies: Vec<GpuCopy> = merged
        .device_copies
        .iter()
        .map(|(&(device, dir), c)| GpuCopy {
            device: text(device),
            direction: direction_text(dir).into(),
            count: c.count,
            bytes: c.bytes,
            total_ns: c.total_ns,
            gb_per_s: if c.total_ns == 0 {
                0.0
            } else {
                c.bytes as f64 / c.total_ns as f64
            },
        })
        .collect();
    copies.sort_by(|a, b| (&a.device, &a.direction).cmp(&(&b.device, &b.direction)));
    Some(Gpu {
        kernels,
        copies,
        devices: per_device,
    })
}

/// The report's name of a copy direction.
pub fn direction_text(d: u8) -> &'static str {
    match d {
        direction::TO_DEVICE => "HtoD",
        direction::FROM_DEVICE => "DtoH",
        direction::DEVICE_TO_DEVICE => "DtoD",
        direction::PEER => "peer",
        _ => "other",
    }
}
