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
//! allocation, on a name's first launch) and never changes after. Names that do
//! not fit (a full neighbourhood, a slot being filled by another thread, a name
//! over [`MAX_CACHED`] bytes) are not cached: the caller falls back to the core's
//! checked `begin`.

use std::ffi::c_char;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Slots in the table (a power of two).
const SLOTS: usize = 1024;
/// Slots tried from a name's home slot.
const PROBES: usize = 8;
/// The longest name cached (longer ones take the core's checked path).
pub const MAX_CACHED: usize = 1024;
/// Names up to this length are identified by their length and key words alone.
const EXACT: usize = 15;

const EMPTY: u8 = 0;
const BUSY: u8 = 1;
const FULL: u8 = 2;

struct Slot {
    state: AtomicU8,
    len: AtomicUsize,
    w0: AtomicU64,
    w1: AtomicU64,
    copy: AtomicPtr<c_char>,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(EMPTY),
            len: AtomicUsize::new(0),
            w0: AtomicU64::new(0),
            w1: AtomicU64::new(0),
            copy: AtomicPtr::new(std::ptr::null_mut()),
        }
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
    // SAFETY (all reads): each lies within 0..n, given the size checked before it.
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

#[inline(always)]
fn home(len: usize, w0: u64, w1: u64) -> usize {
    let x = w0 ^ w1.rotate_left(29) ^ (len as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % SLOTS
}

/// The unchanging copy of the `len`-byte name at `ptr`, made on first sight;
/// `None` when the name is not cached (the caller passes `ptr` to the checked
/// path instead).
///
/// # Safety
/// `ptr[0..len]` is the name and `ptr[len]` a readable NUL (see `check_name`).
#[inline(always)]
pub unsafe fn unchanging(ptr: *const c_char, len: usize) -> Option<*const c_char> {
    if len == 0 || len > MAX_CACHED {
        return None;
    }
    // SAFETY: the caller's contract.
    let (w0, w1) = unsafe { key(ptr, len) };
    let h = home(len, w0, w1);
    for i in 0..PROBES {
        let slot = &TABLE[(h + i) % SLOTS];
        match slot.state.load(Ordering::Acquire) {
            FULL if slot.len.load(Ordering::Relaxed) == len
                && slot.w0.load(Ordering::Relaxed) == w0
                && slot.w1.load(Ordering::Relaxed) == w1 =>
            {
                let copy = slot.copy.load(Ordering::Relaxed);
                // SAFETY: the copy holds len bytes (same length); the caller's
                // name too.
                if len <= EXACT || unsafe { same(copy, ptr, len) } {
                    return Some(copy);
                }
            }
            // SAFETY: the caller's contract.
            EMPTY => return unsafe { fill(slot, ptr, len, w0, w1) },
            _ => {}
        }
    }
    None
}

/// Whether `len` bytes at `a` and `b` are equal.
///
/// # Safety
/// Both are readable for `len` bytes.
unsafe fn same(a: *const c_char, b: *const c_char, len: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(a, len) == std::slice::from_raw_parts(b, len) }
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
        .state
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
    slot.len.store(len, Ordering::Relaxed);
    slot.w0.store(w0, Ordering::Relaxed);
    slot.w1.store(w1, Ordering::Relaxed);
    slot.copy.store(copy, Ordering::Relaxed);
    slot.state.store(FULL, Ordering::Release);
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
    }
}
