//! Kernel names as unchanging strings, so the core can take them by pointer.
//!
//! RAJA hands a kernel's name as the `std::string` of a `PluginContext` that it
//! builds for every launch: for names of up to 15 bytes the text lives inside the
//! context on the launching stack frame (libstdc++'s inline buffer), longer ones
//! in a fresh heap block. The pointer therefore says nothing about the text, and
//! the core's checked `begin` compares the text with its cached copy on every
//! kernel. This table maps the text itself to a copy that is never freed, which
//! the core's `begin_static` then trusts by pointer: a name of up to 15 bytes is
//! recognised from its length and two 8-byte loads (which cover it entirely, NUL
//! included), a longer one from those plus one comparison with the copy.
//!
//! The table is process-wide and lock-free: a slot is filled once (the only
//! allocation, on a name's first launch) and never changes after. A launch after
//! a name's first ([`cached`]) reads it without calling anything: a few loads
//! and compares, in registers. Names that do
//! not fit (a full neighbourhood, a slot being filled by another thread, a name
//! over [`MAX_CACHED`] bytes) are not cached: the caller falls back to the core's
//! checked `begin`.

use std::ffi::c_char;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Slots in the table (a power of two).
const SLOTS: usize = 1024;
/// Slots tried from a name's home slot.
const PROBES: usize = 8;
/// The longest name cached (longer ones take the core's checked path).
pub const MAX_CACHED: usize = 1024;
/// Names up to this length are identified by their length and key words alone.
pub const EXACT: usize = 15;

/// A slot's `tag` while empty (no name has length 0).
const EMPTY: usize = 0;
/// A slot's `tag` while a thread fills it.
const BUSY: usize = usize::MAX;

/// One name: 32 bytes.
struct Slot {
    /// [`EMPTY`], [`BUSY`], or the name's length once the rest is written
    /// (stored last, with Release): one load tells both whether the slot is
    /// filled and whether the length matches.
    tag: AtomicUsize,
    w0: AtomicU64,
    w1: AtomicU64,
    copy: AtomicPtr<c_char>,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            tag: AtomicUsize::new(EMPTY),
            w0: AtomicU64::new(0),
            w1: AtomicU64::new(0),
            copy: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Whether the slot holds a name of length `len` (>= 1) with key words
    /// `w0`, `w1`. The Acquire load of the tag makes the other fields readable.
    #[inline(always)]
    fn holds(&self, len: usize, w0: u64, w1: u64) -> bool {
        self.tag.load(Ordering::Acquire) == len
            && self.w0.load(Ordering::Relaxed) == w0
            && self.w1.load(Ordering::Relaxed) == w1
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// The two key words of a name: its first and last 8 bytes including the NUL,
/// overlapping for short names (with the length, they determine a name of up to
/// [`EXACT`] bytes); for a name shorter than 7 bytes, its first and last 4 (or 2)
/// bytes including the NUL in one word.
///
/// # Safety
/// `ptr[0..=len]` must be readable.
#[inline(always)]
unsafe fn key(ptr: *const c_char, len: usize) -> (u64, u64) {
    let n = len + 1;
    let p = ptr.cast::<u8>();
    // SAFETY: every read lies within 0..n, given the size checked before it.
    unsafe {
        if n >= 8 {
            (
                std::ptr::read_unaligned(p.cast::<u64>()),
                std::ptr::read_unaligned(p.add(n - 8).cast::<u64>()),
            )
        } else if n >= 4 {
            let lo = std::ptr::read_unaligned(p.cast::<u32>());
            let hi = std::ptr::read_unaligned(p.add(n - 4).cast::<u32>());
            (u64::from(lo) | u64::from(hi) << 32, 0)
        } else {
            let lo = std::ptr::read_unaligned(p.cast::<u16>());
            let hi = std::ptr::read_unaligned(p.add(n - 2).cast::<u16>());
            (u64::from(lo) | u64::from(hi) << 16, 0)
        }
    }
}

/// The name's home slot: one multiplication of its mixed key.
#[inline(always)]
fn home(len: usize, w0: u64, w1: u64) -> usize {
    let x = w0 ^ w1.rotate_left(29) ^ len as u64;
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % SLOTS
}

/// Where the probe for a name ended.
enum Probe {
    /// The table holds it: its unchanging copy.
    Found(*const c_char),
    /// Not in the table: the first empty slot of its neighbourhood, and its key
    /// words.
    Empty(&'static Slot, u64, u64),
    /// Not in the table, and no empty slot nearby.
    Full,
}

/// Looks the `len`-byte (1 to [`MAX_CACHED`]) name at `ptr` up.
///
/// # Safety
/// `ptr[0..len]` is the name and `ptr[len]` a readable NUL (see `check_name`).
#[inline(always)]
unsafe fn probe(ptr: *const c_char, len: usize) -> Probe {
    // SAFETY: the caller's contract.
    let (w0, w1) = unsafe { key(ptr, len) };
    let h = home(len, w0, w1);
    for i in 0..PROBES {
        let slot = &TABLE[(h + i) % SLOTS];
        if slot.holds(len, w0, w1) {
            let copy = slot.copy.load(Ordering::Relaxed);
            // SAFETY: the copy holds len bytes and its NUL (same length); the
            // caller's name too.
            if len <= EXACT || unsafe { same_middle(copy, ptr, len) } {
                return Probe::Found(copy);
            }
        } else if slot.tag.load(Ordering::Relaxed) == EMPTY {
            return Probe::Empty(slot, w0, w1);
        }
    }
    Probe::Full
}

/// The unchanging copy of the `len`-byte name at `ptr` when the table holds it
/// already (no copy is made): a kernel's launches after its first. `None` for
/// a name not in the table yet.
///
/// # Safety
/// `ptr[0..len]` is the name and `ptr[len]` a readable NUL (see `check_name`).
#[inline(always)]
pub unsafe fn cached(ptr: *const c_char, len: usize) -> Option<*const c_char> {
    if len.wrapping_sub(1) >= MAX_CACHED {
        return None;
    }
    // SAFETY: the caller's contract.
    match unsafe { probe(ptr, len) } {
        Probe::Found(copy) => Some(copy),
        Probe::Empty(..) | Probe::Full => None,
    }
}

/// The unchanging copy of the `len`-byte name at `ptr`, made on first sight;
/// `None` when the name is not cached (the caller passes `ptr` to the checked
/// path instead).
///
/// # Safety
/// `ptr[0..len]` is the name and `ptr[len]` a readable NUL (see `check_name`).
pub unsafe fn unchanging(ptr: *const c_char, len: usize) -> Option<*const c_char> {
    if len == 0 || len > MAX_CACHED {
        return None;
    }
    // SAFETY: the caller's contract.
    match unsafe { probe(ptr, len) } {
        Probe::Found(copy) => Some(copy),
        // SAFETY: the caller's contract, as for the probe.
        Probe::Empty(slot, w0, w1) => unsafe { fill(slot, ptr, len, w0, w1) },
        Probe::Full => None,
    }
}

/// Whether the names of `len` (over [`EXACT`]) bytes at `a` and `b`, whose key
/// words (their first and last 8 bytes with the NUL) are equal, are equal: the
/// bytes between, 8 at a time (the last word overlapping the one before). A loop
/// of loads rather than a call to `memcmp`, so that the launch's fast path calls
/// nothing but the core.
///
/// # Safety
/// Both are readable for `len + 1` bytes; `len > EXACT`.
#[inline(always)]
unsafe fn same_middle(a: *const c_char, b: *const c_char, len: usize) -> bool {
    let (a, b) = (a.cast::<u8>(), b.cast::<u8>());
    // SAFETY: at + 8 <= end <= len + 1: the word lies within both names.
    let word =
        |p: *const u8, at: usize| unsafe { std::ptr::read_unaligned(p.add(at).cast::<u64>()) };
    // Bytes [8, end) are left to compare; end >= 9 as len >= 16.
    let end = len + 1 - 8;
    let mut at = 8;
    while at + 8 < end {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, end - 8) == word(b, end - 8)
}

/// Fills an empty slot with a copy of the name, unless another thread got there
/// first.
///
/// # Safety
/// As [`unchanging`].
#[cold]
#[inline(never)]
unsafe fn fill(
    slot: &Slot,
    ptr: *const c_char,
    len: usize,
    w0: u64,
    w1: u64,
) -> Option<*const c_char> {
    if slot
        .tag
        .compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    let mut copy = Vec::with_capacity(len + 1);
    // SAFETY: the caller's contract: len bytes, then the NUL.
    copy.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len + 1) });
    let copy: &'static mut [u8] = Box::leak(copy.into_boxed_slice());
    let copy = copy.as_mut_ptr().cast::<c_char>();
    slot.w0.store(w0, Ordering::Relaxed);
    slot.w1.store(w1, Ordering::Relaxed);
    slot.copy.store(copy, Ordering::Relaxed);
    slot.tag.store(len, Ordering::Release);
    Some(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn get(s: &[u8]) -> Option<*const c_char> {
        let mut v = s.to_vec();
        v.push(0);
        // SAFETY: NUL-terminated, alive during the call.
        unsafe { unchanging(v.as_ptr().cast(), s.len()) }
    }

    fn text(p: *const c_char) -> &'static str {
        // SAFETY: copies are NUL-terminated and never freed.
        unsafe { CStr::from_ptr(p) }.to_str().expect("utf8")
    }

    fn lookup(s: &[u8]) -> Option<*const c_char> {
        let mut v = s.to_vec();
        v.push(0);
        // SAFETY: NUL-terminated, alive during the call.
        unsafe { cached(v.as_ptr().cast(), s.len()) }
    }

    #[test]
    fn lookup_finds_only_names_copied_before() {
        for len in [
            1, 2, 3, 6, 7, 8, 15, 16, 17, 23, 24, 25, 31, 40, 100, MAX_CACHED,
        ] {
            let name: Vec<u8> = (0..len).map(|i| b'A' + (i * 7 % 26) as u8).collect();
            assert_eq!(lookup(&name), None, "len {len}: not copied yet");
            let copy = get(&name).expect("cached");
            assert_eq!(lookup(&name), Some(copy), "len {len}");
            // Any one byte changed (never copied): not that copy.
            for at in 0..len.min(64) {
                let mut other = name.clone();
                other[at] = b'z';
                assert_ne!(lookup(&other), Some(copy), "len {len} at {at}");
            }
            let mut longer = name.clone();
            longer.push(b'A');
            assert_ne!(lookup(&longer), Some(copy), "len {len} + 1");
        }
        assert_eq!(lookup(b""), None);
        assert_eq!(lookup(&vec![b'x'; MAX_CACHED + 1]), None);
    }

    #[test]
    fn same_text_same_copy_any_length() {
        for len in (1..=40).chain([100, MAX_CACHED]) {
            let name: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let a = get(&name).expect("cached");
            assert_eq!(get(&name), Some(a), "len {len}");
            assert_eq!(text(a).as_bytes(), &name[..]);
            // One byte changed anywhere: another name, another copy.
            for at in [0, len / 2, len - 1] {
                let mut other = name.clone();
                other[at] = b'Z';
                let b = get(&other).expect("cached");
                assert_ne!(a, b, "len {len} at {at}");
                assert_eq!(text(b).as_bytes(), &other[..]);
            }
        }
        // A prefix is another name.
        let long = get(b"kernel_long_name_number_one").expect("cached");
        let prefix = get(b"kernel_long_name_number_on").expect("cached");
        assert_ne!(long, prefix);
        assert_eq!(text(prefix), "kernel_long_name_number_on");
        assert_eq!(get(&vec![b'x'; MAX_CACHED + 1]), None);
        assert_eq!(get(b""), None);
    }

    #[test]
    fn names_differing_only_in_the_middle_of_a_long_name() {
        // Same length, first and last 8 bytes equal: told apart by the comparison.
        let a = get(b"prefix__AAAAAAAA__suffix").expect("cached");
        let b = get(b"prefix__BBBBBBBB__suffix").expect("cached");
        assert_ne!(a, b);
        assert_eq!(text(a), "prefix__AAAAAAAA__suffix");
        assert_eq!(text(b), "prefix__BBBBBBBB__suffix");
        // Their middles give them different homes: both are found by lookup
        // (the launch's fast path), neither taken for the other.
        assert_eq!(lookup(b"prefix__AAAAAAAA__suffix"), Some(a));
        assert_eq!(lookup(b"prefix__BBBBBBBB__suffix"), Some(b));
        let x = get(b"compute_flux_x_direction").expect("cached");
        let y = get(b"compute_flux_y_direction").expect("cached");
        assert_ne!(x, y);
        assert_eq!(lookup(b"compute_flux_x_direction"), Some(x));
        assert_eq!(lookup(b"compute_flux_y_direction"), Some(y));
    }
}
