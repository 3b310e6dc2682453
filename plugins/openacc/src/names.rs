//! Names built from runtime strings: `func (file:line)` for constructs with a source
//! location, `kernel [gangs=G workers=W vector=V]` for launches, `acc device N`
//! memory spaces.
//!
//! Each thread keeps a small direct-mapped cache of the names it built, keyed by
//! the runtime's pointers and numbers and checked against a copy of the runtime's
//! strings (a runtime may reuse a buffer), so a repeated construct costs a hash and
//! a short comparison, never a formatting or an allocation, and the core sees the
//! same name pointer every time (its own cache hits).

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::fmt::Write as _;

/// Entries per thread.
const SLOTS: usize = 64;

/// What a name is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A source location: function, file, line.
    Source(*const c_char, *const c_char, i32),
    /// A kernel launch: kernel name and (gangs, workers, vector length).
    Launch(*const c_char, Option<(u64, u64, u64)>),
    /// A device memory space of device `n` (`present`: the present table).
    Space(i32, bool),
}

struct Entry {
    key: Key,
    /// Copies of the runtime strings the name was built from.
    inputs: [Option<Box<[u8]>>; 2],
    name: CString,
}

thread_local! {
    static CACHE: RefCell<Vec<Option<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of a runtime string (None for NULL).
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn bytes<'a>(p: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
}

fn slot(key: &Key) -> usize {
    let (a, b, c) = match *key {
        Key::Source(f, s, l) => (f as u64, s as u64, l as u64),
        Key::Launch(k, sh) => {
            let (g, w, v) = sh.unwrap_or((u64::MAX, 0, 0));
            (k as u64, g ^ w.rotate_left(21), v ^ 0x5a5a)
        }
        Key::Space(n, p) => (n as u64, u64::from(p), 0xace),
    };
    let h = (a ^ b.rotate_left(17) ^ c.rotate_left(41)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 58) as usize % SLOTS
}

/// The name for `key`, built once per thread and cached; `f` receives the cached
/// pointer (valid during the call; stable while the entry stays in the cache).
///
/// # Safety
/// The pointers in `key` are NULL or NUL-terminated.
pub unsafe fn with_name<R>(key: Key, f: impl FnOnce(*const c_char) -> R) -> R {
    let inputs = match key {
        Key::Source(func, file, _) => [func, file],
        Key::Launch(k, _) => [k, std::ptr::null()],
        Key::Space(..) => [std::ptr::null(), std::ptr::null()],
    };
    // SAFETY: caller's contract.
    let inputs = unsafe { [bytes(inputs[0]), bytes(inputs[1])] };
    let i = slot(&key);
    let hit = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.is_empty() {
            c.resize_with(SLOTS, || None);
        }
        let fresh = match &c[i] {
            Some(e) => {
                e.key != key
                    || e.inputs[0].as_deref() != inputs[0]
                    || e.inputs[1].as_deref() != inputs[1]
            }
            None => true,
        };
        if fresh {
            c[i] = Some(Entry {
                key,
                inputs: [inputs[0].map(Box::from), inputs[1].map(Box::from)],
                name: build(key, inputs),
            });
        }
        c[i].as_ref().map(|e| e.name.as_ptr())
    });
    match hit {
        Ok(Some(p)) => f(p),
        // Thread-local storage already destroyed (a callback during thread exit):
        // build a temporary name.
        _ => {
            let name = build(key, inputs);
            f(name.as_ptr())
        }
    }
}

/// The text of `key`'s name.
fn build(key: Key, inputs: [Option<&[u8]>; 2]) -> CString {
    fn text(b: Option<&[u8]>) -> Option<std::borrow::Cow<'_, str>> {
        b.map(String::from_utf8_lossy)
    }
    let mut s = String::new();
    match key {
        Key::Source(_, _, line) => {
            let func = text(inputs[0]);
            let file = text(inputs[1]);
            let file = file.as_deref().map(base_name);
            match (func, file) {
                (Some(func), Some(file)) if line > 0 => {
                    let _ = write!(s, "{func} ({file}:{line})");
                }
                (Some(func), Some(file)) => {
                    let _ = write!(s, "{func} ({file})");
                }
                (Some(func), None) if line > 0 => {
                    let _ = write!(s, "{func} (line {line})");
                }
                (Some(func), None) => s.push_str(&func),
                (None, Some(file)) if line > 0 => {
                    let _ = write!(s, "{file}:{line}");
                }
                (None, Some(file)) => s.push_str(file),
                (None, None) => s.push_str("unknown location"),
            }
        }
        Key::Launch(_, shape) => {
            s.push_str(&text(inputs[0]).unwrap_or("kernel".into()));
            if let Some((g, w, v)) = shape {
                let _ = write!(s, " [gangs={g} workers={w} vector={v}]");
            }
        }
        Key::Space(n, present) => {
            let _ = write!(s, "acc device {n}");
            if present {
                s.push_str(" present");
            }
        }
    }
    // Interior NULs cannot come from C strings; drop any anyway.
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// The file name of a path.
fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(key: Key) -> String {
        // SAFETY: static strings.
        unsafe { with_name(key, |p| CStr::from_ptr(p).to_string_lossy().into_owned()) }
    }

    #[test]
    fn names() {
        let f = c"solve".as_ptr();
        let file = c"/src/cg.c".as_ptr();
        assert_eq!(name(Key::Source(f, file, 42)), "solve (cg.c:42)");
        assert_eq!(name(Key::Source(f, file, -1)), "solve (cg.c)");
        assert_eq!(name(Key::Source(std::ptr::null(), file, 3)), "cg.c:3");
        assert_eq!(name(Key::Source(f, std::ptr::null(), -1)), "solve");
        let k = c"main$_omp_fn$0".as_ptr();
        assert_eq!(
            name(Key::Launch(k, Some((80, 1, 128)))),
            "main$_omp_fn$0 [gangs=80 workers=1 vector=128]"
        );
        assert_eq!(name(Key::Launch(std::ptr::null(), None)), "kernel");
        assert_eq!(name(Key::Space(1, false)), "acc device 1");
        assert_eq!(name(Key::Space(0, true)), "acc device 0 present");
        // Same pointer, new content: rebuilt.
        let mut buf = *b"alpha\0";
        let p = buf.as_ptr().cast::<c_char>();
        assert_eq!(name(Key::Launch(p, None)), "alpha");
        buf[0] = b'A';
        let p = buf.as_ptr().cast::<c_char>();
        assert_eq!(name(Key::Launch(p, None)), "Alpha");
        // The same key twice gives the same pointer.
        // SAFETY: static strings.
        let (a, b) = unsafe {
            (
                with_name(Key::Source(f, file, 42), |p| p as usize),
                with_name(Key::Source(f, file, 42), |p| p as usize),
            )
        };
        assert_eq!(a, b);
    }
}
