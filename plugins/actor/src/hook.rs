//! Route 1: load-time hooks of the executable's own `convey_*` entries (x86-64;
//! other architectures use the link-time wrappers of [`crate::wrap`]).
//!
//! bale builds Conveyors as a static library, so its public entries are local
//! functions of the executable (in `.symtab`, not in the dynamic symbols) and no
//! preloaded library can interpose them. Each entry is a short dispatch through
//! the conveyor's method table, `mov (%rdi),%rax; jmp *disp(%rax)` (6 bytes;
//! `convey_begin` 5, `convey_advance` 10 with a `movzbl %sil,%esi`): code that
//! is position independent and ends in a jump. So:
//!
//! - the **trampoline** (the original entry, callable) is a copy of those bytes
//!   anywhere in memory;
//! - the **patch** is a 5-byte `jmp rel32` over the entry's first bytes to a
//!   14-byte stub (`jmp *0(%rip)` + the hook's address) in a page mapped within
//!   +-2 GiB of the entry.
//!
//! An entry whose bytes are not such a dispatch (another compiler, `-O0`, LTO)
//! is left alone, with one line saying to use the link-time wrappers. Hooks are
//! installed by the library's constructor, before `main`, when the program has
//! the entries and was not linked with the wrappers (then they already count).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use object::{Object, ObjectSymbol};

use crate::state::{self, op};

/// The entries hooked, in this order in [`TRAMPOLINES`].
pub const ENTRIES: [&str; 7] = [
    "convey_begin",
    "convey_push",
    "convey_pull",
    "convey_advance",
    "convey_free",
    "convey_epush",
    "convey_epull",
];

/// The trampolines (the original entries), by [`ENTRIES`] index (0: not hooked).
static TRAMPOLINES: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

/// Why an entry or the program could not be hooked.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The executable could not be read or parsed.
    #[error("cannot read the program's symbols: {0}")]
    Read(String),
    /// An entry's code is not a method-table dispatch.
    #[error("{0} is not a method-table dispatch (bytes {1})")]
    Pattern(&'static str, String),
    /// No page could be mapped within +-2 GiB of an entry.
    #[error("no memory within 2 GiB of {0}")]
    Near(&'static str),
    /// A page protection change failed.
    #[error("cannot patch {0}: {1}")]
    Protect(&'static str, std::io::Error),
}

/// How many bytes of `code` form the dispatch (instructions known to be
/// position independent, ending in `jmp *disp(%rax)`), after an optional
/// `endbr64` (whose length is returned first).
pub fn dispatch_len(code: &[u8]) -> Option<(usize, usize)> {
    let start = if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
        4
    } else {
        0
    };
    let mut i = start;
    loop {
        let rest = code.get(i..)?;
        let n = match rest {
            // mov (%rdi),%rax
            [0x48, 0x8b, 0x07, ..] => 3,
            // movzbl %sil,%esi (the bool of convey_advance)
            [0x40, 0x0f, 0xb6, 0xf6, ..] => 4,
            // jmp *(%rax) / jmp *disp8(%rax) / jmp *disp32(%rax): the end
            [0xff, 0x20, ..] => return Some((start, i + 2 - start)),
            [0xff, 0x60, _, ..] => return Some((start, i + 3 - start)),
            [0xff, 0xa0, _, _, _, _, ..] => return Some((start, i + 6 - start)),
            _ => return None,
        };
        i += n;
        if i - start > 24 {
            return None;
        }
    }
}

/// `jmp *0(%rip)` followed by the 8-byte absolute target: 14 bytes, any distance.
fn abs_jump(to: usize) -> [u8; 14] {
    let mut j = [0xff, 0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    j[6..].copy_from_slice(&(to as u64).to_le_bytes());
    j
}

/// The first instructions of a function at `addr` (its code: `code`), at least 5
/// bytes of them, moved elsewhere: how many bytes they take at `addr`, and their
/// relocated code (to run anywhere, followed by a jump back to `addr` + that
/// many bytes). Only instructions known to mean the same anywhere are taken:
/// `endbr64`, pushes, register-to-register moves, tests and xors, `sub
/// $imm8,%rsp`, and conditional jumps, rewritten as a jump over an absolute
/// jump to their target (gcc's `test %rdi,%rdi; je ...` argument check at the
/// top of bale's `convey_begin`, `convey_advance`, `convey_free`). None when
/// anything else comes first: then the function is not hooked.
pub fn relocate_prologue(code: &[u8], addr: usize) -> Option<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < 5 {
        let rest = code.get(i..)?;
        let reg = |m: u8| m >> 6 == 3;
        let n = match rest {
            [0xf3, 0x0f, 0x1e, 0xfa, ..] => 4,
            // push %reg / push %r8-15
            [0x50..=0x57, ..] => 1,
            [0x41, 0x50..=0x57, ..] => 2,
            // mov/movslq/test/xor between registers (mod = 11), 64- or 32-bit
            [0x48 | 0x49 | 0x4c | 0x4d, 0x89 | 0x8b | 0x63 | 0x85 | 0x31, m, ..] if reg(*m) => 3,
            [0x89 | 0x8b | 0x31 | 0x85, m, ..] if reg(*m) => 2,
            [0x41 | 0x44 | 0x45, 0x89 | 0x8b | 0x31 | 0x85, m, ..] if reg(*m) => 3,
            // sub $imm8,%rsp
            [0x48, 0x83, 0xec, _, ..] => 4,
            // jcc rel8 / jcc rel32: the inverted jcc skips an absolute jump
            [op @ 0x70..=0x7f, rel, ..] => {
                let target = (addr + i + 2).wrapping_add_signed(isize::from(*rel as i8));
                out.extend_from_slice(&[op ^ 1, 14]);
                out.extend_from_slice(&abs_jump(target));
                i += 2;
                continue;
            }
            [0x0f, op @ 0x80..=0x8f, r0, r1, r2, r3, ..] => {
                let rel = i32::from_le_bytes([*r0, *r1, *r2, *r3]) as isize;
                let target = (addr + i + 6).wrapping_add_signed(rel);
                out.extend_from_slice(&[(0x70 | (op & 0x0f)) ^ 1, 14]);
                out.extend_from_slice(&abs_jump(target));
                i += 6;
                continue;
            }
            _ => return None,
        };
        out.extend_from_slice(&rest[..n]);
        i += n;
    }
    Some((i, out))
}

/// The porter's local send (bale's `local_send(porter_t*, int dest, uint64_t
/// level, size_t n_bytes, buffer_t*, uint64_t signal)`: a memcpy into the
/// peer's buffer through a `shmem_ptr` address), continued past its prologue.
static LOCAL_SEND: AtomicUsize = AtomicUsize::new(0);

/// The remote porter's progress (bale's `nonblock_progress(porter_t*, int
/// dest)`: `shmem_quiet`, then a signal put per destination whose buffers it
/// completed), continued past its prologue.
static NONBLOCK_PROGRESS: AtomicUsize = AtomicUsize::new(0);

/// A page holding a stub that jumps to `hook` (at 0) and the trampoline of the
/// function at `addr` (at 16: its relocated first instructions, then a jump
/// back after them), made read-execute; returns the page.
fn prologue_page(name: &'static str, addr: usize, hook: usize) -> Result<usize, HookError> {
    // SAFETY: `addr` is a function of the loaded executable (its symbol); 32
    // bytes of text are readable there.
    let code = unsafe { std::slice::from_raw_parts(addr as *const u8, 32) };
    let (len, moved) = relocate_prologue(code, addr).ok_or_else(|| {
        HookError::Pattern(
            name,
            code[..12]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" "),
        )
    })?;
    let page = map_near(addr).ok_or(HookError::Near(name))?;
    // SAFETY: `page` is a fresh read-write page of 4096 bytes; the stub, the
    // moved instructions (at most 5 of 16 bytes each) and the jump back fit.
    unsafe {
        let p = std::slice::from_raw_parts_mut(page, 4096);
        p[..14].copy_from_slice(&abs_jump(hook));
        p[16..16 + moved.len()].copy_from_slice(&moved);
        let back = 16 + moved.len();
        p[back..back + 14].copy_from_slice(&abs_jump(addr + len));
        if libc::mprotect(page as *mut c_void, 4096, libc::PROT_READ | libc::PROT_EXEC) != 0 {
            return Err(HookError::Protect(name, std::io::Error::last_os_error()));
        }
    }
    Ok(page as usize)
}

/// Hooks the local function `name` at `addr` (an ordinary prologue, relocated
/// into the trampoline, which jumps back after it) so that it goes to `hook`;
/// `ready` receives the trampoline before the function is patched.
fn hook_prologue(
    name: &'static str,
    addr: usize,
    hook: usize,
    ready: &AtomicUsize,
) -> Result<(), HookError> {
    let page = prologue_page(name, addr, hook)?;
    ready.store(page + 16, Ordering::Release);
    if let Err(e) = patch_jump(name, addr, page) {
        ready.store(0, Ordering::Release);
        return Err(e);
    }
    Ok(())
}

/// Writes `jmp rel32` to `to` over the 5 bytes at `at`.
fn patch_jump(name: &'static str, at: usize, to: usize) -> Result<(), HookError> {
    let rel = (to as i64) - (at as i64 + 5);
    let mut patch = [0xe9u8, 0, 0, 0, 0];
    patch[1..].copy_from_slice(&(rel as i32).to_le_bytes());
    let first = at & !4095;
    let span = (at + 5 - first).div_ceil(4096) * 4096;
    // SAFETY: the pages are the executable's text; made writable for the 5-byte
    // write (before main: no other thread runs this code), then read-execute.
    unsafe {
        let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
        if libc::mprotect(first as *mut c_void, span, rwx) != 0 {
            return Err(HookError::Protect(name, std::io::Error::last_os_error()));
        }
        std::ptr::copy_nonoverlapping(patch.as_ptr(), at as *mut u8, 5);
        libc::mprotect(
            first as *mut c_void,
            span,
            libc::PROT_READ | libc::PROT_EXEC,
        );
    }
    Ok(())
}

/// The porter's local send ran: a buffer of `n_bytes` memcpy'd to `dest`
/// (bale's `static bool local_send(...)`: its value is the caller's; a call
/// with 0 bytes only signals, and is no buffer).
unsafe extern "C" fn hook_local_send(
    p: *mut c_void,
    dest: c_int,
    level: u64,
    n_bytes: usize,
    buf: *mut c_void,
    signal: u64,
) -> bool {
    // SAFETY: the trampoline is local_send's own prologue and the jump back.
    let f: unsafe extern "C" fn(*mut c_void, c_int, u64, usize, *mut c_void, u64) -> bool =
        unsafe { std::mem::transmute(LOCAL_SEND.load(Ordering::Relaxed)) };
    // SAFETY: forwarding the caller's arguments.
    let sent = unsafe { f(p, dest, level, n_bytes, buf, signal) };
    if n_bytes > 0 {
        kprof_abi::guard::guard((), || {
            if crate::core_table::api().is_some() {
                crate::dispatch::local_send(p as usize, dest, n_bytes as u64);
            }
        });
    }
    sent
}

/// The remote porter's progress ran (bale's `static bool
/// nonblock_progress(porter_t*, int dest)`, true when it completed the puts in
/// flight: its `shmem_quiet` and the signal puts that follow it, which the
/// OpenSHMEM wrappers count in the progress row while it runs). No clock is
/// read: it runs about once per message.
unsafe extern "C" fn hook_nonblock_progress(p: *mut c_void, dest: c_int) -> bool {
    // SAFETY: the trampoline is nonblock_progress's own prologue and the jump back.
    let f: unsafe extern "C" fn(*mut c_void, c_int) -> bool =
        unsafe { std::mem::transmute(NONBLOCK_PROGRESS.load(Ordering::Relaxed)) };
    state::IN_PROGRESS.store(true, Ordering::Relaxed);
    // SAFETY: forwarding the caller's arguments.
    let forced = unsafe { f(p, dest) };
    state::IN_PROGRESS.store(false, Ordering::Relaxed);
    kprof_abi::guard::guard((), || {
        if crate::core_table::api().is_some() {
            state::progress(forced);
        }
    });
    forced
}

/// What the executable's symbol table says.
struct Found {
    /// The entries' addresses, by [`ENTRIES`] index (None: absent).
    entries: [Option<usize>; 7],
    /// The link-time wrappers are linked in.
    wrapped: bool,
    /// The porter's `local_send` (None: absent, or several of that name).
    local_send: Option<usize>,
    /// The porter's `nonblock_progress` (None: absent, or several).
    nonblock_progress: Option<usize>,
}

/// The executable's entries, wrappers and porter, from its symbol table.
fn find_entries() -> Result<Found, HookError> {
    let path = std::fs::read_link("/proc/self/exe").map_err(|e| HookError::Read(e.to_string()))?;
    let data = std::fs::read(&path).map_err(|e| HookError::Read(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| HookError::Read(e.to_string()))?;
    // SAFETY: getauxval has no preconditions; AT_ENTRY is the loaded entry point.
    let entry = unsafe { libc::getauxval(libc::AT_ENTRY) } as usize;
    let bias = entry.wrapping_sub(file.entry() as usize);
    let mut found = [None; 7];
    let mut wrapped = false;
    // (address, functions of that name) of the porter's methods.
    let mut local_send = (None, 0);
    let mut nonblock_progress = (None, 0);
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        if sym.is_undefined() {
            continue;
        }
        if name == "__wrap_convey_push" {
            wrapped = true;
        }
        if let Some(i) = ENTRIES.iter().position(|e| *e == name) {
            found[i] = Some(bias.wrapping_add(sym.address() as usize));
        }
        let method = match name {
            "local_send" => &mut local_send,
            "nonblock_progress" => &mut nonblock_progress,
            _ => continue,
        };
        if sym.kind() == object::SymbolKind::Text {
            *method = (
                Some(bias.wrapping_add(sym.address() as usize)),
                method.1 + 1,
            );
        }
    }
    // Two functions of a name: not knowing which is the porter's, neither.
    let one = |(addr, n): (Option<usize>, u32)| addr.filter(|_| n == 1);
    Ok(Found {
        entries: found,
        wrapped,
        local_send: one(local_send),
        nonblock_progress: one(nonblock_progress),
    })
}

/// A page mapped read-write within +-2 GiB of `near` (None when none is free).
fn map_near(near: usize) -> Option<*mut u8> {
    const PAGE: usize = 4096;
    const STEP: usize = 1 << 24;
    let base = near & !(PAGE - 1);
    for k in 1..120usize {
        for hint in [base.checked_sub(k * STEP), base.checked_add(k * STEP)]
            .into_iter()
            .flatten()
        {
            // SAFETY: an anonymous mapping at a free address (MAP_FIXED_NOREPLACE
            // never replaces an existing mapping).
            let p = unsafe {
                libc::mmap(
                    hint as *mut c_void,
                    PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                if (p as usize).abs_diff(near) < (1 << 31) - PAGE {
                    return Some(p as *mut u8);
                }
                // SAFETY: unmapping the page just mapped.
                unsafe { libc::munmap(p, PAGE) };
            }
        }
    }
    None
}

/// Hooks entry `i` at `addr` so that it jumps to `hook`.
fn hook_one(i: usize, addr: usize, hook: usize) -> Result<(), HookError> {
    let name = ENTRIES[i];
    // SAFETY: `addr` is the entry of a function of the loaded executable (its
    // symbol); 32 bytes of its text are readable (functions are padded and
    // followed by more text).
    let code = unsafe { std::slice::from_raw_parts(addr as *const u8, 32) };
    let hex = || {
        code[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let Some((skip, len)) = dispatch_len(code).filter(|&(_, len)| len >= 5) else {
        // Not a bare dispatch (bale's convey_begin, convey_advance and
        // convey_free check their argument first): an ordinary prologue,
        // relocated.
        return hook_prologue(name, addr, hook, &TRAMPOLINES[i]).map_err(|e| match e {
            HookError::Pattern(..) => HookError::Pattern(name, hex()),
            e => e,
        });
    };
    let at = addr + skip;
    let page = map_near(at).ok_or(HookError::Near(name))?;
    // Page layout: stub (14 bytes) at 0, trampoline (the dispatch) at 16.
    // SAFETY: `page` is a fresh read-write page of 4096 bytes.
    unsafe {
        let stub = std::slice::from_raw_parts_mut(page, 4096);
        stub[..6].copy_from_slice(&[0xff, 0x25, 0, 0, 0, 0]);
        stub[6..14].copy_from_slice(&(hook as u64).to_le_bytes());
        stub[16..16 + len].copy_from_slice(&code[skip..skip + len]);
        if libc::mprotect(page as *mut c_void, 4096, libc::PROT_READ | libc::PROT_EXEC) != 0 {
            return Err(HookError::Protect(name, std::io::Error::last_os_error()));
        }
    }
    TRAMPOLINES[i].store(page as usize + 16, Ordering::Release);
    if let Err(e) = patch_jump(name, at, page as usize) {
        TRAMPOLINES[i].store(0, Ordering::Release);
        return Err(e);
    }
    Ok(())
}

/// The hook functions, by [`ENTRIES`] index.
fn hooks() -> [usize; 7] {
    [
        hook_begin as *const () as usize,
        hook_push as *const () as usize,
        hook_pull as *const () as usize,
        hook_advance as *const () as usize,
        hook_free as *const () as usize,
        hook_epush as *const () as usize,
        hook_epull as *const () as usize,
    ]
}

/// Installs the hooks (the library's constructor): nothing when the program
/// has no Conveyors or holds the link-time wrappers; one line per entry that
/// cannot be hooked.
pub fn install() {
    if !cfg!(target_arch = "x86_64")
        || kprof_tables::settings::actor::ACTOR_HOOK
            .get()
            .is_some_and(|v| v.trim() == "0")
        || kprof_tables::settings::core::ENABLE
            .get()
            .is_some_and(|v| v.trim() == "0")
    {
        return;
    }
    let Found {
        entries: found,
        wrapped,
        local_send,
        nonblock_progress,
    } = match find_entries() {
        Ok(f) => f,
        Err(_) => return, // not an ELF we can read: nothing to hook
    };
    if found.iter().all(Option::is_none) {
        return;
    }
    let mut failed = Vec::new();
    // The porter's local path (a memcpy, no OpenSHMEM call) and the remote
    // path's progress: by either route.
    let methods = [
        (
            "local_send",
            local_send,
            hook_local_send as *const () as usize,
            &LOCAL_SEND,
        ),
        (
            "nonblock_progress",
            nonblock_progress,
            hook_nonblock_progress as *const () as usize,
            &NONBLOCK_PROGRESS,
        ),
    ];
    for (name, addr, hook, trampoline) in methods {
        if let Some(addr) = addr {
            if let Err(e) = hook_prologue(name, addr, hook, trampoline) {
                failed.push(e.to_string());
            }
        }
    }
    if wrapped {
        if !failed.is_empty() {
            crate::say::warn(&format!(
                "the porter's local path or progress is not counted ({})",
                failed.join("; ")
            ));
        }
        crate::connect::api_or_connect();
        return;
    }
    let hooks = hooks();
    let mut hooked = 0;
    for (i, addr) in found.iter().enumerate() {
        if let Some(addr) = addr {
            match hook_one(i, *addr, hooks[i]) {
                Ok(()) => hooked += 1,
                Err(e) => failed.push(e.to_string()),
            }
        }
    }
    if hooked > 0 {
        // Start measuring now rather than in the first hooked call (which
        // would put the core's start-up inside the program's first phase).
        crate::connect::api_or_connect();
    }
    if !failed.is_empty() {
        crate::say::warn(&format!(
            "Conveyors' entries not hooked ({}): link the program with kprof's wrappers (see kprof_actor.h)",
            failed.join("; ")
        ));
    }
}

/// Runs entry `op` of conveyor `c` (`call`, the trampoline with the caller's
/// arguments) between the clock reads, and books it: `report` gives the
/// call's peer PE and argument from its return value (read after the call:
/// a pull's source). While kprof is off the entry only runs.
///
/// This is the whole per-call path of the load-time hooks: one load says what
/// to measure ([`mod@crate::core_table::mode`]), and the booking of a push,
/// pull or advance of the conveyor looked up last is inlined here
/// ([`crate::dispatch::booked`]).
#[inline(always)]
fn around(
    c: *mut c_void,
    op: c_int,
    call: impl FnOnce() -> c_int,
    report: impl FnOnce(c_int) -> (i64, u64),
) -> c_int {
    let mode = crate::connect::mode_or_connect();
    if mode == 0 {
        return call();
    }
    let timing = mode & crate::core_table::mode::TIMING != 0;
    let t0 = if timing {
        let t0 = crate::clock::ticks();
        if mode & crate::core_table::mode::SEGMENTS != 0 {
            crate::segments::enter_call(op == op::BEGIN);
        }
        t0
    } else {
        0
    };
    state::set_current(c as usize);
    let rc = call();
    state::set_current(0);
    let rc64 = i64::from(rc);
    if !timing
        && (op == op::ADVANCE
            || (rc64 == state::CONVEY_FAIL
                && matches!(op, op::PUSH | op::PULL | op::EPUSH | op::EPULL)))
    {
        // Messages only: a failed push or pull is no message, an advance
        // nothing to count.
        return rc;
    }
    let now = if timing { crate::clock::ticks() } else { 0 };
    let (pe, arg) = report(rc);
    kprof_abi::guard::guard((), || {
        crate::dispatch::booked(
            mode,
            state::Call {
                key: c as usize,
                op,
                rc: rc64,
                pe,
                arg,
                t0,
                now,
            },
        )
    });
    rc
}

/// The trampoline of entry `i`.
#[inline(always)]
fn original(i: usize) -> usize {
    TRAMPOLINES[i].load(Ordering::Relaxed)
}

unsafe extern "C" fn hook_begin(c: *mut c_void, size: usize, align: usize) -> c_int {
    // SAFETY: the trampoline is convey_begin's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, usize, usize) -> c_int =
        unsafe { std::mem::transmute(original(0)) };
    around(
        c,
        op::BEGIN,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { f(c, size, align) },
        |_| (0, size as u64),
    )
}

unsafe extern "C" fn hook_push(c: *mut c_void, item: *const c_void, pe: i64) -> c_int {
    // SAFETY: the trampoline is convey_push's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, *const c_void, i64) -> c_int =
        unsafe { std::mem::transmute(original(1)) };
    around(
        c,
        op::PUSH,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { f(c, item, pe) },
        |_| (pe, 0),
    )
}

unsafe extern "C" fn hook_pull(c: *mut c_void, item: *mut c_void, from: *mut i64) -> c_int {
    // SAFETY: the trampoline is convey_pull's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64) -> c_int =
        unsafe { std::mem::transmute(original(2)) };
    let mut src: i64 = -1;
    let where_ = if from.is_null() {
        &mut src as *mut i64
    } else {
        from
    };
    around(
        c,
        op::PULL,
        // SAFETY: the caller's arguments; `where_` is the caller's pointer or our local.
        || unsafe { f(c, item, where_) },
        // SAFETY: `where_` was written by convey_pull (or still holds -1).
        |_| (unsafe { *where_ }, 0),
    )
}

unsafe extern "C" fn hook_advance(c: *mut c_void, done: bool) -> c_int {
    // SAFETY: the trampoline is convey_advance's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, bool) -> c_int =
        unsafe { std::mem::transmute(original(3)) };
    around(
        c,
        op::ADVANCE,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { f(c, done) },
        |_| (0, u64::from(done)),
    )
}

unsafe extern "C" fn hook_free(c: *mut c_void) -> c_int {
    // SAFETY: the trampoline is convey_free's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void) -> c_int = unsafe { std::mem::transmute(original(4)) };
    around(
        c,
        op::FREE,
        // SAFETY: forwarding the caller's argument.
        || unsafe { f(c) },
        |_| (0, 0),
    )
}

unsafe extern "C" fn hook_epush(
    c: *mut c_void,
    bytes: usize,
    item: *const c_void,
    pe: i64,
) -> c_int {
    // SAFETY: the trampoline is convey_epush's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, usize, *const c_void, i64) -> c_int =
        unsafe { std::mem::transmute(original(5)) };
    around(
        c,
        op::EPUSH,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { f(c, bytes, item, pe) },
        |_| (pe, bytes as u64),
    )
}

/// Conveyors' `convey_item_t` (bale 3.0): what `convey_epull` fills.
#[repr(C)]
pub struct ConveyItem {
    /// The item's size in bytes.
    pub bytes: usize,
    /// The item (valid until the next pull).
    pub data: *mut c_void,
    /// The PE that pushed it.
    pub from: i64,
}

unsafe extern "C" fn hook_epull(c: *mut c_void, result: *mut ConveyItem) -> c_int {
    // SAFETY: the trampoline is convey_epull's own code, with its signature.
    let f: unsafe extern "C" fn(*mut c_void, *mut ConveyItem) -> c_int =
        unsafe { std::mem::transmute(original(6)) };
    around(
        c,
        op::EPULL,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { f(c, result) },
        |rc| {
            if i64::from(rc) == state::CONVEY_OK && !result.is_null() {
                // SAFETY: convey_epull returned OK: it filled the caller's `*result`.
                let r = unsafe { &*result };
                (r.from, r.bytes as u64)
            } else {
                (-1, 0)
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::dispatch_len;

    #[test]
    fn dispatch_patterns() {
        // convey_push of bale 3.0 / the stand-in: mov (%rdi),%rax; jmp *0x8(%rax)
        assert_eq!(
            dispatch_len(&[0x48, 0x8b, 0x07, 0xff, 0x60, 0x08, 0x66]),
            Some((0, 6))
        );
        // convey_begin: jmp *(%rax)
        assert_eq!(
            dispatch_len(&[0x48, 0x8b, 0x07, 0xff, 0x20, 0x66]),
            Some((0, 5))
        );
        // convey_advance: movzbl %sil,%esi between
        assert_eq!(
            dispatch_len(&[0x48, 0x8b, 0x07, 0x40, 0x0f, 0xb6, 0xf6, 0xff, 0x60, 0x18]),
            Some((0, 10))
        );
        // with endbr64 (CET builds)
        assert_eq!(
            dispatch_len(&[0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x07, 0xff, 0x60, 0x10]),
            Some((4, 6))
        );
        // a real prologue (push %rbp) is not a dispatch
        assert_eq!(dispatch_len(&[0x55, 0x48, 0x89, 0xe5]), None);
        assert_eq!(dispatch_len(&[0x48, 0x8b, 0x07]), None);
    }

    #[test]
    fn prologue_patterns() {
        use super::relocate_prologue;
        let len = |code: &[u8]| relocate_prologue(code, 0x1000).map(|(n, _)| n);
        // push %r12; mov %rdi,%r12 (the stand-in's local_send)
        assert_eq!(len(&[0x41, 0x54, 0x49, 0x89, 0xfc, 0x55]), Some(5));
        // push %rbp; mov %rdi,%rbp; push %rbx
        assert_eq!(len(&[0x55, 0x48, 0x89, 0xfd, 0x53, 0x48]), Some(5));
        // endbr64; push %rbp; ...
        assert_eq!(len(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x53]), Some(5));
        // a RIP-relative load in the first bytes: refused
        assert_eq!(len(&[0x48, 0x8b, 0x05, 0, 0, 0, 0]), None);
        // a call in the first bytes: refused
        assert_eq!(len(&[0x55, 0xe8, 0, 0, 0, 0]), None);
    }

    #[test]
    fn conditional_jumps_become_absolute() {
        use super::relocate_prologue;
        // bale 3.0's convey_begin (gcc 12 -O2): test %rdi,%rdi; je +0x106
        let code = [0x48, 0x85, 0xff, 0x0f, 0x84, 0x06, 0x01, 0x00, 0x00, 0x53];
        let (n, out) = relocate_prologue(&code, 0x320).unwrap();
        assert_eq!(n, 9);
        assert_eq!(&out[..3], &[0x48, 0x85, 0xff]);
        // jne over the absolute jump to 0x320 + 9 + 0x106 = 0x42f
        assert_eq!(&out[3..5], &[0x75, 14]);
        assert_eq!(&out[5..7], &[0xff, 0x25]);
        assert_eq!(u64::from_le_bytes(out[11..19].try_into().unwrap()), 0x42f);
        // convey_free: test %rdi,%rdi; je rel8 +0x6b
        let code = [0x48, 0x85, 0xff, 0x74, 0x6b, 0x53];
        let (n, out) = relocate_prologue(&code, 0x5f0).unwrap();
        assert_eq!(n, 5);
        assert_eq!(&out[3..5], &[0x75, 14]);
        assert_eq!(u64::from_le_bytes(out[11..19].try_into().unwrap()), 0x660);
    }
}
