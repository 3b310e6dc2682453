//! Devices and execution-space instances, registered by plugins and referred to by a
//! 16-bit index in records.

use std::sync::Mutex;

/// A device as described by the plugin that saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Back end (`"OpenMP"`, `"Cuda"`).
    pub backend: String,
    /// Device number.
    pub index: u32,
    /// Instance / stream / queue.
    pub instance: u32,
}

impl Device {
    /// Short label: the back end, with `:index` when the device is not the first.
    pub fn label(&self) -> String {
        if self.index == 0 {
            self.backend.clone()
        } else {
            format!("{}:{}", self.backend, self.index)
        }
    }
}

impl Device {
    /// The back end and the device number (`"CUDA:0"`), whatever the stream:
    /// how GPU plugins name a device's memory space.
    pub fn full_label(&self) -> String {
        format!("{}:{}", self.backend, self.index)
    }

    /// The device's track in traces: back end, number and stream
    /// (`"CUDA:0 stream 7"`).
    pub fn track_label(&self) -> String {
        format!("{} stream {}", self.full_label(), self.instance)
    }
}

/// The name of the trace track of device (stream) index `index`, `device` as the
/// table has it; `sync`: the track of that stream's synchronizations (they overlap
/// its work, so they have their own).
pub fn track_name(device: Option<Device>, index: u16, sync: bool) -> String {
    let mut name = device.map_or_else(|| format!("device {index}"), |d| d.track_label());
    if sync {
        name.push_str(" synchronization");
    }
    name
}

/// The device table. Index 0 means "no device".
#[derive(Default)]
pub struct Devices {
    list: Mutex<Vec<Device>>,
}

impl Devices {
    /// Index of `d` (1-based), adding it on first sight; 0 once the table is full.
    pub fn index(&self, d: Device) -> u16 {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = list.iter().position(|x| *x == d) {
            return i as u16 + 1;
        }
        if list.len() >= u16::MAX as usize - 1 {
            return 0;
        }
        list.push(d);
        list.len() as u16
    }

    /// The device with index `i`.
    pub fn get(&self, i: u16) -> Option<Device> {
        let list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.get(usize::from(i).checked_sub(1)?).cloned()
    }

    /// Every device, in index order.
    pub fn snapshot(&self) -> Vec<Device> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
