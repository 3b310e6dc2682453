//! Memory in use per space, from allocation and deallocation events delivered in
//! timestamp order: current bytes, high-water mark and when, the largest allocations,
//! and what was never freed.

use rustc_hash::FxHashMap;

/// Largest allocations remembered per space.
pub const LARGEST: usize = 10;

/// One memory space.
#[derive(Default)]
pub struct Space {
    /// Allocations seen.
    pub allocations: u64,
    /// Deallocations matched.
    pub deallocations: u64,
    /// Bytes in use now.
    pub current: u64,
    /// Most bytes in use at once.
    pub high_water: u64,
    /// Raw time the high-water mark was reached.
    pub high_water_ts: u64,
    /// Live allocations: address -> (label id, bytes).
    pub live: FxHashMap<u64, (u32, u64)>,
    /// The largest allocations: (bytes, label id), largest first.
    pub largest: Vec<(u64, u32)>,
}

impl Space {
    /// Records an allocation at raw time `ts`.
    pub fn alloc(&mut self, ts: u64, label: u32, ptr: u64, bytes: u64) {
        self.allocations += 1;
        if let Some((_, old)) = self.live.insert(ptr, (label, bytes)) {
            // The runtime never reported freeing the previous block at this address.
            self.current = self.current.saturating_sub(old);
        }
        self.current = self.current.saturating_add(bytes);
        if self.current > self.high_water {
            self.high_water = self.current;
            self.high_water_ts = ts;
        }
        if self.largest.len() < LARGEST || self.largest.last().is_some_and(|l| l.0 < bytes) {
            let at = self.largest.partition_point(|l| l.0 >= bytes);
            self.largest.insert(at, (bytes, label));
            self.largest.truncate(LARGEST);
        }
    }

    /// Records a deallocation; false when `ptr` is not a live allocation.
    pub fn free(&mut self, ptr: u64) -> bool {
        match self.live.remove(&ptr) {
            Some((_, bytes)) => {
                self.deallocations += 1;
                self.current = self.current.saturating_sub(bytes);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_water_and_leaks() {
        let mut s = Space::default();
        s.alloc(1, 1, 0x10, 100);
        s.alloc(2, 2, 0x20, 50);
        assert!(s.free(0x10));
        s.alloc(3, 3, 0x30, 80);
        assert!(!s.free(0x99));
        assert_eq!((s.current, s.high_water, s.high_water_ts), (130, 150, 2));
        assert_eq!(s.live.len(), 2);
        assert_eq!(s.largest, vec![(100, 1), (80, 3), (50, 2)]);
    }
}
