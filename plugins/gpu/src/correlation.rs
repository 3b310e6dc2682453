//! The vendor's correlation id (CUPTI's, rocprofiler-sdk's) -> where the launch
//! happened (the [`Site`] and the GUID of the API call's slice), written at each
//! API call and read when the activity record arrives.
//!
//! No lock on the launch path: correlation ids increase, so a power-of-two ring
//! indexed by `id & mask` holds the latest `N` launches. A slot's id is cleared
//! before its fields are written and set after, and a reader checks the id before
//! and after reading, so it gets either the entry of its id or nothing. An entry
//! overwritten before its record arrived (more than `N` launches in flight) is
//! reported as an unknown correlation, never as a wrong one.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use kprof_abi::Site;

/// What a launch left for its activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Launch {
    /// The launching thread's innermost open instance.
    pub site: Site,
    /// GUID of the API call's slice (the flow's source).
    pub api: u64,
}

struct Slot {
    id: AtomicU32,
    guid: AtomicU64,
    node: AtomicU64,
    api: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            id: AtomicU32::new(0),
            guid: AtomicU64::new(0),
            node: AtomicU64::new(0),
            api: AtomicU64::new(0),
        }
    }
}

/// The ring: `N` slots, `N` a power of two.
pub struct Ring<const N: usize> {
    slots: [Slot; N],
}

impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Ring<N> {
    const MASK: usize = {
        assert!(N.is_power_of_two());
        N - 1
    };

    /// An empty ring (usable in a `static`).
    pub const fn new() -> Ring<N> {
        Ring {
            slots: [const { Slot::new() }; N],
        }
    }

    /// Remembers `launch` for correlation id `id` (0, which the vendors never give a
    /// call, is ignored).
    #[inline]
    pub fn insert(&self, id: u32, launch: Launch) {
        if id == 0 {
            return;
        }
        let s = &self.slots[id as usize & Self::MASK];
        s.id.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        s.guid.store(launch.site.guid, Ordering::Relaxed);
        s.node.store(launch.site.node, Ordering::Relaxed);
        s.api.store(launch.api, Ordering::Relaxed);
        s.id.store(id, Ordering::Release);
    }

    /// The launch of correlation id `id`, unless its slot was taken by a later one.
    #[inline]
    pub fn get(&self, id: u32) -> Option<Launch> {
        if id == 0 {
            return None;
        }
        let s = &self.slots[id as usize & Self::MASK];
        if s.id.load(Ordering::Acquire) != id {
            return None;
        }
        let launch = Launch {
            site: Site {
                guid: s.guid.load(Ordering::Relaxed),
                node: s.node.load(Ordering::Relaxed),
            },
            api: s.api.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (s.id.load(Ordering::Relaxed) == id).then_some(launch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(n: u64) -> Launch {
        Launch {
            site: Site {
                guid: n,
                node: n + 1,
            },
            api: n + 2,
        }
    }

    #[test]
    fn finds_recent_ids_and_loses_overwritten_ones() {
        let ring: Ring<8> = Ring::new();
        for id in 1..=8u32 {
            ring.insert(id, launch(u64::from(id) * 10));
        }
        for id in 1..=8u32 {
            assert_eq!(ring.get(id), Some(launch(u64::from(id) * 10)));
        }
        // Id 9 takes id 1's slot: 1 is unknown now, never mistaken for 9.
        ring.insert(9, launch(90));
        assert_eq!(ring.get(1), None);
        assert_eq!(ring.get(9), Some(launch(90)));
        assert_eq!(ring.get(17), None);
        assert_eq!(ring.get(0), None);
        ring.insert(0, launch(1));
        assert_eq!(ring.get(8), Some(launch(80)));
    }

    #[test]
    fn two_ids_share_one_launch() {
        // A runtime call's id and the driver call's id inside it map to one launch.
        let ring: Ring<16> = Ring::new();
        ring.insert(100, launch(7));
        ring.insert(101, launch(7));
        assert_eq!(ring.get(100), ring.get(101));
    }

    #[test]
    fn concurrent_writers_and_a_reader() {
        let ring: &'static Ring<1024> = Box::leak(Box::new(Ring::new()));
        let writers: Vec<_> = (0..4u32)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let id = 1 + i * 4 + t;
                        ring.insert(id, launch(u64::from(id) * 3));
                    }
                })
            })
            .collect();
        let reader = std::thread::spawn(move || {
            for id in 1..80_000u32 {
                if let Some(l) = ring.get(id) {
                    // Whatever is found belongs to its id.
                    assert_eq!(l, launch(u64::from(id) * 3));
                }
            }
        });
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
    }
}
