//! Naming code addresses: the return addresses runtimes report (OMPT's
//! `codeptr_ra`) become `function (file:line)` from the module's DWARF line tables,
//! or `function` from its symbol table, or `module+0xoffset`.
//!
//! Runs on the writer thread only, cached per address, so the application never
//! pays for it. Modules are found with `dl_iterate_phdr` (load bias and path) and
//! read with `addr2line`.

use std::ffi::{c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::base::anomaly::Anomalies;
use crate::consume::profile::stacks::{SourceFrame, SourceFrames};
use crate::hot::intern::Interner;
use crate::hot::nesting::Symbols;

/// A loaded module: its address range, load bias and file.
#[derive(Debug, Clone)]
struct Module {
    start: u64,
    end: u64,
    bias: u64,
    path: PathBuf,
}

/// Address -> name id, with the debug information of every module it looked into.
pub struct Symbolizer {
    names: &'static Interner,
    anomalies: &'static Anomalies,
    cache: FxHashMap<u64, u32>,
    modules: Vec<Module>,
    loaders: FxHashMap<PathBuf, Option<addr2line::Loader>>,
    /// Per module, its functions by source position (built when an outlined body is
    /// first named).
    functions: FxHashMap<PathBuf, Vec<SourceFunction>>,
}

/// A function's name and where its code starts in the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SourceFunction {
    file: String,
    line: u32,
    name: String,
}

/// The function a compiler outlined a parallel region's body from, when `name` says
/// it is one: GCC names it (`main._omp_fn.0` -> `Some(Some("main"))`), clang does
/// not (`.omp_outlined.` -> `Some(None)`: find it by source position).
fn outlined_from(name: &str) -> Option<Option<&str>> {
    if let Some(at) = name.find("._omp_fn.") {
        return Some(Some(&name[..at]));
    }
    (name.starts_with(".omp_outlined.") || name.starts_with(".omp_task_entry.")).then_some(None)
}

/// The functions of the ELF file at `path` that the compiler did not outline, with
/// the source position of their first instruction, sorted.
fn source_functions(path: &Path, loader: &addr2line::Loader) -> Vec<SourceFunction> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut out: Vec<SourceFunction> = file
        .symbols()
        .filter(|sym| sym.kind() == SymbolKind::Text && sym.is_definition() && sym.size() > 0)
        .filter_map(|sym| {
            let name = sym.name().ok()?;
            if name.starts_with('.') || outlined_from(name).is_some() {
                return None;
            }
            let loc = loader.find_location(sym.address()).ok()??;
            Some(SourceFunction {
                file: loc.file?.to_string(),
                line: loc.line?,
                name: addr2line::demangle_auto(name.into(), None).into_owned(),
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Symbolizer {
    /// An empty symbolizer interning into `names`.
    pub fn new(names: &'static Interner, anomalies: &'static Anomalies) -> Symbolizer {
        Symbolizer {
            names,
            anomalies,
            cache: FxHashMap::default(),
            modules: Vec::new(),
            loaders: FxHashMap::default(),
            functions: FxHashMap::default(),
        }
    }

    /// The readable name of return address `addr`.
    pub fn describe(&mut self, addr: u64) -> String {
        if addr == 0 {
            return "<unknown location>".into();
        }
        // A return address points after the call; look up the call itself.
        let pc = addr - 1;
        let module = match self.module(pc) {
            Some(m) => m,
            None => return format!("{addr:#x}"),
        };
        let probe = pc.wrapping_sub(module.bias);
        let loader = self
            .loaders
            .entry(module.path.clone())
            .or_insert_with(|| addr2line::Loader::new(&module.path).ok());
        let file_name = file_name(&module.path);
        let fallback = format!("{file_name}+{probe:#x}");
        let Some(loader) = loader else {
            return fallback;
        };
        let mut function = None;
        let mut location = None;
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                if location.is_none() {
                    location = frame
                        .location
                        .and_then(|l| Some((l.file?.to_string(), l.line?)));
                }
                if let Some(f) = frame.function.as_ref().and_then(|f| f.demangle().ok()) {
                    function = Some(f.into_owned());
                }
            }
        }
        if function.is_none() {
            function = loader
                .find_symbol(probe)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        }
        // A parallel region's or task's body that the compiler outlined is named as
        // the user knows it: after the function it was written in.
        if let Some(from) = function.as_deref().and_then(outlined_from) {
            let enclosing = match (from, &location) {
                (Some(f), _) => Some(f.to_string()),
                (None, Some((file, line))) => {
                    let functions = self
                        .functions
                        .entry(module.path.clone())
                        .or_insert_with(|| source_functions(&module.path, loader));
                    functions
                        .iter()
                        .filter(|f| f.file == *file && f.line <= *line)
                        .max_by_key(|f| f.line)
                        .map(|f| f.name.clone())
                }
                (None, None) => None,
            };
            if enclosing.is_some() {
                function = enclosing;
            }
        }
        match (function, location) {
            (Some(f), Some((file, line))) => format!("{f} ({}:{line})", base_name(&file)),
            (None, Some((file, line))) => format!("{}:{line}", base_name(&file)),
            (Some(f), None) => f,
            (None, None) => fallback,
        }
    }

    /// The source frames of code address `pc` (an instruction, not a return
    /// address: the caller subtracts one from those), innermost first: the
    /// functions inlined at `pc`, then the one they were inlined into. Each has
    /// its function name (demangled; from the symbol table without debug
    /// information; `module+0xoffset` without either) and, with debug
    /// information, file and line.
    pub fn source_frames(&mut self, pc: u64) -> Vec<SourceFrame> {
        let Some(module) = self.module(pc) else {
            return vec![SourceFrame {
                function: format!("{pc:#x}"),
                file: None,
                line: None,
            }];
        };
        let probe = pc.wrapping_sub(module.bias);
        let loader = self
            .loaders
            .entry(module.path.clone())
            .or_insert_with(|| addr2line::Loader::new(&module.path).ok());
        let file_name = file_name(&module.path);
        let Some(loader) = loader else {
            return vec![SourceFrame {
                function: format!("{file_name}+{probe:#x}"),
                file: None,
                line: None,
            }];
        };
        let mut out = Vec::new();
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|f| f.into_owned());
                let (file, line) = frame
                    .location
                    .map_or((None, None), |l| (l.file.map(str::to_string), l.line));
                out.push(SourceFrame {
                    function: function.unwrap_or_default(),
                    file,
                    line,
                });
            }
        }
        let symbol = || {
            loader
                .find_symbol(probe)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned())
        };
        if out.is_empty() {
            out.push(SourceFrame {
                function: symbol().unwrap_or_else(|| format!("{file_name}+{probe:#x}")),
                file: None,
                line: None,
            });
        }
        // Line tables without function entries (some assembly, stripped
        // DWARF): the symbol table names the outermost frame.
        for f in out.iter_mut().filter(|f| f.function.is_empty()) {
            f.function = symbol().unwrap_or_else(|| format!("{file_name}+{probe:#x}"));
        }
        out
    }

    /// The module containing `pc`, re-reading the module list once if unknown
    /// (the program may have loaded a library since).
    fn module(&mut self, pc: u64) -> Option<Module> {
        let find = |ms: &[Module]| ms.iter().find(|m| m.start <= pc && pc < m.end).cloned();
        if let Some(m) = find(&self.modules) {
            return Some(m);
        }
        self.modules = loaded_modules();
        find(&self.modules)
    }
}

impl SourceFrames for Symbolizer {
    fn source_frames(&mut self, pc: u64) -> Vec<SourceFrame> {
        Symbolizer::source_frames(self, pc)
    }
}

impl Symbols for Symbolizer {
    fn name_of(&mut self, addr: u64) -> u32 {
        if let Some(&id) = self.cache.get(&addr) {
            return id;
        }
        let text = self.describe(addr);
        let id = self.names.intern(text.as_bytes(), self.anomalies).0;
        self.cache.insert(addr, id);
        id
    }
}

fn base_name(file: &str) -> &str {
    Path::new(file)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(file)
}

/// Every loaded module with its executable address range.
fn loaded_modules() -> Vec<Module> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our Vec as data.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Module>)) };
        let mut start = u64::MAX;
        let mut end = 0;
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                start = start.min(info.dlpi_addr + ph.p_vaddr);
                end = end.max(info.dlpi_addr + ph.p_vaddr + ph.p_memsz);
            }
        }
        if start < end {
            let name = if info.dlpi_name.is_null() {
                &[][..]
            } else {
                // SAFETY: a NUL-terminated path owned by the loader.
                unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
            };
            let path = if name.is_empty() {
                // The main program.
                std::fs::read_link("/proc/self/exe").unwrap_or_default()
            } else {
                PathBuf::from(OsStr::from_bytes(name))
            };
            out.push(Module {
                start,
                end,
                bias: info.dlpi_addr,
                path,
            });
        }
        0
    }
    let mut out: Vec<Module> = Vec::new();
    // SAFETY: the callback only reads the loader's tables and writes our Vec.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<Module> as *mut c_void) };
    out
}

/// A module's file name (its whole path when it has none), as frames without
/// debug information name it.
fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn marker_function_for_symbolizer() -> u64 {
        // The address of a call site inside this function, as a return address.
        marker_function_for_symbolizer as *const () as u64 + 1
    }

    #[test]
    fn outlined_bodies_are_recognised() {
        assert_eq!(outlined_from("main._omp_fn.0"), Some(Some("main")));
        assert_eq!(outlined_from("solve._omp_fn.12"), Some(Some("solve")));
        assert_eq!(outlined_from(".omp_outlined."), Some(None));
        assert_eq!(outlined_from(".omp_outlined..14"), Some(None));
        assert_eq!(outlined_from(".omp_task_entry..3"), Some(None));
        assert_eq!(outlined_from("main"), None);
    }

    #[test]
    fn names_this_test_function() {
        let modules = loaded_modules();
        assert!(modules
            .iter()
            .any(|m| m.path.to_string_lossy().contains("kprof_core")));
        let addr = marker_function_for_symbolizer();
        let names: &'static Interner = Box::leak(Box::new(Interner::new()));
        let anomalies: &'static Anomalies = Box::leak(Box::default());
        let mut s = Symbolizer::new(names, anomalies);
        let text = s.describe(addr);
        assert!(text.contains("marker_function_for_symbolizer"), "{text}");
        assert!(text.contains("symbolize.rs:"), "line information: {text}");
        assert_eq!(s.describe(0), "<unknown location>");
        let frames = s.source_frames(addr - 1);
        assert!(
            frames[frames.len() - 1]
                .function
                .contains("marker_function_for_symbolizer"),
            "{frames:?}"
        );
        assert!(frames[0]
            .file
            .as_deref()
            .is_some_and(|f| f.ends_with("symbolize.rs")));
        let id = s.name_of(addr);
        assert_eq!(names.text(id), text);
        assert_eq!(s.name_of(addr), id, "cached");
    }
}
