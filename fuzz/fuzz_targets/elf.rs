//! `kprof run`'s ELF reader (cli/src/detect.rs, built here as it is): any
//! bytes give what the file says or one error line.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../cli/src/detect.rs"]
mod detect;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    match detect::inspect(data) {
        Ok(info) => {
            let names = info.needed.len() + info.runpath.len() + info.rpath.len();
            assert!(names <= data.len());
        }
        Err(e) => assert!(!e.contains('\n') && !e.is_empty(), "{e:?}"),
    }
});
