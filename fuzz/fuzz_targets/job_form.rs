//! The protobuf job profile the MPI reduction exchanges: decoded, checked,
//! folded into itself and rendered as the merged profile.
#![no_main]

use kprof_core::reduce::{render, Fold};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(a) = Fold::decode(data) else { return };
    let mut b = Fold::decode(data).expect("decodes twice");
    b.fold(a.into_form());
    let _ = render(b.form());
});
