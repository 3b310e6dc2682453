//! Merging the Perfetto traces of several processes into one.
//!
//! A trace file is a stream of `TracePacket`s, so traces can be concatenated, but
//! the packets of two kprof processes would collide: every process numbers its
//! packet sequences 1, 2, ... (one per thread), numbers its flows by thread index and
//! counter, and two ranks on different hosts may have the same pid. Each packet is
//! therefore decoded (inflating `compressed_packets`), its sequence id remapped to one
//! unique in the merged trace, its track uuids and flow ids re-mixed with the rank,
//! its pids/tids moved apart when they collide, the process track labelled with the
//! rank, and the whole re-compressed, one rank after the other.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::Path;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use kprof_core::consume::trace::perfetto_proto::{trace_packet::Data, TracePacket};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use crate::fmt::bytes;
use crate::outcome::Failure;
use crate::path_text::show;
use crate::trace_packets::{each_packet, mix, rewrite, Rank, Stop};

/// Bytes of packets per compressed packet written.
const SEGMENT: usize = 4 << 20;

/// Output: packets buffered and written compressed.
struct Out {
    file: File,
    buf: Vec<u8>,
    written: u64,
}

impl Out {
    fn push(&mut self, p: &TracePacket) -> std::io::Result<()> {
        encode_key(1, WireType::LengthDelimited, &mut self.buf);
        encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode_raw(&mut self.buf);
        if self.buf.len() >= SEGMENT {
            self.seal()?;
        }
        Ok(())
    }

    fn seal(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut z = ZlibEncoder::new(Vec::with_capacity(self.buf.len() / 4), Compression::new(2));
        z.write_all(&self.buf)?;
        let packet = TracePacket {
            data: Some(Data::CompressedPackets(z.finish()?)),
            ..Default::default()
        };
        let mut framed = Vec::with_capacity(packet.encoded_len() + 10);
        encode_key(1, WireType::LengthDelimited, &mut framed);
        encode_varint(packet.encoded_len() as u64, &mut framed);
        packet.encode_raw(&mut framed);
        self.file.write_all(&framed)?;
        self.written += framed.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

/// Merges `traces` (rank, its directory, its trace.pftrace, its clock offset to
/// rank 0's in ns) into `out`.
pub fn merge(traces: &[(u64, &Path, std::path::PathBuf, i64)], out: &Path) -> Result<(), Failure> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|e| Failure(format!("cannot create {}: {e}", show(out))))?;
    let mut w = Out {
        file,
        buf: Vec::with_capacity(SEGMENT + (1 << 16)),
        written: 0,
    };
    let io = |e: std::io::Error| Failure(format!("writing {}: {e}", show(out)));
    let mut next_seq = 0u32;
    let mut used_pids: BTreeSet<i32> = BTreeSet::new();
    let total = traces.len();
    for (i, (rank_no, _dir, path, clock_offset)) in traces.iter().enumerate() {
        let data = std::fs::read(path).map_err(|e| Failure(format!("{}: {e}", show(path))))?;
        eprintln!(
            "kprof merge: trace [{}/{total}] rank {rank_no}: {} ({})",
            i + 1,
            show(path),
            bytes(data.len() as u64)
        );
        let bad = |stop: Stop| match stop {
            Stop::Bad(what) => Failure(format!(
                "{}: not a kprof Perfetto trace ({what})",
                show(path)
            )),
            Stop::Io(e) => io(e),
        };
        // A first pass checks the whole file and finds its pid (which decides
        // the pid offset) before anything of it is written; neither pass holds
        // more than one inflated packet, so memory does not grow with the file.
        let mut pid = None;
        let cut = each_packet(&data, &mut |p| {
            if pid.is_none() {
                if let Some(Data::TrackDescriptor(t)) = &p.data {
                    pid = t.process.as_ref().and_then(|pr| pr.pid);
                }
            }
            Ok(())
        })
        .map_err(bad)?;
        if cut {
            eprintln!(
                "kprof merge: {} ends with an incomplete packet (process killed?); using what precedes it",
                show(path)
            );
        }
        let mut pid_offset = 0i64;
        if let Some(pid) = pid {
            let mut new = pid;
            // Collides with a rank before (same pid on another host): move this
            // rank's pids and tids to a free range.
            while used_pids.contains(&new) {
                new = new.wrapping_add(1 << 22);
            }
            used_pids.insert(new);
            pid_offset = i64::from(new) - i64::from(pid);
        }
        let mut rank = Rank {
            salt: mix(0x7261_6e6b_0000_0000 ^ (i as u64)),
            label: format!("rank {rank_no}"),
            pid_offset,
            seqs: BTreeMap::new(),
            clock_offset: *clock_offset,
            monotonic_seqs: BTreeSet::new(),
        };
        each_packet(&data, &mut |mut p| {
            rewrite(&mut p, &mut rank, &mut next_seq);
            w.push(&p).map_err(Stop::Io)
        })
        .map_err(bad)?;
        w.seal().map_err(io)?;
    }
    w.file.sync_all().map_err(io)?;
    let _ = w.written;
    Ok(())
}
