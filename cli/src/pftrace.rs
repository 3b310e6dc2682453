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
use std::io::{Read, Write};
use std::path::Path;

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use kprof_core::consume::trace::perfetto_proto::{
    trace_packet::Data, TracePacket, BUILTIN_CLOCK_MONOTONIC,
};
use prost::encoding::{decode_key, decode_varint, encode_key, encode_varint, WireType};
use prost::Message;

use crate::fmt::bytes;
use crate::outcome::Failure;
use crate::path_text::show;

/// Bytes of packets per compressed packet written.
const SEGMENT: usize = 4 << 20;

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The packets of a serialized `Trace` (`packet` fields), stopping at a truncated
/// end (a process killed mid-write). Returns the packets and whether it was cut.
fn packets(buf: &[u8]) -> (Vec<&[u8]>, bool) {
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let mut cur = rest;
        let Ok((tag, wire)) = decode_key(&mut cur) else {
            return (out, true);
        };
        if wire != WireType::LengthDelimited {
            return (out, true);
        }
        let Ok(len) = decode_varint(&mut cur) else {
            return (out, true);
        };
        let len = len as usize;
        if cur.len() < len {
            return (out, true);
        }
        if tag == 1 {
            out.push(&cur[..len]);
        }
        rest = &cur[len..];
    }
    (out, false)
}

/// One rank's rewriting state.
struct Rank {
    salt: u64,
    label: String,
    pid_offset: i64,
    seqs: BTreeMap<u32, u32>,
    /// This rank's clock offset to rank 0's (ns): subtracted from its absolute
    /// CLOCK_MONOTONIC times, so that the ranks' tracks line up.
    clock_offset: i64,
    /// Sequences (by their id in the input) whose packets default to
    /// CLOCK_MONOTONIC.
    monotonic_seqs: BTreeSet<u32>,
}

impl Rank {
    fn uuid(&self, u: u64) -> u64 {
        mix(u ^ self.salt).max(1)
    }
    fn flow(&self, f: u64) -> u64 {
        mix(f ^ self.salt ^ 0x666c_6f77).max(1)
    }
    fn pid(&self, p: i32) -> i32 {
        (i64::from(p) + self.pid_offset) as i32
    }
    fn time(&self, t: u64) -> u64 {
        t.saturating_add_signed(-self.clock_offset)
    }
}

/// Rewrites one decoded packet for `rank`; `next_seq` hands out sequence ids.
fn rewrite(p: &mut TracePacket, rank: &mut Rank, next_seq: &mut u32) {
    // Absolute times move onto rank 0's clock; incremental ones follow their
    // sequence's clock snapshot, which moves with them.
    if rank.clock_offset != 0 {
        let seq = p.trusted_packet_sequence_id.unwrap_or(0);
        if let Some(c) = p
            .trace_packet_defaults
            .as_ref()
            .and_then(|d| d.timestamp_clock_id)
        {
            if c == BUILTIN_CLOCK_MONOTONIC {
                rank.monotonic_seqs.insert(seq);
            } else {
                rank.monotonic_seqs.remove(&seq);
            }
        }
        let monotonic = match p.timestamp_clock_id {
            Some(c) => c == BUILTIN_CLOCK_MONOTONIC,
            None => rank.monotonic_seqs.contains(&seq),
        };
        if monotonic {
            p.timestamp = p.timestamp.map(|t| rank.time(t));
        }
        if let Some(Data::ClockSnapshot(cs)) = &mut p.data {
            for c in &mut cs.clocks {
                if c.clock_id == Some(BUILTIN_CLOCK_MONOTONIC) {
                    c.timestamp = c.timestamp.map(|t| rank.time(t));
                }
            }
        }
    }
    if let Some(s) = p.trusted_packet_sequence_id {
        let id = *rank.seqs.entry(s).or_insert_with(|| {
            *next_seq += 1;
            *next_seq
        });
        p.trusted_packet_sequence_id = Some(id);
    }
    if let Some(d) = p
        .trace_packet_defaults
        .as_mut()
        .and_then(|d| d.track_event_defaults.as_mut())
    {
        d.track_uuid = d.track_uuid.map(|u| rank.uuid(u));
    }
    match &mut p.data {
        Some(Data::TrackDescriptor(t)) => {
            t.uuid = t.uuid.map(|u| rank.uuid(u));
            t.parent_uuid = t.parent_uuid.map(|u| rank.uuid(u));
            if let Some(proc_) = t.process.as_mut() {
                proc_.pid = proc_.pid.map(|p| rank.pid(p));
                if !proc_.process_labels.iter().any(|l| l.starts_with("rank ")) {
                    proc_.process_labels.push(rank.label.clone());
                }
            }
            if let Some(th) = t.thread.as_mut() {
                th.pid = th.pid.map(|p| rank.pid(p));
                th.tid = th.tid.map(|p| rank.pid(p));
            }
        }
        Some(Data::TrackEvent(e)) => {
            e.track_uuid = e.track_uuid.map(|u| rank.uuid(u));
            for f in e
                .flow_ids
                .iter_mut()
                .chain(e.terminating_flow_ids.iter_mut())
            {
                *f = rank.flow(*f);
            }
        }
        _ => {}
    }
}

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
        let (outer, cut) = packets(&data);
        if cut {
            eprintln!(
                "kprof merge: {} ends with an incomplete packet (process killed?); using what precedes it",
                show(path)
            );
        }
        // Decode all of this rank first: its pid decides the pid offset.
        let mut decoded: Vec<TracePacket> = Vec::new();
        let bad = |what: String| {
            Failure(format!(
                "{}: not a kprof Perfetto trace ({what})",
                show(path)
            ))
        };
        for raw in outer {
            let p = TracePacket::decode(raw).map_err(|e| bad(e.to_string()))?;
            match p.data {
                Some(Data::CompressedPackets(ref z)) => {
                    let mut inner = Vec::new();
                    ZlibDecoder::new(&z[..])
                        .read_to_end(&mut inner)
                        .map_err(|e| bad(format!("compressed packets: {e}")))?;
                    let (list, cut) = packets(&inner);
                    if cut {
                        return Err(bad("a corrupt compressed packet".into()));
                    }
                    for q in list {
                        decoded.push(TracePacket::decode(q).map_err(|e| bad(e.to_string()))?);
                    }
                }
                _ => decoded.push(p),
            }
        }
        let pid = decoded.iter().find_map(|p| match &p.data {
            Some(Data::TrackDescriptor(t)) => t.process.as_ref().and_then(|pr| pr.pid),
            _ => None,
        });
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
        for mut p in decoded {
            rewrite(&mut p, &mut rank, &mut next_seq);
            w.push(&p).map_err(io)?;
        }
        w.seal().map_err(io)?;
    }
    w.file.sync_all().map_err(io)?;
    let _ = w.written;
    Ok(())
}
