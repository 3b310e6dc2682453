//! What kprof does when the program does something unusual: threads whose first
//! calls race, a worker that calls `exit`, `fork`, signals to the process group of
//! `kprof run`, SIGKILL of `kprof run`, crashes, and what `kprof run` says at the
//! end when there is no output. The program is `tests/harness/robust.c` (annotation
//! API); every test reads `profile.json` back and checks exact counts.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kprof_tests::trace_check::read_json;
use kprof_tests::{
    clean_cmd, compile, core_harness, lib, nodes, read_profile, run, scratch, spawn_until,
    test_file, u,
};
use serde_json::Value;

/// The harness program, built once.
fn robust() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    core_harness(&EXE, "robust")
}

/// The harness in `dir`, writing to `dir/out`, without the summary.
fn robust_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&robust());
    cmd.current_dir(dir)
        .args(args)
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0")
        .stdin(Stdio::null());
    cmd
}

/// `kprof run -o out -- robust <args>` in `dir`, in a process group of its own
/// (as a batch system starts a job).
fn kprof_run(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir)
        .args(["run", "-o", "out", "--summary", "0", "--"])
        .arg(robust())
        .args(args)
        .stdin(Stdio::null())
        .process_group(0);
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Total count of the nodes named `name`, anywhere in the tree.
fn count(p: &Value, name: &str) -> u64 {
    nodes(p)
        .iter()
        .filter(|(path, _)| path.last().is_some_and(|n| n == name))
        .map(|(_, n)| u(&n["count"]))
        .sum()
}

/// Names of the root nodes, sorted.
fn roots(p: &Value) -> Vec<String> {
    let mut v: Vec<String> = p["tree"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n["name"].as_str().unwrap_or_default().to_string())
        .collect();
    v.sort();
    v
}

fn anomaly(p: &Value, name: &str) -> u64 {
    u(&p["anomalies"][name])
}

// ------------------------------------------------------------ concurrent start

/// 64 threads whose first kprof call is simultaneous (a barrier just before it),
/// 100 regions each, in 100 fresh processes: every region of every thread is in
/// the profile, every time. (Before: the threads that lost the race to the start
/// recorded nothing, uncounted.)
#[test]
fn simultaneous_first_calls_lose_nothing() {
    let dir = scratch("robust_race");
    for rep in 0..100 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let o = run(&mut robust_cmd(&dir, &["race", "64", "100"]));
        assert!(o.status.success(), "rep {rep}: {}", stderr(&o));
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), 6400, "rep {rep}");
        assert_eq!(u(&p["dropped_records"]), 0, "rep {rep}");
        assert_eq!(p["threads"].as_array().map(Vec::len), Some(64), "rep {rep}");
        assert_eq!(anomaly(&p, "calls_after_finalize"), 0, "rep {rep}");
    }
}

/// The stress version: 64 threads x 100000 regions whose first calls are
/// simultaneous, 20 runs, all exact (13 s on 2 cores). The budget holds every
/// record, so an exact count does not depend on the writer keeping up.
#[test]
fn simultaneous_first_calls_stress() {
    let dir = scratch("robust_race_stress");
    for rep in 0..20 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let o = run(robust_cmd(&dir, &["race", "64", "100000"]).env("KPROF_BUFFER_MB", "2048"));
        assert!(o.status.success(), "rep {rep}: {}", stderr(&o));
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), 6_400_000, "rep {rep}");
        assert_eq!(u(&p["dropped_records"]), 0, "rep {rep}");
    }
}

/// As above, then one worker calls exit() while the others wait: the output is
/// complete (before: no output at all in most runs).
#[test]
fn worker_calling_exit_first_leaves_complete_output() {
    let dir = scratch("robust_exit");
    for rep in 0..20 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let o = run(&mut robust_cmd(&dir, &["exit", "64", "100"]));
        assert!(o.status.success(), "rep {rep}: {}", stderr(&o));
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), 6400, "rep {rep}");
        assert_eq!(u(&p["dropped_records"]), 0, "rep {rep}");
    }
}

// ------------------------------------------------------------------------ fork

/// The child's pid, from the harness's "child <pid>" line.
fn child_pid(o: &Output) -> u32 {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("child ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no child line: {}", stderr(o)))
}

/// A forked child that returns from main exits at once (before: 30 s waiting for
/// a writer thread it does not have) and writes its own profile, from the fork
/// on, into its own directory (%p is its pid); the parent's is unchanged.
#[test]
fn forked_child_exits_at_once_with_its_own_profile() {
    let dir = scratch("robust_fork");
    let t = Instant::now();
    let o = run(robust_cmd(&dir, &["fork", "10", "20"])
        .env("KPROF_OUTPUT_DIR", dir.join("out-%p"))
        .env("KPROF_TRACE", "json"));
    let took = t.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: {}",
        stderr(&o)
    );
    let child = child_pid(&o);
    let parent = read_profile(&dir.join(format!("out-{}", o_pid(&dir, child))));
    assert_eq!(roots(&parent), ["after", "parent"]);
    assert_eq!(count(&parent, "parent"), 10);
    assert_eq!(count(&parent, "after"), 10);
    let kid = read_profile(&dir.join(format!("out-{child}")));
    assert_eq!(roots(&kid), ["child"]);
    assert_eq!(count(&kid, "child"), 20);
    assert_eq!(kid["plugins"], serde_json::json!(["annotation"]));
    assert_eq!(anomaly(&kid, "unmatched_ends"), 0);
    assert_eq!(u(&kid["dropped_records"]), 0);
    assert!(!stderr(&o).contains("did not finish"), "{}", stderr(&o));
    // Each has its own trace, streamed by its own writer.
    let kid_trace = read_json(&dir.join(format!("out-{child}")));
    kid_trace.assert_valid();
    assert_eq!(kid_trace.named("child").len(), 20);
    assert_eq!(kid_trace.named("parent").len(), 0);
    let parent_trace = read_json(&dir.join(format!("out-{}", o_pid(&dir, child))));
    parent_trace.assert_valid();
    assert_eq!(parent_trace.named("parent").len(), 10);
    assert_eq!(parent_trace.named("after").len(), 10);
    assert_eq!(parent_trace.named("child").len(), 0);
}

/// The parent's directory: the one `out-<pid>` that is not the child's.
fn o_pid(dir: &Path, child: u32) -> u32 {
    let found: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("out-")?.parse().ok())
        .filter(|&p| p != child)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0]
}

/// KPROF_FORK=0: the child records nothing, writes nothing, says so in one line,
/// and exits at once.
#[test]
fn fork_off_child_records_nothing_and_says_so() {
    let dir = scratch("robust_fork_off");
    let t = Instant::now();
    let o = run(robust_cmd(&dir, &["fork", "10", "20"])
        .env("KPROF_OUTPUT_DIR", dir.join("out-%p"))
        .env("KPROF_FORK", "0"));
    assert!(t.elapsed() < Duration::from_secs(10), "{}", stderr(&o));
    assert!(o.status.success(), "{}", stderr(&o));
    let child = child_pid(&o);
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [format!(
            "kprof: process {child} is a fork of a measured process and records nothing (KPROF_FORK=0)"
        )]
    );
    assert!(!dir.join(format!("out-{child}")).exists());
    let parent = read_profile(&dir.join(format!("out-{}", o_pid(&dir, child))));
    assert_eq!(count(&parent, "parent") + count(&parent, "after"), 20);
}

/// fork + exec (what system() and popen() amount to) of 200 children stays
/// instant and leaves one profile, the parent's.
#[test]
fn fork_exec_stays_instant() {
    let dir = scratch("robust_fork_exec");
    let t = Instant::now();
    let o = run(&mut robust_cmd(&dir, &["forkexec", "200"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let p = read_profile(&dir.join("out"));
    assert_eq!(count(&p, "parent"), 200);
    let dirs = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(dirs, 1);
}

// --------------------------------------------------------------------- signals

/// Starts `cmd` (whose program prints "ready" once its regions are recorded) and
/// waits for that line.
fn start_ready(cmd: &mut Command) -> std::process::Child {
    spawn_until(cmd, "ready\n")
}

/// SIGTERM, SIGINT and SIGHUP to the whole process group of `kprof run` (kprof
/// and the program both get it; kprof must not send it a second time, and a
/// second one must not cut the output short): complete output, 8 times each.
#[test]
fn group_signal_to_kprof_run_leaves_complete_output() {
    let dir = scratch("robust_group_signal");
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        for rep in 0..8 {
            let _ = std::fs::remove_dir_all(dir.join("out"));
            let child = start_ready(&mut kprof_run(&dir, &["hold", "8", "1000"]));
            // SAFETY: signalling the process group we created.
            assert_eq!(unsafe { libc::kill(-(child.id() as i32), sig) }, 0);
            let o = child.wait_with_output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(128 + sig), "{name} {rep}: {err}");
            let p = read_profile(&dir.join("out"));
            assert_eq!(count(&p, "r"), 8000, "{name} {rep}: {err}");
            assert!(
                err.contains(&format!(
                    "kprof: {name} ends the program; writing what was recorded up to it"
                )),
                "{err}"
            );
            assert!(
                err.contains(&format!("was killed by signal {sig} ({name})")),
                "{err}"
            );
            assert!(err.contains("kprof: results in out"), "{err}");
        }
    }
}

/// Two SIGTERMs sent to the program 5 ms apart (a group signal and its copy from
/// a launcher): the second, taken by another thread while the first one's handler
/// writes, waits for the same output instead of ending the process. 10 runs, 8
/// threads x 100000 regions.
#[test]
fn second_signal_during_the_flush_waits_for_the_output() {
    let dir = scratch("robust_signal_twice");
    for rep in 0..10 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let child =
            start_ready(robust_cmd(&dir, &["hold", "8", "100000"]).env("KPROF_BUFFER_MB", "512"));
        for i in 0..2 {
            if i == 1 {
                // Not so close that the two merge into one pending signal: the
                // second comes while the first one's handler writes.
                std::thread::sleep(Duration::from_millis(5));
            }
            // SAFETY: signalling our own child.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.signal(), Some(libc::SIGTERM), "rep {rep}");
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), 800_000, "rep {rep}: {}", stderr(&o));
        assert_eq!(u(&p["dropped_records"]), 0, "rep {rep}");
    }
}

/// A program with its own SIGTERM handler that keeps running: its threads (whose
/// first calls race) record until SIGTERM to the process group of `kprof run`,
/// then it returns from main. Every region it made is in the profile (it prints
/// how many), 4 times.
#[test]
fn program_with_its_own_sigterm_handler_keeps_every_event() {
    let dir = scratch("robust_own_handler");
    for rep in 0..4 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let mut child = start_ready(&mut kprof_run(&dir, &["busy", "4"]));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) },
            0
        );
        let mut rest = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut rest).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "rep {rep}: {}", stderr(&o));
        let calls: u64 = rest
            .trim()
            .strip_prefix("calls ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("rep {rep}: {rest}"));
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), calls, "rep {rep}");
        assert_eq!(u(&p["dropped_records"]), 0, "rep {rep}");
        assert_eq!(anomaly(&p, "calls_after_finalize"), 0, "rep {rep}");
    }
}

/// What the `count` mode of the harness reports: deliveries of SIGTERM, SIGUSR1
/// and SIGUSR2 so far, whether SIGUSR2's action is SIG_DFL again, and si_code and
/// si_pid of the last SIGTERM.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    delivered: [u64; 3],
    reset: bool,
    code: i32,
    from: i32,
}

/// Asks the `count` program for its counts (one line in, one line out).
fn counts(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut impl std::io::BufRead,
    label: &str,
) -> Counts {
    use std::io::Write;
    writeln!(stdin).unwrap_or_else(|e| panic!("{label}: the program is gone: {e}"));
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |key: &str| -> i64 {
        f.iter()
            .position(|w| *w == key)
            .and_then(|i| f.get(i + 1)?.parse().ok())
            .unwrap_or_else(|| panic!("{label}: no {key} in {line:?}"))
    };
    Counts {
        delivered: [num("term") as u64, num("usr1") as u64, num("usr2") as u64],
        reset: num("reset") == 1,
        code: num("code") as i32,
        from: num("from") as i32,
    }
}

/// A program with its own handlers that go on running (SIGTERM with SA_SIGINFO,
/// SIGUSR1 set with `signal()`, SIGUSR2 with SA_RESETHAND) gets each signal
/// exactly once under `kprof run`, however it is sent: to the process group, to
/// kprof's pid only, or to both pids one after the other in either order (as a
/// batch system signals each process of a job). 5 rounds of each (so five sent to
/// kprof's pid are five), a pairing window between rounds where the program gets
/// two copies, and between the ways of sending.
/// The handler sees the sender's `kill` (SI_USER and its pid), a forwarded copy
/// included. SIGUSR2 with SA_RESETHAND to the group: handled once and reset, and
/// the program lives on (a second copy would kill it). Then the program returns
/// from main: every region it made is in the profile. (Before: the program got a
/// group signal twice whenever its handler took the first copy before kprof
/// looked.)
#[test]
fn program_with_its_own_handlers_gets_each_signal_once() {
    let dir = scratch("robust_signal_once");
    let mut child = kprof_run(&dir, &["count", "10"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert_eq!(line, "ready\n");
    let kprof = child.id() as i32;
    let children = std::fs::read_to_string(format!("/proc/{kprof}/task/{kprof}/children")).unwrap();
    let program: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let me = std::process::id() as i32;
    let send = |pid: i32, sig: i32| {
        // SAFETY: signalling our own child, its process group or its child.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    };
    // Long enough for a second copy, forwarded within milliseconds, to arrive.
    let settle = || std::thread::sleep(Duration::from_millis(150));
    // Between rounds where the program gets two copies: past the pairing window.
    // On a loaded machine the kernel may merge a round's two copies (both
    // pending at once), and the copy kprof's library then still waits for would
    // be taken from the next round's signal (docs/cli.md says so).
    let window = Duration::from_millis(u64::from(kprof_abi::forward::WINDOW_MS) + 100);
    let mut expected = [0u64; 3];
    let mut reports = 0u64;
    for how in ["group", "kprof", "program, kprof", "kprof, program"] {
        for (k, sig, name) in [(0, libc::SIGTERM, "SIGTERM"), (1, libc::SIGUSR1, "SIGUSR1")] {
            for rep in 0..5 {
                if how != "kprof" && rep > 0 {
                    std::thread::sleep(window);
                }
                match how {
                    "group" => send(-kprof, sig),
                    "kprof" => send(kprof, sig),
                    "program, kprof" => {
                        send(program, sig);
                        send(kprof, sig);
                    }
                    _ => {
                        send(kprof, sig);
                        send(program, sig);
                    }
                }
                expected[k] += 1;
                let label = format!("{name} to {how}, round {rep}");
                // Asked again while a copy may still be on its way: on a loaded
                // machine kprof may forward a signal later than `settle`, and
                // sent to kprof's pid only, that copy is the program's only one.
                // A second delivery still fails: here after the deadline, at the
                // next round or at the end.
                let deadline = Instant::now() + Duration::from_secs(3);
                let c = loop {
                    settle();
                    let c = counts(&mut stdin, &mut stdout, &label);
                    reports += 1;
                    if c.delivered == expected || Instant::now() > deadline {
                        break c;
                    }
                };
                assert_eq!(c.delivered, expected, "{label}");
                assert!(!c.reset, "{label}");
                if sig == libc::SIGTERM {
                    assert_eq!((c.code, c.from), (libc::SI_USER, me), "{label}");
                }
            }
        }
        // The next way of sending starts after the pairing window: within it, a
        // signal from the same sender that reaches the program by another way
        // would be taken for the second copy of the last one.
        std::thread::sleep(Duration::from_millis(
            u64::from(kprof_abi::forward::WINDOW_MS) + 100,
        ));
    }
    // SA_RESETHAND: once, then SIG_DFL, and no second copy to kill the program.
    send(-kprof, libc::SIGUSR2);
    settle();
    expected[2] += 1;
    let c = counts(&mut stdin, &mut stdout, "SIGUSR2 to the group");
    reports += 1;
    assert_eq!(c.delivered, expected);
    assert!(c.reset);
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("kprof: results in out"), "{err}");
    let p = read_profile(&dir.join("out"));
    assert_eq!(count(&p, "r"), 10 * reports);
    assert_eq!(u(&p["dropped_records"]), 0);
    assert_eq!(anomaly(&p, "calls_after_finalize"), 0);
}

/// SIGKILL of `kprof run`: the program does not run on as an orphan; it gets
/// SIGTERM, writes its output and ends.
#[test]
fn sigkill_of_kprof_run_ends_the_program_with_its_output() {
    let dir = scratch("robust_sigkill_kprof");
    let mut child = start_ready(&mut kprof_run(&dir, &["hold", "4", "500"]));
    let kprof_pid = child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{kprof_pid}/task/{kprof_pid}/children")).unwrap();
    let program: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    let t = Instant::now();
    while Path::new(&format!("/proc/{program}/exe")).exists() {
        // A zombie reparented to init has no exe; a running orphan does.
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "program {program} still runs after kprof run was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The output is complete once profile.json exists (written in one go at the end).
    let t = Instant::now();
    while !dir.join("out/profile.json").exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let p = read_profile(&dir.join("out"));
    assert_eq!(count(&p, "r"), 2000);
}

/// SIGSEGV, SIGBUS and SIGABRT: the profile of what was recorded is written, a
/// line names the signal, and the process still dies of it.
#[test]
fn crash_signals_write_the_profile_and_name_the_signal() {
    let dir = scratch("robust_crash");
    for (how, sig, name) in [
        ("segv", libc::SIGSEGV, "SIGSEGV"),
        ("bus", libc::SIGBUS, "SIGBUS"),
        ("abort", libc::SIGABRT, "SIGABRT"),
    ] {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let o = run(&mut robust_cmd(&dir, &["crash", "100", how]));
        assert_eq!(o.status.signal(), Some(sig), "{how}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("kprof: {name} ends the program; writing what was recorded up to it\n")
        );
        let p = read_profile(&dir.join("out"));
        assert_eq!(count(&p, "r"), 100, "{how}");

        // Under kprof run: the end message names the signal and the results.
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let o = run(&mut kprof_run(&dir, &["crash", "100", how]));
        assert_eq!(o.status.code(), Some(128 + sig), "{how}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("was killed by signal {sig} ({name})")),
            "{err}"
        );
        assert!(err.contains("kprof: results in out"), "{err}");
        assert_eq!(count(&read_profile(&dir.join("out")), "r"), 100, "{how}");
    }
}

// ------------------------------------------------------------- end messages

/// The last line of `kprof run` when there is no output names the real cause.
#[test]
fn end_message_names_the_real_cause() {
    let dir = scratch("robust_end_messages");
    // Killed before anything was written (SIGKILL: no handler can run).
    let o = run(clean_cmd(&lib("kprof")).current_dir(&dir).args([
        "run",
        "-o",
        "k",
        "--",
        "sh",
        "-c",
        "kill -KILL $$",
    ]));
    assert_eq!(o.status.code(), Some(137));
    assert_eq!(
        stderr(&o).lines().last(),
        Some("kprof: no output was written to k: no kprof plugin or annotation was active; the program was killed by signal 9 (SIGKILL)")
    );
    // An annotated program killed by SIGKILL: killed, not "nothing active".
    let child = start_ready(&mut kprof_run(&dir, &["hold", "2", "10"]));
    let kprof_pid = child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{kprof_pid}/task/{kprof_pid}/children")).unwrap();
    let program: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: killing the program we started (through kprof run).
    unsafe { libc::kill(program, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        stderr(&o).lines().last(),
        Some("kprof: no output was written to out: the program was killed by signal 9 (SIGKILL) before kprof wrote anything")
    );
    // An output directory that cannot be made.
    std::fs::write(dir.join("file"), "x").unwrap();
    let o = run(clean_cmd(&lib("kprof"))
        .current_dir(&dir)
        .args(["run", "-o", "file/out", "--summary", "0", "--"])
        .arg(robust())
        .args(["race", "2", "5"]));
    assert_eq!(
        stderr(&o).lines().last(),
        Some(
            format!(
            "kprof: no output directory can be created (file is not a directory); {} was not run",
            robust().display()
        )
            .as_str()
        ),
        "{}",
        stderr(&o)
    );
    // A kprof whose plugins are not next to it: the plugin, not "no runtime".
    std::fs::create_dir_all(dir.join("lone")).unwrap();
    std::fs::copy(lib("kprof"), dir.join("lone/kprof")).unwrap();
    let o = run(clean_cmd(&dir.join("lone/kprof"))
        .current_dir(&dir)
        .args(["run", "--openmp", "-o", "q", "--", "true"]));
    assert!(o.status.success());
    assert_eq!(
        stderr(&o),
        "kprof: libkprof_ompt.so not found next to kprof or in ../lib: openmp is not measured\n\
         kprof: no output was written to q: the openmp plugin was not found next to kprof (see above)\n"
    );
    // A GCC OpenMP program (libgomp, no tool interface).
    let src = dir.join("gomp.c");
    std::fs::write(
        &src,
        "int main(void) {\n  int s = 0;\n#pragma omp parallel reduction(+ : s)\n  s += 1;\n  return s > 0 ? 0 : 1;\n}\n",
    )
    .unwrap();
    let exe = compile(&[&src], &dir.join("gomp"), &["-fopenmp"]);
    let o = run(clean_cmd(&lib("kprof"))
        .current_dir(&dir)
        .args(["run", "-o", "g", "--"])
        .arg(&exe));
    assert!(o.status.success());
    assert_eq!(
        stderr(&o).lines().last(),
        Some("kprof: no output was written to g: gomp runs on GCC's libgomp, which has no OpenMP tool interface (see above)"),
        "{}",
        stderr(&o)
    );
}

/// An OpenMP program under OMPT (clang, libomp) that forks: the child returns
/// from main at once (before: 2 x 30 s) and has its own profile of its 7
/// parallel regions; the parent's holds its 10.
#[test]
fn forked_openmp_child_exits_at_once_with_its_own_profile() {
    use kprof_tests::openmp::{bare_cmd, ompt_lib, Runtime};
    if kprof_tests::skip_unless(kprof_tests::openmp::have("clang"), "clang") {
        return;
    }
    let dir = scratch("robust_omp_fork");
    let exe = kprof_tests::compile_with(
        "clang",
        &[&test_file("harness/omp_fork.c")],
        &dir.join("omp_fork"),
        &["-fopenmp"],
    );
    let t = Instant::now();
    let o = run(bare_cmd(&exe, &dir, Runtime::Llvm14, false)
        .args(["5", "7"])
        .env("OMP_TOOL_LIBRARIES", ompt_lib())
        .env("KPROF_OUTPUT_DIR", dir.join("out-%p"))
        .env("KPROF_SUMMARY", "0"));
    assert!(t.elapsed() < Duration::from_secs(10), "{}", stderr(&o));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let child = child_pid(&o);
    let parent = read_profile(&dir.join(format!("out-{}", o_pid(&dir, child))));
    let kid = read_profile(&dir.join(format!("out-{child}")));
    let parallel = |p: &Value| -> u64 {
        nodes(p)
            .iter()
            .filter(|(_, n)| n["kind"] == "omp_parallel")
            .map(|(_, n)| u(&n["count"]))
            .sum()
    };
    let tasks = |p: &Value| -> u64 {
        nodes(p)
            .iter()
            .filter(|(_, n)| n["kind"] == "omp_implicit_task")
            .map(|(_, n)| u(&n["count"]))
            .sum()
    };
    assert_eq!(parallel(&parent), 10);
    assert_eq!(tasks(&parent), 20);
    assert_eq!(parallel(&kid), 7);
    assert_eq!(tasks(&kid), 14);
    assert_eq!(kid["plugins"], serde_json::json!(["openmp"]));
    assert_eq!(u(&kid["dropped_records"]), 0);
}
