//! The environment-module files `make install` writes
//! (`share/modulefiles/kprof/<version>.lua` for Lmod, `<version>` in Tcl for
//! Environment Modules), loaded by the real tools in a clean shell: with only
//! `module use <prefix>/share/modulefiles; module load kprof`, `kprof` is the
//! installed one, its `--version` names every plugin of the model table in the
//! prefix, `kprof run` hands every plugin from the prefix to the program, the
//! paths point into the prefix, and a CMake project finds kprof
//! (`find_package(kprof REQUIRED)`), links `kprof::kprof` and runs under kprof.
//!
//! Lmod is Debian's `lmod`; Environment Modules, whose package conflicts with
//! it, is unpacked by tests/setup.sh into the deps directory (or installed).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kprof_tables::models::MODELS;
use kprof_tests::openmp::{deps_dir, have};
use kprof_tests::{
    make_install, node, nodes, read_profile, run, scratch, skip_unless, test_file, u,
};

/// The version `make install` names the module files by.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `make install PREFIX=<scratch>` once per test process (canonical: the
/// paths kprof prints are).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let root = scratch("modules_prefix");
        let p = std::fs::canonicalize(&root).unwrap().join("opt/kprof");
        make_install(&p);
        p
    })
}

/// Lmod's shell setup (Debian's lmod package).
const LMOD_INIT: &str = "/usr/share/lmod/lmod/init/bash";

/// The Tcl shell Environment Modules' `module` function runs (Debian's path,
/// as its modulecmd.tcl writes it).
const TCLSH: &str = "/usr/bin/tclsh8.6";

/// Environment Modules' modulecmd.tcl: unpacked by tests/setup.sh, or from
/// the installed package.
fn modulecmd() -> Option<PathBuf> {
    [
        deps_dir().join("environment-modules/root/usr/lib/modulecmd.tcl"),
        PathBuf::from("/usr/lib/modulecmd.tcl"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// What the shell wrote, one file each.
struct Loaded {
    dir: PathBuf,
}

impl Loaded {
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_else(|e| panic!("{}/{name}: {e}", self.dir.display()))
    }

    /// The value of `var` in the shell's environment after `module load`.
    fn var(&self, var: &str) -> String {
        let env = self.read("env.txt");
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{var}=")))
            .unwrap_or_else(|| panic!("{var} is not set after module load:\n{env}"))
            .to_string()
    }
}

/// Runs, in a shell with an empty environment (PATH=/usr/bin:/bin), `init`
/// (the tool's setup), `module use` and `module load kprof`, then kprof, the
/// CMake project and pkg-config, each writing into a file of a scratch
/// directory.
fn load_and_use(tool: &str, init: &str) -> Loaded {
    let p = prefix();
    let dir = scratch(&format!("modules_{tool}"));
    let script = format!(
        r#"set -e
{init}
module use '{modulefiles}'
module load kprof
module list > list.txt 2>&1
module show kprof > show.txt 2>&1
env > env.txt
command -v kprof > which.txt
kprof --version > version.txt
kprof run -v --summary 0 {flags} -- true > run-out.txt 2> run.txt
cmake -S '{project}' -B build > cmake.txt 2>&1
cmake --build build >> cmake.txt 2>&1
kprof run -o annotate-out --summary 0 -- ./build/annotate 5 > annotate.txt 2>&1
pkg-config --cflags --libs kprof > pkg-config.txt
"#,
        modulefiles = p.join("share/modulefiles").display(),
        flags = MODELS
            .iter()
            .map(|m| format!("--{}", m.name))
            .collect::<Vec<_>>()
            .join(" "),
        project = test_file("modules").display(),
    );
    let mut cmd = Command::new("/bin/bash");
    cmd.args(["--noprofile", "--norc", "-c", &script])
        .current_dir(&dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &dir)
        .env("CC", "gcc");
    let o = run(&mut cmd);
    assert!(
        o.status.success(),
        "{tool}: the shell failed: {}\n{}\nfiles in {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        dir.display()
    );
    Loaded { dir }
}

/// What both tools must give: the module's paths, the installed kprof with
/// every plugin, and a CMake project built against it.
fn check(tool: &str, loaded: &Loaded) {
    let p = prefix();
    let show = |path: &str| p.join(path).display().to_string();
    assert!(
        loaded
            .read("list.txt")
            .contains(&format!("kprof/{VERSION}")),
        "{tool}: {}",
        loaded.read("list.txt")
    );
    assert_eq!(loaded.read("which.txt").trim(), show("bin/kprof"), "{tool}");
    // Each variable starts with the prefix's directory (prepended).
    for (var, path) in [
        ("PATH", "bin"),
        ("LD_LIBRARY_PATH", "lib"),
        ("CMAKE_PREFIX_PATH", ""),
        ("PKG_CONFIG_PATH", "lib/pkgconfig"),
        ("MANPATH", "share/man"),
    ] {
        let value = loaded.var(var);
        let first = value.split(':').next().unwrap_or_default();
        let want = if path.is_empty() {
            p.display().to_string()
        } else {
            show(path)
        };
        assert_eq!(first, want, "{tool}: {var}={value}");
    }
    // MANPATH was unset: an empty element keeps man's own search path.
    let manpath = loaded.var("MANPATH");
    assert!(manpath.ends_with(':'), "{tool}: MANPATH={manpath}");
    // --version: this version, and every plugin of the model table in the
    // prefix's lib/.
    let version = loaded.read("version.txt");
    let lines: Vec<&str> = version.lines().collect();
    assert!(
        lines[0].starts_with(&format!("kprof {VERSION} (commit ")),
        "{tool}: {version}"
    );
    let names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
    assert_eq!(
        lines[1],
        format!("plugins: {} ({})", names.join(", "), show("lib")),
        "{tool}: {version}"
    );
    // kprof run hands each plugin from the prefix to the program.
    let run_err = loaded.read("run.txt");
    for m in &MODELS {
        let file = show(&format!("lib/{}", m.library));
        assert!(
            run_err.contains(&file),
            "{tool}: {file} not in kprof run -v's lines:\n{run_err}"
        );
    }
    // The CMake project found this kprof through CMAKE_PREFIX_PATH alone.
    let cmake = loaded.read("cmake.txt");
    assert!(
        cmake.contains(&format!(
            "-- kprof {VERSION} from {}",
            show("lib/cmake/kprof")
        )),
        "{tool}: {cmake}"
    );
    let annotate = loaded.read("annotate.txt");
    assert!(
        annotate.contains("kprof: measuring annotations (detected)"),
        "{tool}: {annotate}"
    );
    let prof = read_profile(&loaded.dir.join("annotate-out"));
    assert_eq!(u(&node(&nodes(&prof), &["solve", "step"])["count"]), 5);
    assert_eq!(prof["metadata"]["example"], "annotate.c");
    let pc = loaded.read("pkg-config.txt");
    assert_eq!(
        pc.split_whitespace().collect::<Vec<_>>(),
        [
            format!("-I{}", show("include/kprof")),
            format!("-L{}", show("lib")),
            format!("-Wl,-rpath,{}", show("lib")),
            "-lkprof_core".to_string(),
        ],
        "{tool}"
    );
}

fn prerequisites(tool_found: bool, tool: &str) -> bool {
    skip_unless(tool_found, tool)
        || skip_unless(have("cmake") && have("gcc"), "cmake and gcc")
        || skip_unless(have("pkg-config"), "pkg-config")
}

#[test]
fn lmod_loads_the_lua_module() {
    if prerequisites(Path::new(LMOD_INIT).is_file(), "Lmod (apt install lmod)") {
        return;
    }
    let loaded = load_and_use("lmod", &format!("source {LMOD_INIT}"));
    // Lmod reads the Lua file, of the two beside each other.
    let show = loaded.read("show.txt");
    assert!(
        show.contains(&format!("share/modulefiles/kprof/{VERSION}.lua")),
        "{show}"
    );
    check("Lmod", &loaded);
}

#[test]
fn environment_modules_loads_the_tcl_module() {
    let cmd = modulecmd();
    let found = cmd.is_some() && Path::new(TCLSH).is_file();
    if prerequisites(found, "Environment Modules (tests/setup.sh unpacks it)") {
        return;
    }
    let cmd = cmd.unwrap();
    // autoinit: the `module` function, calling this modulecmd.tcl.
    let init = format!("eval \"$({TCLSH} '{}' bash autoinit)\"", cmd.display());
    let loaded = load_and_use("environment-modules", &init);
    let show = loaded.read("show.txt");
    let file = prefix().join(format!("share/modulefiles/kprof/{VERSION}"));
    assert!(show.contains(&format!("{}:", file.display())), "{show}");
    check("Environment Modules", &loaded);
}

/// The two files, filled in: the prefix and the version, no placeholder left,
/// each tool's header and help.
#[test]
fn module_files_are_filled_in() {
    let dir = prefix().join("share/modulefiles/kprof");
    let lua = std::fs::read_to_string(dir.join(format!("{VERSION}.lua"))).unwrap();
    let tcl = std::fs::read_to_string(dir.join(VERSION)).unwrap();
    assert!(tcl.starts_with("#%Module1.0\n"), "{tcl}");
    for (text, help, whatis) in [
        (&lua, "help([[", "whatis(\"Version: "),
        (&tcl, "proc ModulesHelp", "module-whatis \"Version: "),
    ] {
        assert!(!text.contains('@'), "a placeholder is left:\n{text}");
        assert!(text.contains(help), "{text}");
        assert!(text.contains(&format!("{whatis}{VERSION}\"")), "{text}");
        assert!(
            text.contains(&format!("\"{}\"", prefix().display())),
            "{text}"
        );
    }
}
