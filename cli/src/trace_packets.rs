//! Reading a kprof Perfetto trace back, packet by packet, and rewriting each
//! packet for its rank in the merged trace (`kprof merge`, [`crate::pftrace`]).
//!
//! The file is outside input (a process killed mid-write, a file edited or
//! replaced): a truncated end is reported and what precedes it used; anything
//! else that is not a trace is one error. No more than one inflated packet is
//! held at a time, and an inflated packet larger than kprof writes is refused,
//! so memory does not grow with the file (a small file of compressed empty
//! packets would otherwise decode into gigabytes of packet structures).
//! Self-contained (no module of the crate), so the fuzz target `pftrace`
//! (`fuzz/`) builds it as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use flate2::read::ZlibDecoder;
use kprof_core::consume::trace::perfetto::SEGMENT_BYTES;
use kprof_core::consume::trace::perfetto_proto::{
    trace_packet::Data, TracePacket, BUILTIN_CLOCK_MONOTONIC,
};
use prost::encoding::{decode_key, decode_varint, WireType};
use prost::Message;

/// The most bytes one compressed packet may inflate to: kprof's writer
/// compresses a segment once it passes [`SEGMENT_BYTES`], so its packets stay
/// near that; four times over is not a kprof trace.
pub const INFLATED_MAX: usize = 4 * SEGMENT_BYTES;

/// Why reading stopped.
#[derive(Debug)]
pub enum Stop {
    /// The file is not a kprof Perfetto trace: what is wrong, one line.
    Bad(String),
    /// The consumer of the packets failed.
    Io(std::io::Error),
}

/// Calls `each` with every packet of the trace file's bytes `data`, in order,
/// compressed packets inflated and each of theirs passed on. Returns whether
/// the file ended with an incomplete packet (what precedes it was passed on).
pub fn each_packet(
    data: &[u8],
    each: &mut dyn FnMut(TracePacket) -> Result<(), Stop>,
) -> Result<bool, Stop> {
    let mut inner = Vec::new();
    for raw in Packets(data) {
        let Ok(raw) = raw else {
            return Ok(true);
        };
        let p = TracePacket::decode(raw).map_err(|e| Stop::Bad(e.to_string()))?;
        match p.data {
            Some(Data::CompressedPackets(ref z)) => {
                inner.clear();
                ZlibDecoder::new(&z[..])
                    .take(INFLATED_MAX as u64 + 1)
                    .read_to_end(&mut inner)
                    .map_err(|e| Stop::Bad(format!("compressed packets: {e}")))?;
                if inner.len() > INFLATED_MAX {
                    return Err(Stop::Bad(format!(
                        "a compressed packet inflates past {} MiB",
                        INFLATED_MAX >> 20
                    )));
                }
                for q in Packets(&inner) {
                    let q = q.map_err(|()| Stop::Bad("a corrupt compressed packet".into()))?;
                    each(TracePacket::decode(q).map_err(|e| Stop::Bad(e.to_string()))?)?;
                }
            }
            _ => each(p)?,
        }
    }
    Ok(false)
}

/// splitmix64's finaliser.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The packets of a serialized `Trace` (its `packet` fields), one at a time:
/// `Err(())` once, at a truncated end (a process killed mid-write).
pub struct Packets<'a>(pub &'a [u8]);

impl<'a> Iterator for Packets<'a> {
    type Item = Result<&'a [u8], ()>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.0.is_empty() {
            let mut cur = self.0;
            let framed = (|| {
                let (tag, wire) = decode_key(&mut cur).ok()?;
                if wire != WireType::LengthDelimited {
                    return None;
                }
                let len = usize::try_from(decode_varint(&mut cur).ok()?).ok()?;
                (cur.len() >= len).then_some((tag, len))
            })();
            let Some((tag, len)) = framed else {
                self.0 = &[];
                return Some(Err(()));
            };
            let (p, rest) = cur.split_at(len);
            self.0 = rest;
            if tag == 1 {
                return Some(Ok(p));
            }
        }
        None
    }
}

/// One rank's rewriting state.
pub struct Rank {
    /// Mixed into its track uuids and flow ids.
    pub salt: u64,
    /// Its process track's label, `rank N`.
    pub label: String,
    /// Added to its pids and tids.
    pub pid_offset: i64,
    /// Its sequence ids: in the input, in the merged trace.
    pub seqs: BTreeMap<u32, u32>,
    /// This rank's clock offset to rank 0's (ns): subtracted from its absolute
    /// CLOCK_MONOTONIC times, so that the ranks' tracks line up.
    pub clock_offset: i64,
    /// Sequences (by their id in the input) whose packets default to
    /// CLOCK_MONOTONIC.
    pub monotonic_seqs: BTreeSet<u32>,
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
pub fn rewrite(p: &mut TracePacket, rank: &mut Rank, next_seq: &mut u32) {
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
