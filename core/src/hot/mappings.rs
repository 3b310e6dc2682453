//! The process's readable and writable mappings, as the call-stack sampling
//! handler ([`crate::hot::stack_samples`]) reads them to bound the unwind of a
//! thread that never reached kprof (such a thread cannot be asked for its stack:
//! `pthread_getattr_np` names only the caller's). A snapshot of
//! `/proc/self/maps` is read off the hot path, by the thread that scans for new
//! threads, and published whole: a new one replaces the old, and old ones are
//! never freed (a handler may still be reading one).

use std::sync::atomic::{AtomicPtr, Ordering};

/// Sorted, disjoint `[start, end)` ranges of the mappings that are readable and
/// writable (stacks among them).
struct Snapshot {
    ranges: Box<[(u64, u64)]>,
}

/// The snapshot the handler reads (null: none yet).
static CURRENT: AtomicPtr<Snapshot> = AtomicPtr::new(std::ptr::null_mut());

/// The readable and writable ranges of a `/proc/<pid>/maps` text, sorted, with
/// adjacent ones joined.
fn parse(text: &str) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !perms.starts_with("rw") {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if a >= b {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == a => last.1 = b,
            _ => out.push((a, b)),
        }
    }
    out.sort_unstable();
    out
}

/// Reads `/proc/self/maps` and publishes its readable and writable ranges. Not
/// for a signal handler (reads a file, allocates). False when it cannot be read
/// (the previous snapshot stays).
pub fn publish() -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let snap = Box::new(Snapshot {
        ranges: parse(&text).into_boxed_slice(),
    });
    // The old snapshot is leaked, not freed: a handler may still be reading it.
    CURRENT.store(Box::into_raw(snap), Ordering::Release);
    true
}

/// The published readable and writable range that holds `addr`, if any.
/// Async-signal-safe: one atomic load and a binary search of an immutable array.
pub fn containing(addr: u64) -> Option<(u64, u64)> {
    // SAFETY: published snapshots are leaked and never freed.
    let snap = unsafe { CURRENT.load(Ordering::Acquire).as_ref() }?;
    let r = &snap.ranges;
    let at = r.partition_point(|&(start, _)| start <= addr);
    let &(start, end) = r.get(at.checked_sub(1)?)?;
    (start <= addr && addr < end).then_some((start, end))
}

/// In a forked child: the parent's snapshot describes the parent's threads'
/// stacks; the child reads its own when it scans.
pub fn forget() {
    CURRENT.store(std::ptr::null_mut(), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_ranges_are_kept_sorted_and_joined() {
        let text = "\
7f0000002000-7f0000003000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r-xp 00000000 08:01 12 /lib/x.so
7f0000003000-7f0000004000 rw-p 00000000 00:00 0 [stack]
7f0000005000-7f0000006000 ---p 00000000 00:00 0
00400000-00401000 rw-p 00000000 08:01 13 /bin/a
bad line
";
        assert_eq!(
            parse(text),
            [(0x400000, 0x401000), (0x7f0000002000, 0x7f0000004000)]
        );
    }

    #[test]
    fn this_threads_stack_is_found() {
        assert!(publish());
        let local = 0u64;
        let sp = &local as *const u64 as u64;
        let (start, end) = containing(sp).expect("the stack is mapped read-write");
        assert!(start <= sp && sp < end);
        assert_eq!(containing(0), None);
    }
}
