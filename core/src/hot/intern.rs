//! Name interning: every distinct name is stored once, forever, and events carry its
//! 32-bit id.
//!
//! Runtimes pass the same `const char*` for a kernel again and again, so each thread
//! keeps a small direct-mapped cache from pointer to id. A hit costs one compare of
//! the string against the interned copy (the pointer may have been reused for another
//! name); only a miss takes the global lock.

use std::borrow::Cow;
use std::ffi::{c_char, CStr};
use std::sync::{Mutex, RwLock};

use hashbrown::HashTable;
use kprof_abi::Anomaly;

use crate::base::anomaly::Anomalies;
use crate::hot::clock::Clock;

/// Id of the name recorded for NULL names.
pub const NULL_NAME: u32 = 0;
/// Distinct names kept; later new names all map to [`OVERFLOW_NAME`]'s id.
const MAX_NAMES: usize = 1 << 20;
const OVERFLOW_NAME: &[u8] = b"<more distinct names than kprof keeps>";

/// The process-wide name table.
///
/// Memory per name matters: a program can make a million distinct names (one
/// kernel name per problem size). A name costs its bytes in a shared arena, one
/// 16-byte slot in `names` and 4 bytes (plus one control byte) in the hash table
/// of ids, which compares candidates against the arena instead of keeping keys.
pub struct Interner {
    /// Lookup by content: ids hashed by their stored bytes; also owns the arena.
    map: Mutex<Lookup>,
    /// id -> NUL-terminated bytes (the slice includes the NUL).
    names: RwLock<Vec<&'static [u8]>>,
}

/// The part of the table changed only under its lock.
struct Lookup {
    ids: HashTable<u32>,
    arena: Arena,
}

/// Append-only storage of the names' bytes, in blocks that never move (the
/// pointers handed out stay valid for the life of the process).
struct Arena {
    /// The unused rest of the current block.
    free: &'static mut [u8],
}

/// Bytes of one arena block; a name longer than a quarter of it gets its own.
const ARENA_BLOCK: usize = 64 << 10;

impl Arena {
    /// A NUL-terminated copy of `bytes` that lives forever.
    fn store(&mut self, bytes: &[u8]) -> &'static [u8] {
        let need = bytes.len() + 1;
        if need > ARENA_BLOCK / 4 {
            let mut owned = Vec::with_capacity(need);
            owned.extend_from_slice(bytes);
            owned.push(0);
            return Box::leak(owned.into_boxed_slice());
        }
        if self.free.len() < need {
            self.free = Box::leak(vec![0u8; ARENA_BLOCK].into_boxed_slice());
        }
        let (stored, rest) = std::mem::take(&mut self.free).split_at_mut(need);
        self.free = rest;
        stored[..bytes.len()].copy_from_slice(bytes);
        stored[bytes.len()] = 0;
        stored
    }
}

/// The hash of a name's bytes (without its NUL).
fn hash_of(bytes: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(bytes);
    h.finish()
}

impl Interner {
    /// A table holding `<null>` as id 0.
    pub fn new() -> Interner {
        let i = Interner {
            map: Mutex::new(Lookup {
                ids: HashTable::new(),
                arena: Arena { free: &mut [] },
            }),
            names: RwLock::new(Vec::new()),
        };
        let (id, _) = i.intern(b"<null>", &Anomalies::default());
        debug_assert_eq!(id, NULL_NAME);
        i
    }

    /// The id of `bytes` (no NUL inside), adding it if new, with a pointer to the
    /// stored NUL-terminated copy.
    pub fn intern(&self, bytes: &[u8], anomalies: &Anomalies) -> (u32, *const c_char) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let hash = hash_of(bytes);
        {
            // Writers hold `map`, so `names` only grows under this lock.
            let names = self.names.read().unwrap_or_else(|p| p.into_inner());
            let stored = |id: &u32| &names[*id as usize][..names[*id as usize].len() - 1];
            if let Some(&id) = map.ids.find(hash, |id| stored(id) == bytes) {
                return (id, names[id as usize].as_ptr().cast());
            }
            if map.ids.len() >= MAX_NAMES && bytes != OVERFLOW_NAME {
                drop(names);
                drop(map);
                return self.intern(OVERFLOW_NAME, anomalies);
            }
        }
        if std::str::from_utf8(bytes).is_err() {
            anomalies.count(Anomaly::InvalidUtf8Name);
        }
        let stored = map.arena.store(bytes);
        let mut names = self.names.write().unwrap_or_else(|p| p.into_inner());
        let id = names.len() as u32;
        names.push(stored);
        let rehash = |id: &u32| hash_of(&names[*id as usize][..names[*id as usize].len() - 1]);
        map.ids.insert_unique(hash, id, rehash);
        (id, stored.as_ptr().cast())
    }

    /// The name of `id` as text for output: invalid UTF-8 replaced by U+FFFD, C++
    /// mangled names made readable (see [`readable`]); `"<unknown>"` for ids never
    /// handed out.
    pub fn text(&self, id: u32) -> String {
        self.text_ref(id).into_owned()
    }

    /// [`Interner::text`] without a copy when the stored name reads as it is
    /// (valid UTF-8, not mangled): what the outputs take for each of a million
    /// call paths.
    pub fn text_ref(&self, id: u32) -> Cow<'static, str> {
        let stored = {
            let names = self.names.read().unwrap_or_else(|p| p.into_inner());
            names.get(id as usize).copied()
        };
        let Some(b) = stored else {
            return Cow::Borrowed("<unknown>");
        };
        match String::from_utf8_lossy(&b[..b.len() - 1]) {
            Cow::Borrowed(s) if !needs_demangling(s) => Cow::Borrowed(s),
            s => Cow::Owned(readable(&s)),
        }
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.names.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether only the built-in names exist.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }
}

impl Default for Interner {
    fn default() -> Self {
        Interner::new()
    }
}

/// A name as a user wants to read it. Runtimes pass C++ mangled names for unnamed
/// kernels: Kokkos 3.x passes `typeid(F).name()` (`N6solver5ClampE`), some runtimes
/// symbol names (`_ZN...`); Kokkos appends `/Tag` for tagged functors. Each
/// `/`-separated part that parses as a mangled symbol or type is demangled; any
/// other text is kept as it is.
pub fn readable(name: &str) -> String {
    if !needs_demangling(name) {
        return name.to_string();
    }
    name.split('/')
        .map(demangle_part)
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether [`readable`] may change `name`: it holds a mangled symbol or starts
/// like a mangled type.
fn needs_demangling(name: &str) -> bool {
    name.contains("_Z") || name.starts_with(|c: char| c == 'N' || c.is_ascii_digit())
}

fn demangle_part(part: &str) -> String {
    let symbol = |s: &str| cpp_demangle::Symbol::new(s).ok().map(|d| d.to_string());
    if part.starts_with("_Z") {
        if let Some(d) = symbol(part) {
            return d;
        }
    }
    // A type name: nested (N...E) or a length-prefixed identifier (5Clamp).
    let is_type = (part.starts_with('N') && part.ends_with('E') && part.len() > 3)
        || (part.starts_with(|c: char| c.is_ascii_digit())
            && part.bytes().any(|b| b.is_ascii_alphabetic()));
    if is_type {
        if let Some(d) = symbol(&format!("_ZTS{part}")) {
            if let Some(t) = d.strip_prefix("typeinfo name for ") {
                return t.to_string();
            }
        }
    }
    part.to_string()
}

const CACHE_SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct Slot {
    ptr: usize,
    id: u32,
    len: usize,
    stored: *const c_char,
}

/// Space names remembered per thread by content (runtimes pass them by value, so
/// the pointer says nothing): there are only a handful of memory spaces.
const SPACE_SLOTS: usize = 8;

/// The cache slot of a name pointer: two shifts mix bits above the lowest three,
/// so neighbouring literals and pointers a page apart spread over the slots.
#[inline(always)]
fn slot_index(p: usize) -> usize {
    (p >> 3 ^ p >> 11) % CACHE_SLOTS
}

/// A thread's pointer -> id cache in front of the [`Interner`].
pub struct NameCache {
    slots: Box<[Slot; CACHE_SLOTS]>,
    spaces: Vec<(Box<[u8]>, u32)>,
    next_space: usize,
    /// The clock that times the misses (none: not timed).
    clock: Option<&'static Clock>,
    /// Raw ticks the misses took since the last [`NameCache::take_own`]: kprof's
    /// own work (interning, growing the name table), kept out of the
    /// program's instances.
    own: u64,
}

impl NameCache {
    /// An empty cache.
    pub fn new() -> NameCache {
        NameCache {
            slots: Box::new(
                [Slot {
                    ptr: 0,
                    id: 0,
                    len: 0,
                    stored: std::ptr::null(),
                }; CACHE_SLOTS],
            ),
            spaces: Vec::with_capacity(SPACE_SLOTS),
            next_space: 0,
            clock: None,
            own: 0,
        }
    }

    /// Times the misses with `clock` from now on (the runtime's, set when a
    /// thread registers).
    pub fn time_with(&mut self, clock: &'static Clock) {
        self.clock = Some(clock);
        self.own = 0;
    }

    /// The raw ticks the misses took since the last call, and starts again
    /// from 0: one load and a predictable branch when nothing was missed.
    #[inline(always)]
    pub fn take_own(&mut self) -> u64 {
        if self.own == 0 {
            return 0;
        }
        std::mem::take(&mut self.own)
    }

    /// The id of a bounded name (a memory space): the name ends at the first NUL or
    /// after `max_len` bytes. Looked up by content in a few per-thread slots, so
    /// repeated allocations take no lock.
    ///
    /// # Safety
    /// `ptr` must be NULL or readable for `max_len` bytes or up to a NUL.
    pub unsafe fn lookup_bounded(
        &mut self,
        ptr: *const c_char,
        max_len: usize,
        interner: &Interner,
        anomalies: &Anomalies,
    ) -> u32 {
        if ptr.is_null() {
            anomalies.count(Anomaly::NullName);
            return NULL_NAME;
        }
        // SAFETY: the caller guarantees max_len readable bytes or a NUL before them.
        let len = unsafe { libc::strnlen(ptr, max_len) };
        // SAFETY: the first len bytes were just read by strnlen.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        if let Some(&(_, id)) = self.spaces.iter().find(|(b, _)| **b == *bytes) {
            return id;
        }
        let id = interner.intern(bytes, anomalies).0;
        let entry = (Box::from(bytes), id);
        if self.spaces.len() < SPACE_SLOTS {
            self.spaces.push(entry);
        } else {
            self.spaces[self.next_space] = entry;
            self.next_space = (self.next_space + 1) % SPACE_SLOTS;
        }
        id
    }

    /// The slot a name at address `p` is cached in.
    #[inline(always)]
    fn slot(&self, p: usize) -> &Slot {
        &self.slots[slot_index(p)]
    }

    /// The id of the NUL-terminated `name`.
    ///
    /// # Safety
    /// `name` must be NULL or point to a NUL-terminated string.
    #[inline(always)]
    pub unsafe fn lookup(
        &mut self,
        name: *const c_char,
        interner: &Interner,
        anomalies: &Anomalies,
    ) -> u32 {
        let p = name as usize;
        let slot = self.slot(p);
        // SAFETY: `stored` is a NUL-terminated interned copy of `len` bytes; strncmp
        // stops at the first difference or NUL, so it never reads past either string.
        if slot.ptr == p && p != 0 && unsafe { libc::strncmp(name, slot.stored, slot.len + 1) } == 0
        {
            return slot.id;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.miss(name, interner, anomalies) }
    }

    /// As [`NameCache::lookup`] for a name that is never freed nor changed (a string
    /// literal of a plugin): a hit needs the pointer only, not the compare.
    ///
    /// # Safety
    /// `name` must be NULL or point to a NUL-terminated string that stays unchanged
    /// for the rest of the process.
    #[inline(always)]
    pub unsafe fn lookup_static(
        &mut self,
        name: *const c_char,
        interner: &Interner,
        anomalies: &Anomalies,
    ) -> u32 {
        let p = name as usize;
        let slot = self.slot(p);
        // A slot holding this pointer was filled from this same unchanging string.
        if slot.ptr == p && p != 0 {
            return slot.id;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.miss(name, interner, anomalies) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn miss(
        &mut self,
        name: *const c_char,
        interner: &Interner,
        anomalies: &Anomalies,
    ) -> u32 {
        if name.is_null() {
            anomalies.count(Anomaly::NullName);
            return NULL_NAME;
        }
        let t0 = self.clock.map(Clock::now);
        // SAFETY: the caller guarantees a NUL-terminated string.
        let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
        let (id, stored) = interner.intern(bytes, anomalies);
        if let (Some(clock), Some(t0)) = (self.clock, t0) {
            self.own += clock.now().saturating_sub(t0);
        }
        let p = name as usize;
        self.slots[slot_index(p)] = Slot {
            ptr: p,
            id,
            len: bytes.len(),
            stored,
        };
        id
    }
}

impl Default for NameCache {
    fn default() -> Self {
        NameCache::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_id_and_pointer_reuse_is_detected() {
        let i = Interner::new();
        let a = Anomalies::default();
        let mut c = NameCache::new();
        let mut buf = *b"alpha\0";
        let p = buf.as_ptr().cast::<c_char>();
        // SAFETY: buf is NUL-terminated and outlives the lookups.
        let id1 = unsafe { c.lookup(p, &i, &a) };
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup(p, &i, &a) }, id1);
        // Same pointer, new text (a reused stack buffer): must not hit the cache.
        buf[0] = b'A';
        // SAFETY: as above.
        let id2 = unsafe { c.lookup(buf.as_ptr().cast(), &i, &a) };
        assert_ne!(id1, id2);
        assert_eq!(i.text(id1), "alpha");
        assert_eq!(i.text(id2), "Alpha");
        // A prefix at the same pointer is a different name too.
        buf[3] = 0;
        // SAFETY: as above.
        let id3 = unsafe { c.lookup(buf.as_ptr().cast(), &i, &a) };
        assert_eq!(i.text(id3), "Alp");
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup(std::ptr::null(), &i, &a) }, NULL_NAME);
        assert_eq!(a.get(Anomaly::NullName), 1);
    }

    #[test]
    fn static_names_hit_by_pointer() {
        let (i, a) = (Interner::new(), Anomalies::default());
        let mut c = NameCache::new();
        let name = c"implicit task";
        // SAFETY: a string literal: NUL-terminated, never freed nor changed.
        let id = unsafe { c.lookup_static(name.as_ptr(), &i, &a) };
        assert_eq!(i.text(id), "implicit task");
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup_static(name.as_ptr(), &i, &a) }, id);
        // The checked lookup of the same literal agrees, and so does a copy.
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup(name.as_ptr(), &i, &a) }, id);
        let copy = b"implicit task\0".to_vec();
        // SAFETY: NUL-terminated, alive during the call.
        assert_eq!(unsafe { c.lookup_static(copy.as_ptr().cast(), &i, &a) }, id);
        // SAFETY: NULL is allowed.
        assert_eq!(
            // SAFETY: as above.
            unsafe { c.lookup_static(std::ptr::null(), &i, &a) },
            NULL_NAME
        );
        assert_eq!(a.get(Anomaly::NullName), 1);
    }

    #[test]
    fn bounded_names_by_content() {
        let i = Interner::new();
        let a = Anomalies::default();
        let mut c = NameCache::new();
        let mut host = [0 as c_char; 64];
        for (d, s) in host.iter_mut().zip(b"HostSpace") {
            *d = *s as c_char;
        }
        let full = [b'x' as c_char; 64];
        // SAFETY: both buffers are 64 readable bytes.
        let (h1, f1) = unsafe {
            (
                c.lookup_bounded(host.as_ptr(), 64, &i, &a),
                c.lookup_bounded(full.as_ptr(), 64, &i, &a),
            )
        };
        assert_eq!(i.text(h1), "HostSpace");
        assert_eq!(
            i.text(f1),
            "x".repeat(64),
            "no NUL: the name ends at max_len"
        );
        let copy = host;
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup_bounded(copy.as_ptr(), 64, &i, &a) }, h1);
        for n in 0..20u8 {
            let mut other = [0 as c_char; 64];
            other[0] = (b'A' + n) as c_char;
            // SAFETY: as above.
            let id = unsafe { c.lookup_bounded(other.as_ptr(), 64, &i, &a) };
            assert_eq!(i.text(id), ((b'A' + n) as char).to_string());
        }
        // SAFETY: as above.
        assert_eq!(unsafe { c.lookup_bounded(host.as_ptr(), 64, &i, &a) }, h1);
    }

    #[test]
    fn mangled_names_become_readable() {
        assert_eq!(readable("N6solver5ClampE"), "solver::Clamp");
        assert_eq!(readable("5Clamp"), "Clamp");
        assert_eq!(
            readable("N6solver5ClampE/N6solver3TagE"),
            "solver::Clamp/solver::Tag"
        );
        assert_eq!(readable("_ZN6solver4stepEv"), "solver::step()");
        for plain in [
            "axpy",
            "Kokkos::View::initialization [x]",
            "3d stencil",
            "N",
            "Nope",
            "",
        ] {
            assert_eq!(readable(plain), plain);
        }
    }

    #[test]
    fn invalid_utf8_is_counted_once_per_name() {
        let i = Interner::new();
        let a = Anomalies::default();
        let (id, _) = i.intern(b"bad\xff", &a);
        i.intern(b"bad\xff", &a);
        assert_eq!(a.get(Anomaly::InvalidUtf8Name), 1);
        assert_eq!(i.text(id), "bad\u{fffd}");
    }
}
