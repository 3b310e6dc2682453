//! The unwind information of every loaded module, prepared for the call-stack
//! sampling handler ([`crate::hot::stack_samples`]): each module's `.eh_frame` and
//! `.eh_frame_hdr`, copied out of its file (or, for the vDSO, out of memory) when
//! kprof first sees a thread and again whenever the loader's list of modules
//! changed since (`dl_iterate_phdr`'s load and unload counters), never in the
//! handler. The handler reads a published, immutable set: a new set replaces
//! the old one whole, and old sets are never freed (a handler may still be
//! reading one), so a module unloaded meanwhile is only data, never an unmapped
//! page.

use std::ffi::{c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use framehop::x86_64::{CacheX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, MustNotAllocateDuringUnwind};

/// The unwinder the handler uses: owned section data, no allocation while it
/// unwinds.
pub type Unwinder = UnwinderX86_64<Arc<[u8]>, MustNotAllocateDuringUnwind>;
/// A thread's unwind-rule cache (made when the thread is first seen).
pub type Cache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// The set the handler reads (null until the first preparation).
static CURRENT: AtomicPtr<Unwinder> = AtomicPtr::new(std::ptr::null_mut());

/// What the last preparation saw: the loader's counters and the modules made.
struct Known {
    adds: u64,
    subs: u64,
    modules: Vec<(u64, Module<Arc<[u8]>>)>,
}

static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

/// The published unwinder, if any. Async-signal-safe (one atomic load).
#[inline]
pub fn current() -> Option<&'static Unwinder> {
    // SAFETY: published sets are leaked and never freed.
    unsafe { CURRENT.load(Ordering::Acquire).as_ref() }
}

/// A loaded module: executable range, load bias, and where its ELF image is.
struct Loaded {
    start: u64,
    end: u64,
    bias: u64,
    image: Image,
}

/// Where a module's ELF image is read from.
enum Image {
    File(PathBuf),
    /// The vDSO, mapped whole at this address, this long.
    Memory(u64, u64),
}

/// The loader's module list with its load and unload counters.
fn loaded() -> (u64, u64, Vec<Loaded>) {
    struct Out {
        adds: u64,
        subs: u64,
        list: Vec<Loaded>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our Out as data.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Out)) };
        out.adds = info.dlpi_adds;
        out.subs = info.dlpi_subs;
        let (mut start, mut end, mut low, mut high) = (u64::MAX, 0, u64::MAX, 0);
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD {
                let (a, b) = (
                    info.dlpi_addr + ph.p_vaddr,
                    info.dlpi_addr + ph.p_vaddr + ph.p_memsz,
                );
                low = low.min(a);
                high = high.max(b);
                if ph.p_flags & libc::PF_X != 0 {
                    start = start.min(a);
                    end = end.max(b);
                }
            }
        }
        if start >= end {
            return 0;
        }
        let name = if info.dlpi_name.is_null() {
            &[][..]
        } else {
            // SAFETY: a NUL-terminated path owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        // SAFETY: getauxval has no preconditions.
        let vdso = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
        let image = if vdso != 0 && low <= vdso && vdso < high {
            Image::Memory(vdso, high - vdso)
        } else if name.is_empty() {
            Image::File(std::fs::read_link("/proc/self/exe").unwrap_or_default())
        } else {
            Image::File(PathBuf::from(OsStr::from_bytes(name)))
        };
        out.list.push(Loaded {
            start,
            end,
            bias: info.dlpi_addr,
            image,
        });
        0
    }
    let mut out = Out {
        adds: 0,
        subs: 0,
        list: Vec::new(),
    };
    // SAFETY: the callback only reads the loader's tables and writes our Out.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Out as *mut c_void) };
    (out.adds, out.subs, out.list)
}

/// The unwind sections of the ELF image `data`, as framehop takes them.
fn sections(data: &[u8]) -> Option<ExplicitModuleSectionInfo<Arc<[u8]>>> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(data).ok()?;
    let section = |name: &str| {
        let s = file.section_by_name(name)?;
        let range = s.address()..s.address() + s.size();
        let bytes: Arc<[u8]> = Arc::from(s.data().ok()?);
        Some((range, bytes))
    };
    let eh_frame = section(".eh_frame");
    let hdr = section(".eh_frame_hdr");
    let got = file
        .section_by_name(".got")
        .map(|s| s.address()..s.address() + s.size());
    let text = file
        .section_by_name(".text")
        .map(|s| s.address()..s.address() + s.size());
    eh_frame.as_ref()?;
    Some(ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: text,
        got_svma: got,
        eh_frame_svma: eh_frame.as_ref().map(|e| e.0.clone()),
        eh_frame: eh_frame.map(|e| e.1),
        eh_frame_hdr_svma: hdr.as_ref().map(|e| e.0.clone()),
        eh_frame_hdr: hdr.map(|e| e.1),
        ..Default::default()
    })
}

/// The framehop module of `m`, when its image has unwind information.
fn module(m: &Loaded) -> Option<Module<Arc<[u8]>>> {
    let (name, info) = match &m.image {
        Image::File(path) => {
            let data = std::fs::read(path).ok()?;
            (path.display().to_string(), sections(&data)?)
        }
        Image::Memory(at, len) => {
            // SAFETY: the vDSO is mapped whole and readable for the process's life.
            let data = unsafe { std::slice::from_raw_parts(*at as *const u8, *len as usize) };
            ("[vdso]".to_string(), sections(data)?)
        }
    };
    Some(Module::new(name, m.start..m.end, m.bias, info))
}

/// Publishes the unwind information of every loaded module, reading only the
/// modules loaded since the last call (nothing when the loader's counters did
/// not move). Not for a signal handler: it reads files and allocates.
pub fn prepare() {
    let (adds, subs, list) = loaded();
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = known.as_ref() {
        if k.adds == adds && k.subs == subs && !CURRENT.load(Ordering::Acquire).is_null() {
            return;
        }
    }
    let old = known.take().map(|k| k.modules).unwrap_or_default();
    let mut modules = Vec::with_capacity(list.len());
    for m in &list {
        let kept = old
            .iter()
            .find(|(bias, o)| *bias == m.bias && o.avma_range() == (m.start..m.end));
        match kept {
            Some((bias, o)) => modules.push((*bias, o.clone())),
            None => {
                if let Some(made) = module(m) {
                    modules.push((m.bias, made));
                }
            }
        }
    }
    let mut unwinder = Unwinder::new();
    for (_, m) in &modules {
        framehop::Unwinder::add_module(&mut unwinder, m.clone());
    }
    // The old set stays allocated: a handler on another thread may be reading it.
    CURRENT.store(Box::into_raw(Box::new(unwinder)), Ordering::Release);
    *known = Some(Known {
        adds,
        subs,
        modules,
    });
}

/// A new per-thread cache (allocated here, so that unwinding never allocates).
pub fn new_cache() -> Box<Cache> {
    Box::new(Cache::new_in())
}
