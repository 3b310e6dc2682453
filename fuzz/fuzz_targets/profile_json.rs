//! A process's `profile.json` (what `kprof merge` and the MPI reduction read):
//! parsed, folded into the job profile form, encoded, decoded and rendered.
#![no_main]

use kprof_core::output::report::Report;
use kprof_core::reduce::{from_report, render, Fold};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(r) = serde_json::from_slice::<Report>(data) else {
        return;
    };
    let form = from_report(&r, &r.tree, 0, None, true);
    let fold = Fold::decode(&form.encode_to_vec()).expect("a form kprof encoded decodes");
    let _ = render(fold.form());
});
