//! Which programming models a program uses, from its ELF file: the libraries it
//! needs (DT_NEEDED, followed through the libraries it finds, a few levels deep),
//! and Kokkos or RAJA built statically into it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{Dyn, FileHeader, SectionHeader, Sym};
use object::Endianness;

use kprof_tables::models::{ModelId, MODELS};

/// What was found, with the reasons (for `--verbose` and the start line).
#[derive(Debug, Default, Clone)]
pub struct Models {
    /// The models found (see [`kprof_tables::models`] for what tells each).
    pub found: BTreeSet<ModelId>,
    /// GCC's own libgomp, which has no OpenMP tool interface: its OpenMP constructs
    /// cannot be measured.
    pub gomp_only: bool,
    /// The runtime is a version that reads its loader's newer variable: Kokkos
    /// 3.5 and later read `KOKKOS_TOOLS_LIBS` (the string is in its data);
    /// Kokkos 3.4 reads only `KOKKOS_PROFILE_LIBRARY`, which later versions
    /// still read but warn about.
    pub newer_loader: bool,
    /// RAJA built in without its runtime plugin loader (RAJA_PLUGINS would be
    /// ignored): only a hint is given.
    pub raja_without_loader: bool,
    /// libkprof_core.so is linked (annotation API).
    pub annotations: bool,
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

impl Models {
    /// Whether `id` was found.
    pub fn has(&self, id: ModelId) -> bool {
        self.found.contains(&id)
    }

    /// Marks `id` found for `why` (the first reason is kept).
    fn add(&mut self, id: ModelId, why: impl FnOnce() -> String) {
        if self.found.insert(id) {
            self.reasons.push(why());
        }
    }
}

/// What one ELF file says.
#[derive(Default, Debug)]
pub(crate) struct ElfInfo {
    pub(crate) needed: Vec<String>,
    pub(crate) runpath: Vec<String>,
    pub(crate) rpath: Vec<String>,
    /// Per model, whether its built-in markers (the table's symbols) are
    /// defined in this file, then whether its strings are in its data.
    pub(crate) symbols: [bool; MODELS.len()],
    pub(crate) strings: [bool; MODELS.len()],
    /// The string `KOKKOS_TOOLS_LIBS` is in its data (Kokkos >= 3.5).
    pub(crate) tools_libs: bool,
    /// RAJA symbols are defined in this file.
    pub(crate) raja_symbols: bool,
    /// OpenACC entries of GCC's libgomp (`GOACC_*`) are called or defined.
    pub(crate) goacc: bool,
    /// kprof's link-time wrapper of `convey_push` is built in.
    pub(crate) conveyors_wrapped: bool,
    /// It has a symbol table (`.symtab`).
    pub(crate) symtab: bool,
}

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
            for m in &MODELS {
                // OpenACC's markers are libgomp's entries, called, not defined.
                let counts = defined || m.id == ModelId::OpenAcc;
                if counts
                    && m.detect
                        .symbols
                        .iter()
                        .any(|p| marks(name, p.as_bytes(), m.id))
                {
                    info.symbols[m.id as usize] = true;
                }
            }
            if defined && name == b"__wrap_convey_push" {
                info.conveyors_wrapped = true;
            }
            if defined && name.starts_with(b"_ZN4RAJA") {
                info.raja_symbols = true;
            }
        }
    }
    // The variables Kokkos reads to load its tools: in a stripped program the sign
    // of a static Kokkos, and `KOKKOS_TOOLS_LIBS` tells a Kokkos >= 3.5; RAJA's
    // runtime plugin loader reads `RAJA_PLUGINS`.
    {
        let newer = kokkos_newer();
        for section in sections.iter() {
            if section.sh_type(endian) != elf::SHT_PROGBITS {
                continue;
            }
            if let Ok(bytes) = section.data(endian, data) {
                for m in &MODELS {
                    let i = m.id as usize;
                    if !info.strings[i]
                        && m.detect
                            .strings
                            .iter()
                            .any(|t| contains(bytes, t.as_bytes()))
                    {
                        info.strings[i] = true;
                    }
                }
                if !info.tools_libs && contains(bytes, newer.as_bytes()) {
                    info.tools_libs = true;
                }
                // The link-time wrappers look the plugin up by this name: they
                // are built in even when the symbols are stripped.
                if !info.conveyors_wrapped && contains(bytes, b"kprof_actor_wrap_hooks_v1\0") {
                    info.conveyors_wrapped = true;
                }
            }
        }
    }
    info.goacc = info.symbols[ModelId::OpenAcc as usize];
    Ok(info)
}

/// The variable newer Kokkos versions read (the table's loader variable): in
/// a file's data, it tells such a version.
fn kokkos_newer() -> &'static str {
    ModelId::Kokkos.model().loader.vars()[0]
}

/// Whether symbol `name` is the marker `marker` of model `id`: Conveyors'
/// entries are whole names, the others beginnings.
fn marks(name: &[u8], marker: &[u8], id: ModelId) -> bool {
    if id == ModelId::Actor {
        name == marker
    } else {
        name.starts_with(marker)
    }
}

impl ElfInfo {
    /// The model's symbols are defined here.
    fn symbols_of(&self, id: ModelId) -> bool {
        self.symbols[id as usize]
    }

    /// The model's strings are in the data.
    fn strings_of(&self, id: ModelId) -> bool {
        self.strings[id as usize]
    }

    /// Kokkos is built in (its symbols, or in a stripped file the variable it
    /// reads).
    fn static_kokkos(&self) -> bool {
        self.symbols_of(ModelId::Kokkos) || self.strings_of(ModelId::Kokkos)
    }

    /// How RAJA's runtime plugin loader was found in this file, if it was.
    fn static_raja(&self) -> Option<&'static str> {
        if self.symbols_of(ModelId::Raja) {
            Some("RAJA's runtime plugin loader symbols")
        } else if self.strings_of(ModelId::Raja) {
            Some("the string RAJA_PLUGINS")
        } else {
            None
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn read_elf(path: &Path) -> Result<ElfInfo, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    inspect(&data).map_err(|e| format!("{}: {e}", path.display()))
}

/// What the ELF file `data` says; an error (one line) when it is not one, or a
/// malformed one. The file is outside input: any bytes give one or the other
/// (the fuzz target `elf` in `fuzz/` builds this module as it is to check it).
pub(crate) fn inspect(data: &[u8]) -> Result<ElfInfo, String> {
    match object::FileKind::parse(data).map_err(|e| e.to_string())? {
        object::FileKind::Elf64 => parse::<elf::FileHeader64<Endianness>>(data),
        object::FileKind::Elf32 => parse::<elf::FileHeader32<Endianness>>(data),
        _ => return Err("not an ELF file".into()),
    }
    .map_err(|e| e.to_string())
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
    let why = |what: &str| format!("{what}: links {base}{via}");
    for m in &MODELS {
        if m.detect.links.iter().any(|l| base.starts_with(l)) {
            models.add(m.id, || why(m.name));
        }
    }
    if base.starts_with("libgomp.") {
        // GCC-built programs run on libomp through a libgomp.so.1 -> libomp.so.5 link.
        let real = resolved
            .and_then(|p| std::fs::canonicalize(p).ok())
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
        if real.as_deref().is_some_and(|r| r.starts_with("libomp.")) {
            models.add(ModelId::OpenMp, || {
                format!("openmp: links {base}{via}, which is LLVM's libomp")
            });
        } else if !models.gomp_only {
            models.reasons.push(format!(
                "openmp: links {base}{via}, GCC's OpenMP runtime, which has no tool interface"
            ));
            models.gomp_only = true;
        }
        if goacc {
            models.add(ModelId::OpenAcc, || {
                format!("openacc: links {base}{via} and calls its OpenACC entry points")
            });
        }
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
    if let Some(how) = top.static_raja() {
        models.add(ModelId::Raja, || {
            format!("raja: built into the program ({how})")
        });
    }
    models.raja_without_loader = top.raja_symbols && top.static_raja().is_none();
    let conveyors = top.symbols_of(ModelId::Actor);
    // On x86-64 the plugin hooks the entries at load time.
    models.conveyors_unwrapped =
        conveyors && !top.conveyors_wrapped && !cfg!(target_arch = "x86_64");
    models.stripped = !top.symtab && !top.conveyors_wrapped;
    if conveyors {
        models.add(ModelId::Actor, || {
            "actor: Conveyors (convey_begin) is built into the program".into()
        });
    }
    if top.strings_of(ModelId::Cuda) {
        models.add(ModelId::Cuda, || {
            "cuda: the CUDA runtime is built into the program".into()
        });
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
        let kokkos = ModelId::Kokkos.model();
        if kokkos.detect.links.iter().any(|l| name.starts_with(l)) {
            models.newer_loader |= info.tools_libs;
        }
        if info.strings_of(ModelId::Cuda) && !name.starts_with("libcupti") {
            models.add(ModelId::Cuda, || {
                format!("cuda: the CUDA runtime is built into {name}{via}")
            });
        }
        if info.static_kokkos() && !models.has(ModelId::Kokkos) && !name.starts_with("libkprof") {
            models.newer_loader = info.tools_libs;
            models.add(ModelId::Kokkos, || {
                format!("kokkos: built into {name}{via}")
            });
        }
        if let Some(how) = info.static_raja() {
            if !name.starts_with("libkprof") {
                models.add(ModelId::Raja, || {
                    format!("raja: built into {name}{via} ({how})")
                });
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
    if top.static_kokkos() && models.found.insert(ModelId::Kokkos) {
        models.newer_loader = top.tools_libs;
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
