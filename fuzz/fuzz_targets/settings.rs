//! Settings strings: every setting's value check, the flag parser, and the
//! one-line message of an invalid value (which must stay one line).
#![no_main]

use kprof_tables::settings::{self, parse_flag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_flag(value);
    for s in settings::all() {
        match s.check(s.var, value) {
            Ok(()) => {}
            Err(line) => assert!(line.len() <= s.var.len() + value.len() + 200),
        }
    }
    let _ = settings::unknown_line(value);
});
