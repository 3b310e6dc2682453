//! kprof's OTF2 traces (`KPROF_TRACE=otf2`): `otf2/traces.otf2` read back with OTF2's
//! own `otf2-print` (events) and `otf2-print -G` (definitions). `otf2-print` exits 0
//! even for broken archives, so every check also asserts that its stderr is empty and
//! that each location's event count in the definitions is the number of events
//! printed for it. Programs: the Kokkos harness (`tests/harness/kokkos_host.c`,
//! scenario `basic`, exactly known content) and, where clang and libomp are
//! installed, `tests/openmp/loops.c` under the OMPT plugin. One test hides the
//! library (`KPROF_OTF2_LIB=/nonexistent`): one clear line, every other output
//! written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::openmp::{build, have, kprof_cmd, Compiler, Runtime};
use kprof_tests::{
    assert_ok, clean_cmd, compile, lib, read_profile, run, scratch, skip_unless, test_file,
};

/// Whether OTF2's tools (and so its library, which they link) are installed.
fn otf2_available() -> bool {
    Command::new("otf2-print")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn kokkos_host() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("otf2_bin");
        compile(
            &[&test_file("harness/kokkos_host.c")],
            &dir.join("kokkos_host"),
            &["-ldl", "-lpthread"],
        )
    })
}

/// The Kokkos harness (`4 <scenario>`) with libkprof.so, writing to `dir/out`.
fn host_cmd(dir: &Path, scenario: &str, trace: &str) -> Command {
    let mut cmd = clean_cmd(kokkos_host());
    cmd.current_dir(dir)
        .args(["4", scenario])
        .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_TRACE", trace);
    cmd
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert_ok(&out);
    out
}

/// One event line of `otf2-print`.
#[derive(Debug, Clone)]
struct Ev {
    kind: String,
    location: u64,
    time: u64,
    /// The rest of the line, and the ADDITIONAL ATTRIBUTES line after it if any.
    text: String,
}

/// The archive read back: events and definitions.
struct Archive {
    events: Vec<Ev>,
    /// Definition lines of `otf2-print -G` by record name (`REGION`, `LOCATION`).
    defs: BTreeMap<String, Vec<String>>,
}

impl Archive {
    /// Names of the REGION definitions.
    fn regions(&self) -> Vec<String> {
        let mut v: Vec<String> = self.defs["REGION"]
            .iter()
            .map(|l| quoted(l, "Name: "))
            .collect();
        v.sort();
        v
    }

    /// The REGION definition line of `name`.
    fn region(&self, name: &str) -> &str {
        self.defs["REGION"]
            .iter()
            .find(|l| quoted(l, "Name: ") == name)
            .unwrap_or_else(|| panic!("no region {name:?}"))
    }

    /// The REGION definition line of `name` with `role` (a parallel region and its
    /// loop share the name of the function they are in).
    fn region_with(&self, name: &str, role: &str) -> &str {
        self.defs["REGION"]
            .iter()
            .find(|l| quoted(l, "Name: ") == name && l.contains(&format!("Role: {role},")))
            .unwrap_or_else(|| panic!("no region {name:?} with role {role}"))
    }

    /// Whether event `e` enters or leaves a region with `role`.
    fn in_role(&self, e: &Ev, role: &str) -> bool {
        // `Region: "name" <ref>`, perhaps followed by the attributes line.
        let entered = after(&e.text, "Region: ")
            .split("\" <")
            .nth(1)
            .and_then(|t| t.split('>').next())
            .unwrap_or_default()
            .to_string();
        self.defs["REGION"].iter().any(|l| {
            l.split_whitespace().nth(1) == Some(entered.as_str())
                && l.contains(&format!("Role: {role},"))
        })
    }

    /// (location, event kind) -> count.
    fn counts(&self) -> BTreeMap<(u64, String), usize> {
        let mut out = BTreeMap::new();
        for e in &self.events {
            *out.entry((e.location, e.kind.clone())).or_insert(0) += 1;
        }
        out
    }

    /// ENTER count per region name on `location`.
    fn enters(&self, location: u64) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for e in self
            .events
            .iter()
            .filter(|e| e.location == location && e.kind == "ENTER")
        {
            *out.entry(quoted(&e.text, "Region: ")).or_insert(0) += 1;
        }
        out
    }

    /// Location ref -> (name, type, number of events) from the definitions.
    fn locations(&self) -> BTreeMap<u64, (String, String, u64)> {
        self.defs["LOCATION"]
            .iter()
            .map(|l| {
                let id = l.split_whitespace().nth(1).unwrap().parse().unwrap();
                let ty = after(l, "Type: ").split(',').next().unwrap().to_string();
                let n = after(l, "# Events: ")
                    .split(',')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                (id, (quoted(l, "Name: "), ty, n))
            })
            .collect()
    }

    /// Values of the metric named `name`, in order.
    fn metric(&self, name: &str) -> Vec<u64> {
        let tag = format!("(\"{name}\" <");
        self.events
            .iter()
            .filter(|e| e.kind == "METRIC" && e.text.contains(&tag))
            .map(|e| {
                let v = e.text.rsplit("; ").next().unwrap();
                v.trim_end_matches(')').trim().parse().unwrap()
            })
            .collect()
    }

    /// The checks every archive passes: each location's event count in the
    /// definitions is the number of its events, every event location is defined,
    /// timestamps never go backwards on a location, ENTER and LEAVE balance.
    fn assert_consistent(&self) {
        let locs = self.locations();
        let mut per: BTreeMap<u64, u64> = BTreeMap::new();
        let mut last: BTreeMap<u64, u64> = BTreeMap::new();
        let mut depth: BTreeMap<u64, i64> = BTreeMap::new();
        for e in &self.events {
            *per.entry(e.location).or_insert(0) += 1;
            let l = last.entry(e.location).or_insert(0);
            assert!(
                e.time >= *l,
                "time goes backwards on location {}: {e:?}",
                e.location
            );
            *l = e.time;
            let d = depth.entry(e.location).or_insert(0);
            match e.kind.as_str() {
                "ENTER" => *d += 1,
                "LEAVE" => {
                    *d -= 1;
                    assert!(*d >= 0, "LEAVE without ENTER: {e:?}");
                }
                _ => {}
            }
        }
        for (id, (name, _, n)) in &locs {
            assert_eq!(
                per.get(id).copied().unwrap_or(0),
                *n,
                "location {id} ({name}): events in the definitions vs. events printed"
            );
        }
        for id in per.keys() {
            assert!(locs.contains_key(id), "events on undefined location {id}");
        }
        assert!(depth.values().all(|&d| d == 0), "unbalanced: {depth:?}");
    }
}

/// The concurrency metrics of a one-thread run: after the changes at each time,
/// the thread is in exactly one category; and each category's values are the
/// JSON trace's counter (the same points, only changes written).
fn check_concurrency(a: &Archive, out: &Path, categories: &[String]) {
    let loc = *a
        .locations()
        .iter()
        .find(|(_, l)| l.0 == "concurrency")
        .unwrap()
        .0;
    let mut now: BTreeMap<String, u64> = BTreeMap::new();
    let mut at = None;
    let mut groups = 0;
    for e in a.events.iter().filter(|e| e.location == loc) {
        assert_eq!(e.kind, "METRIC", "{e:?}");
        if at.is_some_and(|t| t != e.time) {
            assert_eq!(now.values().sum::<u64>(), 1, "at {at:?}: {now:?}");
            groups += 1;
        }
        at = Some(e.time);
        let name = quoted(&e.text, "(");
        let v = e.text.rsplit("; ").next().unwrap();
        now.insert(name, v.trim_end_matches(')').trim().parse().unwrap());
    }
    assert_eq!(now.values().sum::<u64>(), 1, "{now:?}");
    assert!(groups > 2, "{groups} points");
    let json = kprof_tests::trace_check::read_json(out);
    for c in categories {
        let mut changes = Vec::new();
        let mut last = 0.0;
        for &(_, v) in &json.counters[c] {
            if v != last {
                changes.push(v as u64);
                last = v;
            }
        }
        assert_eq!(a.metric(c), changes, "{c}");
    }
}

/// The text after `key` up to the line's end.
fn after<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_once(key)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("no {key:?} in {line:?}"))
}

/// The quoted string after `key` (`Name: "solve" <3>` -> `solve`).
fn quoted(line: &str, key: &str) -> String {
    let r = after(line, key);
    let r = r
        .strip_prefix('"')
        .unwrap_or_else(|| panic!("no quote in {line:?}"));
    r[..r
        .find("\" <")
        .unwrap_or_else(|| panic!("unterminated in {line:?}"))]
        .to_string()
}

/// Runs `otf2-print args anchor`, asserting exit 0 and an empty stderr.
fn otf2_print(anchor: &Path, args: &[&str]) -> String {
    let out = run(Command::new("otf2-print").args(args).arg(anchor));
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.trim().is_empty(),
        "otf2-print {args:?} complained:\n{err}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Reads `out/otf2/traces.otf2` back with otf2-print.
fn read_archive(out: &Path) -> Archive {
    let anchor = out.join("otf2/traces.otf2");
    assert!(anchor.is_file(), "no {}", anchor.display());
    let mut events: Vec<Ev> = Vec::new();
    for line in otf2_print(&anchor, &[]).lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with(' ') {
            if let Some(e) = events.last_mut() {
                e.text.push('\n');
                e.text.push_str(line.trim());
            }
            continue;
        }
        let (Some(kind), Some(loc), Some(time)) = (t.first(), t.get(1), t.get(2)) else {
            continue;
        };
        let (Ok(location), Ok(time)) = (loc.parse(), time.parse()) else {
            continue;
        };
        if !kind.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            continue;
        }
        let text = t[3..].join(" ");
        events.push(Ev {
            kind: kind.to_string(),
            location,
            time,
            text,
        });
    }
    let mut defs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in otf2_print(&anchor, &["-G"]).lines() {
        let Some(kind) = line.split_whitespace().next() else {
            continue;
        };
        if kind.len() > 2 && kind.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            defs.entry(kind.to_string())
                .or_default()
                .push(line.to_string());
        }
    }
    let a = Archive { events, defs };
    a.assert_consistent();
    a
}

// ------------------------------------------------------------------- Kokkos

const BASIC_REGIONS: [(&str, usize); 9] = [
    ("solve", 1),
    ("iteration", 3),
    ("axpy", 30),
    ("dot", 3),
    ("prefix", 3),
    ("sync", 1),
    ("x <- d_x", 1),
    ("d_x <- x", 2),
    ("assemble", 4),
];

#[test]
fn kokkos_basic() {
    if skip_unless(otf2_available(), "OTF2 (otf2-tools)") {
        return;
    }
    let dir = scratch("otf2_basic");
    let out = run_ok(&mut host_cmd(&dir, "basic", "otf2,json"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("otf2/traces.otf2"), "{stderr}");
    let a = read_archive(&dir.join("out"));

    // Exactly the regions of the scenario, with their counts, on one thread.
    let mut want: Vec<String> = BASIC_REGIONS.iter().map(|r| r.0.to_string()).collect();
    want.sort();
    assert_eq!(a.regions(), want);
    let locs = a.locations();
    let threads: Vec<u64> = locs
        .iter()
        .filter(|(_, l)| l.1 == "CPU_THREAD")
        .map(|(&id, _)| id)
        .collect();
    assert_eq!(threads.len(), 1, "one thread location: {locs:?}");
    let main = threads[0];
    assert_eq!(locs[&main].0, format!("kokkos_host ({main})"));
    let want: BTreeMap<String, usize> = BASIC_REGIONS
        .iter()
        .map(|&(n, c)| (n.to_string(), c))
        .collect();
    assert_eq!(a.enters(main), want, "ENTERs per region");
    let counts = a.counts();
    assert_eq!(counts[&(main, "ENTER".to_string())], 48);
    assert_eq!(counts[&(main, "LEAVE".to_string())], 48);

    // Roles and paradigms; attributes.
    assert!(a
        .region("axpy")
        .contains("Role: FUNCTION, Paradigm: KOKKOS"));
    assert!(a.region("solve").contains("Role: CODE, Paradigm: KOKKOS"));
    assert!(a
        .region("x <- d_x")
        .contains("Role: DATA_TRANSFER, Paradigm: KOKKOS"));
    let copies: Vec<&Ev> = a
        .events
        .iter()
        .filter(|e| e.kind == "ENTER" && e.text.contains("\"x <- d_x\""))
        .collect();
    assert_eq!(copies.len(), 1);
    for attr in [
        "(\"bytes\" <",
        "UINT64; 8000)",
        "(\"src_space\" <",
        "\"Cuda\"",
        "(\"dst_space\" <",
        "\"Host\"",
    ] {
        assert!(copies[0].text.contains(attr), "{attr}: {:?}", copies[0]);
    }
    let kernel = a
        .events
        .iter()
        .find(|e| e.kind == "ENTER" && e.text.contains("\"axpy\""))
        .unwrap();
    assert!(
        kernel.text.contains("(\"device\" <") && kernel.text.contains("\"OpenMP 0 (instance 1)\""),
        "{kernel:?}"
    );

    // Memory per space: the running current bytes after each allocation and free,
    // on the metric location; the last value is the profile's.
    assert_eq!(
        a.metric("memory Host"),
        [8000, 16000, 20096, 120096, 20096, 12096, 4096]
    );
    assert_eq!(a.metric("memory Cuda"), [8000, 0]);
    let metric_locs: Vec<&str> = locs
        .values()
        .filter(|l| l.1 == "METRIC")
        .map(|l| l.0.as_str())
        .collect();
    assert_eq!(metric_locs, ["memory", "concurrency"], "{locs:?}");
    let memory = locs.values().find(|l| l.0 == "memory").unwrap();
    assert_eq!(memory.2, 9);
    let profile = read_profile(&dir.join("out"));
    let host = profile["memory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["space"] == "Host")
        .unwrap();
    assert_eq!(host["current_bytes"], 4096);
    // Two memory metrics, and one per category of work the thread was in.
    let members = &a.defs["METRIC_MEMBER"];
    assert!(members.iter().all(|l| l.contains("Mode: ABSOLUTE_POINT")));
    let memory_members = members
        .iter()
        .filter(|l| quoted(l, "Name: ").starts_with("memory "))
        .count();
    assert_eq!(memory_members, 2);
    assert!(members
        .iter()
        .filter(|l| quoted(l, "Name: ").starts_with("memory "))
        .all(|l| l.contains("Unit: \"bytes\"")));
    let mut categories: Vec<String> = members
        .iter()
        .filter(|l| l.contains("Unit: \"threads\""))
        .map(|l| quoted(l, "Name: "))
        .collect();
    categories.sort();
    // A fence or a copy shorter than the coalescing (1 us) may not show.
    for c in &categories {
        assert!(
            ["data", "idle", "kernel", "region", "wait"].contains(&&c["threads ".len()..]),
            "{categories:?}"
        );
    }
    for c in ["threads idle", "threads kernel", "threads region"] {
        assert!(categories.iter().any(|x| x == c), "{c}: {categories:?}");
    }
    assert_eq!(a.defs["METRIC_CLASS"].len(), 2 + categories.len());
    check_concurrency(&a, &dir.join("out"), &categories);

    // Clock and system tree.
    let clock = &a.defs["CLOCK_PROPERTIES"][0];
    assert!(clock.contains("Ticks per Seconds: 1000000000"), "{clock}");
    let offset: u64 = after(clock, "Global Offset: ")
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(a.events.iter().all(|e| e.time >= offset));
    assert_eq!(a.defs["SYSTEM_TREE_NODE"].len(), 1);
    assert!(a.defs["SYSTEM_TREE_NODE"][0].contains("Class: \"machine\""));
    assert_eq!(a.defs["LOCATION_GROUP"].len(), 1);
    assert!(a.defs["LOCATION_GROUP"][0].contains("Type: PROCESS"));

    // The JSON trace of the same run is unaffected.
    assert!(dir.join("out/trace.json").is_file());
}

// ------------------------------------------------------------------- OpenMP

const LOOP_REGIONS: [(&str, &str); 4] = [
    ("loop_static (loops.c:21)", "loop_static (loops.c:21)"),
    ("loop_dynamic (loops.c:29)", "loop_dynamic (loops.c:30)"),
    ("loop_guided (loops.c:37)", "loop_guided (loops.c:38)"),
    ("reduce_sum (loops.c:46)", "reduce_sum (loops.c:46)"),
];

#[test]
fn openmp_loops() {
    if skip_unless(otf2_available(), "OTF2 (otf2-tools)")
        || skip_unless(have("clang"), "clang (OpenMP tests)")
    {
        return;
    }
    let exe = build("loops", Compiler::Clang);
    let dir = scratch("otf2_loops");
    let mut cmd = kprof_cmd(&exe, &dir, Runtime::Llvm14, false);
    cmd.env("KPROF_TRACE", "otf2");
    let out = run_ok(&mut cmd);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "loops: total = 752250.0\n"
    );
    let a = read_archive(&dir.join("out"));

    // No separate wait inside implicit barriers: the barrier slice is the wait.
    let mut want: Vec<String> = vec!["implicit task".into(), "implicit barrier".into()];
    for (r, l) in LOOP_REGIONS {
        want.push(r.into());
        want.push(l.into());
    }
    want.sort();
    assert_eq!(a.regions(), want);

    let locs = a.locations();
    let by_name = |prefix: &str| -> u64 {
        *locs
            .iter()
            .find(|(_, l)| l.0.starts_with(prefix))
            .unwrap_or_else(|| panic!("no location {prefix}: {locs:?}"))
            .0
    };
    let (initial, worker) = (
        by_name("OpenMP initial thread"),
        by_name("OpenMP worker thread"),
    );
    let kinds: Vec<&str> = locs.values().map(|l| l.1.as_str()).collect();
    assert_eq!(kinds, ["CPU_THREAD", "CPU_THREAD", "METRIC"], "{locs:?}");
    assert_eq!(locs[&(1 << 42)].0, "concurrency");
    // Per region: parallel region, implicit task, loop, barrier; the worker without
    // the parallel region. 4 regions x 3 repetitions.
    let mut want_initial = BTreeMap::new();
    let mut want_worker = BTreeMap::new();
    for (r, l) in LOOP_REGIONS {
        // A loop is named after its function as its region is: the same name
        // twice on the initial thread when on the pragma's line.
        *want_initial.entry(r.to_string()).or_insert(0) += 3;
        *want_initial.entry(l.to_string()).or_insert(0) += 3;
        want_worker.insert(l.to_string(), 3);
    }
    for common in ["implicit task", "implicit barrier"] {
        want_initial.insert(common.to_string(), 12);
        want_worker.insert(common.to_string(), 12);
    }
    assert_eq!(a.enters(initial), want_initial, "initial thread");
    assert_eq!(a.enters(worker), want_worker, "worker thread");
    let counts = a.counts();
    let n = |loc: u64, k: &str| counts.get(&(loc, k.to_string())).copied().unwrap_or(0);
    assert_eq!((n(initial, "ENTER"), n(initial, "LEAVE")), (48, 48));
    assert_eq!((n(worker, "ENTER"), n(worker, "LEAVE")), (36, 36));
    // Parallel regions fork and join on the encountering thread only.
    assert_eq!(
        (n(initial, "THREAD_FORK"), n(initial, "THREAD_JOIN")),
        (12, 12)
    );
    assert_eq!((n(worker, "THREAD_FORK"), n(worker, "THREAD_JOIN")), (0, 0));
    let initial_events: Vec<&Ev> = a.events.iter().filter(|e| e.location == initial).collect();
    let (mut forks, mut joins) = (0, 0);
    for w in initial_events.windows(2) {
        if w[1].kind == "ENTER" && a.in_role(w[1], "PARALLEL") {
            assert_eq!(w[0].kind, "THREAD_FORK", "fork before {:?}", w[1]);
            assert!(w[0].text.contains("Model: OPENMP"));
            // The team the region asked for (OMP_NUM_THREADS=2).
            assert!(w[0].text.contains("# Requested Threads: 2"), "{:?}", w[0]);
            forks += 1;
        }
        if w[0].kind == "LEAVE" && a.in_role(w[0], "PARALLEL") {
            assert_eq!(w[1].kind, "THREAD_JOIN", "join after {:?}", w[0]);
            assert!(
                w[0].text.contains("(\"requested_team_size\" <")
                    && w[0].text.contains("UINT64; 2)"),
                "{:?}",
                w[0]
            );
            joins += 1;
        }
    }
    assert_eq!((forks, joins), (12, 12));
    let static_region = a.region_with("loop_static (loops.c:21)", "PARALLEL");
    assert!(
        static_region.contains("Role: PARALLEL, Paradigm: OPENMP"),
        "{static_region}"
    );
    assert!(static_region.contains("File: \"loops.c\"") && static_region.contains("Begin: 21"));
    assert!(a
        .region_with("loop_static (loops.c:21)", "LOOP")
        .contains("Descr.: \"omp_loop\""));
    assert!(a
        .region("implicit barrier")
        .contains("Role: BARRIER, Paradigm: OPENMP"));
    assert!(a
        .region("implicit task")
        .contains("Role: TASK, Paradigm: OPENMP"));
}

// ---------------------------------------------------------- no OTF2 library

#[test]
fn missing_library_one_line_and_other_outputs() {
    let dir = scratch("otf2_missing");
    let mut cmd = host_cmd(&dir, "basic", "otf2,json");
    cmd.env("KPROF_OTF2_LIB", "/nonexistent/libotf2.so");
    let out = run_ok(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("OTF2")).collect();
    assert_eq!(lines.len(), 1, "one line about OTF2:\n{stderr}");
    let line = lines[0];
    assert!(line.starts_with("kprof: "), "{line}");
    for part in [
        "KPROF_OTF2_LIB=/nonexistent/libotf2.so",
        "apt install libopen-trace-format2-dev",
        "no otf2/traces.otf2 trace",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }
    let out_dir = dir.join("out");
    assert!(!out_dir.join("otf2").exists(), "no otf2 directory");
    // Everything else is written: the profile (with its content) and the JSON trace.
    let profile = read_profile(&out_dir);
    assert!(profile["tree"].as_array().is_some_and(|t| !t.is_empty()));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("trace.json")).unwrap())
            .expect("trace.json is JSON");
    assert!(json.as_array().is_some_and(|a| a.len() > 48));
}

// ---------------------------------------------------------------- GPU devices

/// Device activities (`tests/harness/device_activity.c`, through the core's
/// plugin table as a GPU plugin delivers them) on one GPU location per device
/// stream, each an Enter and a Leave at the activity's own times, the launches'
/// API calls on the program's thread.
#[test]
fn device_activities_on_stream_locations() {
    if skip_unless(otf2_available(), "otf2-print") {
        return;
    }
    static HARNESS: OnceLock<PathBuf> = OnceLock::new();
    let exe = kprof_tests::core_harness(&HARNESS, "device_activity");
    let out = scratch("otf2_device").join("out");
    let o = run(clean_cmd(&exe)
        .env("KPROF_OUTPUT_DIR", &out)
        .env("KPROF_TRACE", "otf2"));
    assert_ok(&o);
    let a = read_archive(&out);
    let locs = a.locations();
    let named = |name: &str| -> u64 {
        let found: Vec<u64> = locs
            .iter()
            .filter(|(_, (n, _, _))| n == name)
            .map(|(&id, _)| id)
            .collect();
        assert_eq!(found.len(), 1, "location {name:?} in {locs:?}");
        found[0]
    };
    let (s7, s9) = (named("CUDA:0 stream 7"), named("CUDA:0 stream 9"));
    for s in [s7, s9] {
        assert_ne!(locs[&s].1, "CPU_THREAD", "{locs:?}");
    }
    let want7: BTreeMap<String, usize> =
        [("saxpy", 1), ("memcpy HtoD", 1), ("orphan", 1), ("bad", 1)]
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
    assert_eq!(a.enters(s7), want7);
    assert_eq!(
        a.enters(s9),
        BTreeMap::from([("foo<int>(int*)".to_string(), 2)])
    );
    // Each activity's Leave is its Enter plus its duration, exactly.
    let span = |loc: u64, name: &str| -> Vec<u64> {
        let evs: Vec<&Ev> = a
            .events
            .iter()
            .filter(|e| e.location == loc && quoted(&e.text, "Region: ") == name)
            .collect();
        evs.chunks(2)
            .map(|p| {
                assert_eq!((p[0].kind.as_str(), p[1].kind.as_str()), ("ENTER", "LEAVE"));
                p[1].time - p[0].time
            })
            .collect()
    };
    assert_eq!(span(s7, "saxpy"), [250_000]);
    assert_eq!(span(s7, "memcpy HtoD"), [100_000]);
    assert_eq!(span(s9, "foo<int>(int*)"), [40_000, 60_000]);
    // The copy carries its bytes.
    let copy = a
        .events
        .iter()
        .find(|e| e.location == s7 && e.kind == "ENTER" && e.text.contains("memcpy HtoD"))
        .expect("the copy's enter");
    assert!(copy.text.contains("1048576"), "{}", copy.text);
    // The API calls are on the program's thread.
    let thread = locs
        .iter()
        .find(|(_, (n, _, _))| n.starts_with("device_activity"))
        .map(|(&id, _)| id)
        .expect("the program's thread");
    assert_eq!(a.enters(thread)["cudaLaunchKernel"], 3);
}
