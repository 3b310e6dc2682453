//! The runtime models kprof measures: for each, its `kprof run` flag, its plugin
//! (crate and library file), how its runtime is told to load the plugin, how
//! kprof recognises a program that uses it, and its documentation page.
//!
//! A new runtime interface is a plugin crate, its tests, its doc page and one
//! entry here (and in [`ModelId`]): `kprof run`, detection, `--help`, the
//! install's check and the tests' build read this table.

/// A model, as an index into [`MODELS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelId {
    /// Kokkos (Kokkos Tools interface).
    Kokkos,
    /// OpenMP (OMPT).
    OpenMp,
    /// OpenACC (the OpenACC profiling interface).
    OpenAcc,
    /// RAJA (its runtime plugins).
    Raja,
    /// CUDA (CUPTI activity).
    Cuda,
    /// HIP on AMD GPUs (rocprofiler-sdk).
    Hip,
    /// MPI (PMPI).
    Mpi,
    /// HClib-Actor / Conveyors / OpenSHMEM.
    Actor,
}

/// How a runtime is told to load a tool library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// A list of libraries in `var`, separated by `sep`: kprof's plugin goes
    /// first and a list the user set stays after it. `older` is the variable
    /// older versions of the runtime read instead; set when detection finds such
    /// a version, and besides `var` when the version is unknown.
    List {
        /// The variable.
        var: &'static str,
        /// The separator of its list.
        sep: char,
        /// The variable of older versions, if there is one.
        older: Option<&'static str>,
    },
    /// One library in `var`. When `yields` names what would be measured, a
    /// value the user set stays (the runtime loads one tool only) and that is
    /// not measured; otherwise kprof's plugin replaces it.
    One {
        /// The variable.
        var: &'static str,
        /// What is lost when the user's tool is kept, or `None`: replaced.
        yields: Option<&'static str>,
    },
    /// `LD_PRELOAD`: the plugin's symbols come before the runtime's.
    Preload,
}

impl Loader {
    /// The variables this loader sets (none for a preload).
    pub fn vars(&self) -> Vec<&'static str> {
        match *self {
            Loader::List { var, older, .. } => std::iter::once(var).chain(older).collect(),
            Loader::One { var, .. } => vec![var],
            Loader::Preload => Vec::new(),
        }
    }
}

/// What in a program's ELF files (the program and the libraries it needs)
/// tells that it uses a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detect {
    /// Beginnings of the names of libraries that mean the model
    /// (`libkokkoscore.`): needed by the program or a library it needs.
    pub links: &'static [&'static str],
    /// Beginnings of defined symbols that mean the runtime is built in.
    pub symbols: &'static [&'static str],
    /// Strings in a file's data that mean the runtime is built in (they survive
    /// stripping).
    pub strings: &'static [&'static str],
}

/// One model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// Its index.
    pub id: ModelId,
    /// Its name: `kprof run --<name>`, and the word in kprof's messages.
    pub name: &'static str,
    /// The runtime's name in sentences ("no Kokkos, OpenMP, ... found").
    pub runtime: &'static str,
    /// The plugin's cargo package.
    pub package: &'static str,
    /// The plugin's library file, installed in `lib/`.
    pub library: &'static str,
    /// How the runtime loads the plugin.
    pub loader: Loader,
    /// How kprof recognises a program that uses it.
    pub detect: Detect,
    /// Its documentation page, from the repository's root.
    pub doc: &'static str,
    /// What its flag does, for `kprof run --help` (a sentence without its
    /// period).
    pub help: &'static str,
}

/// Every model, in [`ModelId`]'s order.
pub const MODELS: [Model; 8] = [
    Model {
        id: ModelId::Kokkos,
        name: "kokkos",
        runtime: "Kokkos",
        package: "kprof-kokkos",
        library: "libkprof.so",
        loader: Loader::List {
            var: "KOKKOS_TOOLS_LIBS",
            sep: ';',
            older: Some("KOKKOS_PROFILE_LIBRARY"),
        },
        detect: Detect {
            links: &["libkokkoscore."],
            symbols: &[
                "_ZN6Kokkos10initialize",
                "_ZN6Kokkos5Tools",
                "_ZN6Kokkos9Profiling",
            ],
            strings: &["KOKKOS_PROFILE_LIBRARY"],
        },
        doc: "docs/kokkos.md",
        help: "Load the Kokkos plugin",
    },
    Model {
        id: ModelId::OpenMp,
        name: "openmp",
        runtime: "OpenMP",
        package: "kprof-ompt",
        library: "libkprof_ompt.so",
        loader: Loader::List {
            var: "OMP_TOOL_LIBRARIES",
            sep: ':',
            older: None,
        },
        // GCC's libgomp counts only when it is LLVM's libomp under that name.
        detect: Detect {
            links: &["libomp.", "libiomp5."],
            symbols: &[],
            strings: &[],
        },
        doc: "docs/openmp.md",
        help: "Load the OpenMP (OMPT) plugin",
    },
    Model {
        id: ModelId::OpenAcc,
        name: "openacc",
        runtime: "OpenACC",
        package: "kprof-openacc",
        library: "libkprof_acc.so",
        loader: Loader::One {
            var: "ACC_PROFLIB",
            yields: None,
        },
        // GCC's libgomp, when the program calls its OpenACC entries.
        detect: Detect {
            links: &[],
            symbols: &["GOACC_"],
            strings: &[],
        },
        doc: "docs/openacc.md",
        help: "Load the OpenACC plugin",
    },
    Model {
        id: ModelId::Raja,
        name: "raja",
        runtime: "RAJA",
        package: "kprof-raja",
        library: "libkprof_raja.so",
        loader: Loader::One {
            var: "RAJA_PLUGINS",
            yields: None,
        },
        detect: Detect {
            links: &["libRAJA."],
            // RAJA's runtime plugin loader (`RAJA::util::RuntimePluginLoader`).
            symbols: &["_ZN4RAJA4util19RuntimePluginLoader"],
            strings: &["RAJA_PLUGINS"],
        },
        doc: "docs/raja.md",
        help: "Load the RAJA runtime plugin; RAJA must be built with \
               RAJA_ENABLE_RUNTIME_PLUGINS=ON",
    },
    Model {
        id: ModelId::Cuda,
        name: "cuda",
        runtime: "CUDA",
        package: "kprof-cuda",
        library: "libkprof_cuda.so",
        loader: Loader::One {
            var: "CUDA_INJECTION64_PATH",
            yields: Some("GPU activity"),
        },
        // nvcc's default static libcudart loads the driver by this name.
        detect: Detect {
            links: &["libcudart.", "libcuda."],
            symbols: &[],
            strings: &["libcuda.so.1\0"],
        },
        doc: "docs/cuda.md",
        help: "Load the CUDA GPU activity plugin; it needs CUPTI at run time",
    },
    Model {
        id: ModelId::Hip,
        name: "hip",
        runtime: "HIP",
        package: "kprof-rocm",
        library: "libkprof_rocm.so",
        loader: Loader::List {
            var: "ROCP_TOOL_LIBRARIES",
            sep: ':',
            older: None,
        },
        detect: Detect {
            links: &["libamdhip64."],
            symbols: &[],
            strings: &[],
        },
        doc: "docs/rocm.md",
        help: "Load the AMD GPU activity plugin; it needs rocprofiler-sdk at run time",
    },
    Model {
        id: ModelId::Mpi,
        name: "mpi",
        runtime: "MPI",
        package: "kprof-mpi",
        library: "libkprof_mpi.so",
        // The program's MPI calls bind to the plugin's MPI_* functions, which
        // forward to the library's PMPI_* ones.
        loader: Loader::Preload,
        detect: Detect {
            links: &["libmpi.", "libmpich."],
            symbols: &[],
            strings: &[],
        },
        doc: "docs/mpi.md",
        help: "Load the MPI plugin, for Open MPI or MPICH",
    },
    Model {
        id: ModelId::Actor,
        name: "actor",
        runtime: "OpenSHMEM",
        package: "kprof-actor",
        library: "libkprof_actor.so",
        // Its shmem_* come before liboshmem's weak ones; the wrappers linked
        // into the program find it with dlsym.
        loader: Loader::Preload,
        detect: Detect {
            links: &["liboshmem."],
            symbols: &["convey_begin", "__real_convey_begin"],
            strings: &[],
        },
        doc: "docs/actor.md",
        help: "Load the HClib-Actor / Conveyors plugin: message matrices and the \
               MAIN/PROC/COMM breakdown of FA-BSP programs; Conveyors' entries are \
               seen when the program was linked with kprof's wrappers, see \
               ffi-headers/kprof_actor.h",
    },
];

// Every id has its entry, at its index: a model cannot be half in the table.
const _: () = {
    let mut i = 0;
    while i < MODELS.len() {
        assert!(MODELS[i].id as usize == i);
        i += 1;
    }
    assert!(ModelId::Actor as usize == MODELS.len() - 1);
};

impl ModelId {
    /// Its entry.
    pub fn model(self) -> &'static Model {
        &MODELS[self as usize]
    }
}

/// The model named `name` (`kokkos`, `hip`, ...).
pub fn by_name(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}

/// The flags, as `--kokkos, --openmp, ... or --actor`.
pub fn flags_sentence() -> String {
    let flags: Vec<String> = MODELS.iter().map(|m| format!("--{}", m.name)).collect();
    or_list(&flags)
}

/// The runtimes, as `Kokkos, OpenMP, ... or OpenSHMEM`.
pub fn runtimes_sentence() -> String {
    let names: Vec<String> = MODELS.iter().map(|m| m.runtime.to_string()).collect();
    or_list(&names)
}

fn or_list(words: &[String]) -> String {
    match words.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The runtime (and the annotation API), which every plugin loads.
pub const CORE_LIBRARY: &str = "libkprof_core.so";

/// The library `kprof run` preloads so that a signal reaching the program both
/// directly and forwarded is delivered once.
pub const SIGNALS_LIBRARY: &str = "libkprof_signals.so";

/// The libraries kprof installs and builds besides the models' plugins, with
/// their packages.
pub const SUPPORT_LIBRARIES: [(&str, &str); 2] = [
    ("kprof-core", CORE_LIBRARY),
    ("kprof-signals", SIGNALS_LIBRARY),
];

/// Every cargo package the install builds: the support libraries, each
/// model's plugin, and the command (`kprof-cli`).
pub fn packages() -> Vec<&'static str> {
    SUPPORT_LIBRARIES
        .iter()
        .map(|&(p, _)| p)
        .chain(MODELS.iter().map(|m| m.package))
        .chain(["kprof-cli"])
        .collect()
}

/// Every library the install puts in `lib/`.
pub fn libraries() -> Vec<&'static str> {
    SUPPORT_LIBRARIES
        .iter()
        .map(|&(_, l)| l)
        .chain(MODELS.iter().map(|m| m.library))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_libraries_and_packages_are_unique() {
        for (i, a) in MODELS.iter().enumerate() {
            for b in &MODELS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.library, b.library);
                assert_ne!(a.package, b.package);
            }
            assert_eq!(by_name(a.name), Some(a));
            assert!(a.library.starts_with("libkprof") && a.library.ends_with(".so"));
        }
    }

    #[test]
    fn sentences_list_every_model() {
        assert_eq!(
            flags_sentence(),
            "--kokkos, --openmp, --openacc, --raja, --cuda, --hip, --mpi or --actor"
        );
        assert_eq!(
            runtimes_sentence(),
            "Kokkos, OpenMP, OpenACC, RAJA, CUDA, HIP, MPI or OpenSHMEM"
        );
    }

    #[test]
    fn loaders_name_their_variables() {
        assert_eq!(
            ModelId::Kokkos.model().loader.vars(),
            ["KOKKOS_TOOLS_LIBS", "KOKKOS_PROFILE_LIBRARY"]
        );
        assert_eq!(ModelId::OpenAcc.model().loader.vars(), ["ACC_PROFLIB"]);
        assert!(ModelId::Mpi.model().loader.vars().is_empty());
        let packages = packages();
        assert_eq!(packages.len(), MODELS.len() + 3);
        assert_eq!(libraries().len(), MODELS.len() + 2);
    }
}
