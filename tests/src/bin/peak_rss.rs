//! `peak_rss PROGRAM ARGS...`: runs the program (its output discarded) and prints
//! `<seconds> <peak resident bytes> <exit status>` of exactly that process. A
//! separate small process, so that the peak is the program's own (see
//! `kprof_tests::synthetic::measure`).

use std::process::{Command, Stdio};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: peak_rss PROGRAM ARGS...");
        std::process::exit(2);
    };
    let cost = kprof_tests::synthetic::measure(
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    println!(
        "{} {} {}",
        cost.seconds,
        cost.peak_bytes,
        if cost.success { 0 } else { 1 }
    );
}
