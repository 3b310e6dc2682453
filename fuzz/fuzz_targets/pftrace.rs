//! `kprof merge`'s Perfetto trace reader (cli/src/trace_packets.rs, built here
//! as it is): every packet read is rewritten for a rank and encoded again; an
//! error is one line.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use libfuzzer_sys::fuzz_target;
use prost::Message;

#[allow(dead_code)] // Stop::Io: only the merge writes.
#[path = "../../cli/src/trace_packets.rs"]
mod trace_packets;

use trace_packets::{each_packet, rewrite, Rank, Stop};

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let mut rank = Rank {
        salt: trace_packets::mix(1),
        label: "rank 1".into(),
        pid_offset: 1 << 22,
        seqs: BTreeMap::new(),
        clock_offset: -1_000,
        monotonic_seqs: BTreeSet::new(),
    };
    let mut next_seq = 0u32;
    let mut out = Vec::new();
    match each_packet(data, &mut |mut p| {
        rewrite(&mut p, &mut rank, &mut next_seq);
        out.clear();
        p.encode(&mut out).map_err(|e| Stop::Bad(e.to_string()))
    }) {
        Ok(_) => {}
        Err(Stop::Bad(what)) => assert!(!what.contains('\n'), "{what:?}"),
        Err(Stop::Io(e)) => panic!("{e}"),
    }
});
