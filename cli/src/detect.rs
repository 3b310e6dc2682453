//! Which programming models a program uses, from its ELF file: the libraries it
//! needs (DT_NEEDED, followed through the libraries it finds, a few levels deep),
//! and Kokkos or RAJA built statically into it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{Dyn, FileHeader, SectionHeader, Sym};
use object::Endianness;

/// What was found, with the reasons (for `--verbose` and the start line).
#[derive(Debug, Default, Clone)]
pub struct Models {
    /// Kokkos (shared libkokkoscore or static).
    pub kokkos: bool,
    /// An OpenMP runtime with a tool interface (LLVM's libomp, Intel's libiomp5, or
    /// GCC's libgomp name resolving to libomp).
    pub openmp: bool,
    /// GCC's own libgomp, which has no OpenMP tool interface: its OpenMP constructs
    /// cannot be measured.
    pub gomp_only: bool,
    /// Kokkos reads `KOKKOS_TOOLS_LIBS` (3.5 and later; the string is in its data).
    /// Kokkos 3.4 reads only `KOKKOS_PROFILE_LIBRARY`, which later versions still
    /// read but warn about.
    pub kokkos_tools_libs: bool,
    /// An OpenACC runtime.
    pub openacc: bool,
    /// RAJA with its runtime plugin loader (shared libRAJA, or built in: the
    /// loader's symbols or, stripped, the string `RAJA_PLUGINS`).
    pub raja: bool,
    /// RAJA built in without its runtime plugin loader (RAJA_PLUGINS would be
    /// ignored): only a hint is given.
    pub raja_without_loader: bool,
    /// libkprof_core.so is linked (annotation API).
    pub annotations: bool,
    /// The CUDA runtime or driver: a shared libcudart/libcuda is needed, or the
    /// runtime is built in (nvcc's default static libcudart, which loads the driver
    /// by the name `libcuda.so.1`).
    pub cuda: bool,
    /// The HIP runtime (AMD GPUs): libamdhip64 is needed.
    pub hip: bool,
    /// An MPI library: libmpi (Open MPI, and MPICH's newer name) or libmpich.
    pub mpi: bool,
    /// An FA-BSP (HClib-Actor / Conveyors) program: bale's Conveyors built in
    /// (`convey_begin` in its symbols) or OpenSHMEM (liboshmem) linked.
    pub actor: bool,
    /// Conveyors is built in but its entries are not wrapped (the program was
    /// not linked with kprof's `__wrap_convey_*`) and cannot be hooked at load
    /// time (not x86-64): the logical layer is not seen.
    pub conveyors_unwrapped: bool,
    /// The program has no symbol table (stripped): Conveyors' entries, if it
    /// holds them, can be neither found nor hooked.
    pub stripped: bool,
    /// Why, one entry per finding.
    pub reasons: Vec<String>,
}

/// What one ELF file says.
#[derive(Default)]
struct ElfInfo {
    needed: Vec<String>,
    runpath: Vec<String>,
    rpath: Vec<String>,
    static_kokkos: bool,
    /// The string `KOKKOS_TOOLS_LIBS` is in its data (Kokkos >= 3.5).
    tools_libs: bool,
    /// How RAJA's runtime plugin loader was found in this file, if it was.
    static_raja: Option<&'static str>,
    /// RAJA symbols are defined in this file.
    raja_symbols: bool,
    goacc: bool,
    /// The static CUDA runtime is built in (it names `libcuda.so.1` to load it).
    static_cudart: bool,
    /// bale's Conveyors is built in (`convey_begin` is defined).
    conveyors: bool,
    /// kprof's link-time wrapper of `convey_push` is built in.
    conveyors_wrapped: bool,
    /// It has a symbol table (`.symtab`).
    symtab: bool,
}

/// RAJA's runtime plugin loader (`RAJA::util::RuntimePluginLoader`), mangled.
const RAJA_LOADER: &[u8] = b"_ZN4RAJA4util19RuntimePluginLoader";

fn parse<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> object::read::Result<ElfInfo> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, data)?;
    let mut info = ElfInfo::default();
    if let Some((dyns, link)) = sections.dynamic(endian, data)? {
        let strings = sections.strings(endian, data, link)?;
        for d in dyns {
            let tag = d.tag32(endian);
            let Ok(s) = d.string(endian, strings) else {
                continue;
            };
            let s = String::from_utf8_lossy(s).into_owned();
            match tag {
                Some(elf::DT_NEEDED) => info.needed.push(s),
                Some(elf::DT_RUNPATH) => info.runpath.extend(s.split(':').map(String::from)),
                Some(elf::DT_RPATH) => info.rpath.extend(s.split(':').map(String::from)),
                _ => {}
            }
        }
    }
    for kind in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
        let symbols = sections.symbols(endian, data, kind)?;
        if kind == elf::SHT_SYMTAB && !symbols.is_empty() {
            info.symtab = true;
        }
        for sym in symbols.iter() {
            let Ok(name) = sym.name(endian, symbols.strings()) else {
                continue;
            };
            let defined = sym.st_shndx(endian) != elf::SHN_UNDEF;
            if defined
                && (name.starts_with(b"_ZN6Kokkos10initialize")
                    || name.starts_with(b"_ZN6Kokkos5Tools")
                    || name.starts_with(b"_ZN6Kokkos9Profiling"))
            {
                info.static_kokkos = true;
            }
            if defined && (name == b"convey_begin" || name == b"__real_convey_begin") {
                info.conveyors = true;
            }
            if defined && name == b"__wrap_convey_push" {
                info.conveyors_wrapped = true;
            }
            if name.starts_with(b"GOACC_") {
                info.goacc = true;
            }
            if defined && name.starts_with(b"_ZN4RAJA") {
                info.raja_symbols = true;
                if name.starts_with(RAJA_LOADER) {
                    info.static_raja = Some("RAJA's runtime plugin loader symbols");
                }
            }
        }
    }
    // The variables Kokkos reads to load its tools: in a stripped program the sign
    // of a static Kokkos, and `KOKKOS_TOOLS_LIBS` tells a Kokkos >= 3.5; RAJA's
    // runtime plugin loader reads `RAJA_PLUGINS`.
    {
        for section in sections.iter() {
            if section.sh_type(endian) != elf::SHT_PROGBITS {
                continue;
            }
            if let Ok(bytes) = section.data(endian, data) {
                if !info.static_kokkos && contains(bytes, b"KOKKOS_PROFILE_LIBRARY") {
                    info.static_kokkos = true;
                }
                if !info.tools_libs && contains(bytes, b"KOKKOS_TOOLS_LIBS") {
                    info.tools_libs = true;
                }
                if info.static_raja.is_none() && contains(bytes, b"RAJA_PLUGINS") {
                    info.static_raja = Some("the string RAJA_PLUGINS");
                }
                // The link-time wrappers look the plugin up by this name: they
                // are built in even when the symbols are stripped.
                if !info.conveyors_wrapped && contains(bytes, b"kprof_actor_wrap_hooks_v1\0") {
                    info.conveyors_wrapped = true;
                }
                if !info.static_cudart && contains(bytes, b"libcuda.so.1\0") {
                    info.static_cudart = true;
                }
            }
        }
    }
    Ok(info)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn read_elf(path: &Path) -> Result<ElfInfo, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let kind = object::FileKind::parse(&*data).map_err(|e| e.to_string())?;
    let r = match kind {
        object::FileKind::Elf64 => parse::<elf::FileHeader64<Endianness>>(&data),
        object::FileKind::Elf32 => parse::<elf::FileHeader32<Endianness>>(&data),
        _ => return Err(format!("{} is not an ELF file", path.display())),
    };
    r.map_err(|e| format!("{}: {e}", path.display()))
}

/// The default library directories of the dynamic loader, plus /etc/ld.so.conf's.
fn system_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut confs = vec![PathBuf::from("/etc/ld.so.conf")];
    if let Ok(rd) = std::fs::read_dir("/etc/ld.so.conf.d") {
        let mut more: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        more.sort();
        confs.extend(more);
    }
    for conf in confs {
        if let Ok(text) = std::fs::read_to_string(&conf) {
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with('/') {
                    dirs.push(PathBuf::from(line));
                }
            }
        }
    }
    for d in [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// Where the loader would find `name` for an object at `origin_dir` with these paths.
fn resolve(name: &str, info: &ElfInfo, origin: &Path, system: &[PathBuf]) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let expand = |p: &String| {
        PathBuf::from(
            p.replace("$ORIGIN", &origin.display().to_string())
                .replace("${ORIGIN}", &origin.display().to_string()),
        )
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    if info.runpath.is_empty() {
        dirs.extend(info.rpath.iter().map(expand));
    }
    if let Ok(ld) = std::env::var("LD_LIBRARY_PATH") {
        dirs.extend(ld.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    dirs.extend(info.runpath.iter().map(expand));
    dirs.extend(system.iter().cloned());
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn classify(name: &str, resolved: Option<&Path>, models: &mut Models, via: &str, goacc: bool) {
    let base = name.rsplit('/').next().unwrap_or(name);
    // GCC-built programs run on libomp through a libgomp.so.1 -> libomp.so.5 link.
    let real = resolved
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
    let gomp_is_libomp = real.as_deref().is_some_and(|r| r.starts_with("libomp."));
    let why = |what: &str| format!("{what}: links {base}{via}");
    if base.starts_with("libkokkoscore.") {
        if !models.kokkos {
            models.reasons.push(why("kokkos"));
        }
        models.kokkos = true;
    } else if base.starts_with("libomp.") || base.starts_with("libiomp5.") {
        if !models.openmp {
            models.reasons.push(why("openmp"));
        }
        models.openmp = true;
    } else if base.starts_with("libgomp.") {
        if gomp_is_libomp {
            if !models.openmp {
                models
                    .reasons
                    .push(format!("openmp: links {base}{via}, which is LLVM's libomp"));
            }
            models.openmp = true;
        } else if !models.gomp_only {
            models.reasons.push(format!(
                "openmp: links {base}{via}, GCC's OpenMP runtime, which has no tool interface"
            ));
            models.gomp_only = true;
        }
        if goacc && !models.openacc {
            models.reasons.push(format!(
                "openacc: links {base}{via} and calls its OpenACC entry points"
            ));
            models.openacc = true;
        }
    } else if base.starts_with("libRAJA.") {
        if !models.raja {
            models.reasons.push(why("raja"));
        }
        models.raja = true;
    } else if base.starts_with("liboshmem.") {
        if !models.actor {
            models.reasons.push(why("actor"));
        }
        models.actor = true;
    } else if base.starts_with("libamdhip64.") {
        if !models.hip {
            models.reasons.push(why("hip"));
        }
        models.hip = true;
    } else if base.starts_with("libmpi.") || base.starts_with("libmpich.") {
        if !models.mpi {
            models.reasons.push(why("mpi"));
        }
        models.mpi = true;
    } else if base.starts_with("libcudart.") || base.starts_with("libcuda.") {
        if !models.cuda {
            models.reasons.push(why("cuda"));
        }
        models.cuda = true;
    } else if base.starts_with("libkprof_core.") {
        if !models.annotations {
            models
                .reasons
                .push(format!("annotations: links {base}{via}"));
        }
        models.annotations = true;
    }
}

/// Detects the models `program` uses. Errors when it is not a readable ELF file.
pub fn detect(program: &Path) -> Result<Models, String> {
    let top = read_elf(program)?;
    let mut models = Models::default();
    if let Some(how) = top.static_raja {
        models.raja = true;
        models
            .reasons
            .push(format!("raja: built into the program ({how})"));
    }
    models.raja_without_loader = top.raja_symbols && top.static_raja.is_none();
    // On x86-64 the plugin hooks the entries at load time.
    models.conveyors_unwrapped =
        top.conveyors && !top.conveyors_wrapped && !cfg!(target_arch = "x86_64");
    models.stripped = !top.symtab && !top.conveyors_wrapped;
    if top.conveyors {
        models.actor = true;
        models
            .reasons
            .push("actor: Conveyors (convey_begin) is built into the program".into());
    }
    if top.static_cudart {
        models.cuda = true;
        models
            .reasons
            .push("cuda: the CUDA runtime is built into the program".into());
    }
    let system = system_dirs();
    let mut seen = BTreeSet::new();
    // (name, needed by, its ELF info's search paths, origin)
    let origin = program
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut queue: Vec<(String, String, usize, PathBuf, std::rc::Rc<ElfInfo>)> = Vec::new();
    let top = std::rc::Rc::new(top);
    for n in &top.needed {
        queue.push((n.clone(), String::new(), 0, origin.clone(), top.clone()));
    }
    let goacc = top.goacc;
    while let Some((name, via, depth, origin, parent)) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let path = resolve(&name, &parent, &origin, &system);
        classify(&name, path.as_deref(), &mut models, &via, goacc);
        if depth >= 3 || name.starts_with("libc.") || name.starts_with("ld-linux") {
            continue;
        }
        let Some(path) = path else {
            continue;
        };
        let Ok(info) = read_elf(&path) else {
            continue;
        };
        if name.starts_with("libkokkoscore.") {
            models.kokkos_tools_libs |= info.tools_libs;
        }
        if info.static_cudart && !models.cuda && !name.starts_with("libcupti") {
            models.cuda = true;
            models
                .reasons
                .push(format!("cuda: the CUDA runtime is built into {name}{via}"));
        }
        if info.static_kokkos && !models.kokkos && !name.starts_with("libkprof") {
            models.kokkos = true;
            models.kokkos_tools_libs = info.tools_libs;
            models
                .reasons
                .push(format!("kokkos: built into {name}{via}"));
        }
        if let Some(how) = info.static_raja {
            if !models.raja && !name.starts_with("libkprof") {
                models.raja = true;
                models
                    .reasons
                    .push(format!("raja: built into {name}{via} ({how})"));
            }
        } else if info.raja_symbols && !name.starts_with("libRAJA.") {
            models.raja_without_loader = true;
        }
        let lib_origin = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let info = std::rc::Rc::new(info);
        for n in &info.needed {
            queue.push((
                n.clone(),
                format!(" (needed by {name})"),
                depth + 1,
                lib_origin.clone(),
                info.clone(),
            ));
        }
    }
    // A program linked with a shared Kokkos defines some of Kokkos' inline
    // functions itself: only without a libkokkoscore is Kokkos built in.
    if top.static_kokkos && !models.kokkos {
        models.kokkos = true;
        models.kokkos_tools_libs = top.tools_libs;
        models
            .reasons
            .insert(0, "kokkos: built into the program (Kokkos symbols)".into());
    }
    Ok(models)
}

/// The file `program` names: a path, or looked up in PATH like a shell would. The
/// error is what a shell would say, as one line.
pub fn find_program(program: &str) -> Result<PathBuf, String> {
    let check = |p: PathBuf| -> Result<PathBuf, String> {
        match std::fs::metadata(&p) {
            Err(_) => Err(format!("{program}: no such file")),
            Ok(m) if m.is_dir() => Err(format!("{program}: is a directory, not a program")),
            Ok(_) if !is_executable(&p) => {
                Err(format!("{program}: permission denied (not executable)"))
            }
            Ok(_) => Ok(p),
        }
    };
    if program.contains('/') {
        return check(PathBuf::from(program));
    }
    let not_found = || format!("{program}: command not found");
    let path = std::env::var_os("PATH").ok_or_else(not_found)?;
    let candidates: Vec<PathBuf> = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .filter(|p| p.is_file())
        .collect();
    match candidates.iter().find(|p| is_executable(p)) {
        Some(p) => Ok(p.clone()),
        // Only files without the execute bit: say so, as a shell does.
        None => match candidates.into_iter().next() {
            Some(p) => check(p),
            None => Err(not_found()),
        },
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
