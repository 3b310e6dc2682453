//! The tuning cache (`KPROF_TUNING_CACHE`): read for this program, and what it
//! holds handed to the tuner for a problem of the seed's kind; an error is one
//! bounded line.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use kprof::tune::cache::{self, Identity};
use kprof::tune::space::{Candidates, Value, ValueType, Variable};
use kprof::tune::Tuner;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    // The seed's identity (tests/fuzz-corpus/tuning-cache/).
    let me = Identity {
        program: "/opt/app/kokkos_host".into(),
        host: "node1".into(),
    };
    let entries = match cache::parse(data, Path::new("/c"), &me) {
        Ok(e) => e,
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n') && line.len() <= 800, "{line:?}");
            return;
        }
    };
    // Every problem of the file met once, as a block size (the seed's) and as
    // a ratio in a range, so that its values reach the search.
    let keys: Vec<String> = entries.keys().take(8).cloned().collect();
    let mut t = Tuner::new(entries);
    t.declare(
        1,
        Some(Variable {
            name: "block".into(),
            ty: ValueType::Int,
            category: 1,
            candidates: Candidates::Set((0..8).map(|k| Value::Int(1 << k)).collect()),
        }),
        true,
    );
    t.declare(
        2,
        Some(Variable {
            name: "kernel_name".into(),
            ty: ValueType::Text,
            category: 0,
            candidates: Candidates::Unbounded,
        }),
        false,
    );
    let now = Instant::now();
    for (ctx, k) in keys.iter().enumerate() {
        let kernel = k.rsplit('=').next().unwrap_or("").to_string();
        t.begin(ctx, now);
        let got = t.request(
            ctx,
            now,
            &[(2, Some(Value::Text(kernel)))],
            &[(1, Some(Value::Int(16)))],
        );
        match &got[0] {
            Some(Value::Int(b)) => assert!(*b > 0 && *b <= 128 && b.count_ones() == 1, "{b}"),
            other => panic!("{other:?}"),
        }
        t.end(ctx, now, (0, None));
    }
    let _: BTreeMap<_, _> = t.cache_entries();
});
