//! Figures added up by key in bounded memory, for the flat views of `kprof
//! report`: a flat row sums every node of its key wherever it is in the tree,
//! so some table of keys is inherent, but a profile of a million names must not
//! hold a million rows. At most [`ROWS_HELD`] keys are held; when the table is
//! full it is sorted by key and written as a run to an unnamed temporary file
//! (gone when closed), and at the end the runs are merged, at most [`FAN`] at a
//! time, each key's figures combined once more. Memory is then that table and
//! [`FAN`] read buffers whatever the number of names; the disk holds the runs
//! (about 80 bytes a distinct key). Where no temporary file can be had, the
//! table grows in memory instead.
//!
//! Written by hand: an external sort with a combining merge is what this needs,
//! and the crates that sort externally neither combine equal keys as they go
//! nor keep the tree small.

use std::cmp::Ordering;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Keys held in memory before the table is written out (a few in the unit
/// tests, so that the views' tests add up on disk).
pub const ROWS_HELD: usize = if cfg!(test) { 64 } else { 1 << 17 };

/// Runs merged at once.
pub const FAN: usize = 16;

/// Bytes read from a run at a time.
const READ_BYTES: usize = 1 << 16;

/// How a column of figures combines.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// Added (wrapping, as release builds add).
    Sum,
    /// The least.
    Min,
    /// The largest.
    Max,
}

impl Op {
    fn combine(ops: &[Op], into: &mut [u64], from: &[u64]) {
        for ((op, a), &b) in ops.iter().zip(into.iter_mut()).zip(from) {
            *a = match op {
                Op::Sum => a.wrapping_add(b),
                Op::Min => (*a).min(b),
                Op::Max => (*a).max(b),
            };
        }
    }
}

/// A run in the temporary file: its byte range.
#[derive(Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
}

/// The temporary file and the runs written to it.
struct Spill {
    file: File,
    runs: Vec<Run>,
    end: u64,
}

impl Spill {
    /// An unnamed file in the temporary directory (`TMPDIR`), or none.
    fn open() -> Option<Spill> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
            .open(std::env::temp_dir())
            .ok()?;
        Some(Spill {
            file,
            runs: Vec::new(),
            end: 0,
        })
    }

    /// Appends one run: `write` writes its records in key order.
    fn append(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let start = self.end;
        let mut w = BufWriter::with_capacity(1 << 16, Positioned::new(&self.file, start));
        write(&mut w)?;
        w.flush()?;
        let end = w.get_ref().at;
        drop(w);
        self.end = end;
        self.runs.push(Run { start, end });
        Ok(())
    }
}

/// Writes to a file at an offset (the runs are read with `pread` meanwhile).
struct Positioned<'f> {
    file: &'f File,
    at: u64,
}

impl<'f> Positioned<'f> {
    fn new(file: &'f File, at: u64) -> Self {
        Positioned { file, at }
    }
}

impl Write for Positioned<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all_at(buf, self.at)?;
        self.at += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One record: `u32` key length, the key, the figures (`u64` each, little endian).
fn put(w: &mut (impl Write + ?Sized), key: &[u8], figures: &[u64]) -> std::io::Result<()> {
    w.write_all(&(key.len() as u32).to_le_bytes())?;
    w.write_all(key)?;
    for f in figures {
        w.write_all(&f.to_le_bytes())?;
    }
    Ok(())
}

/// Keys with their figures, combined by [`Op`] per column.
pub struct KeyedSums {
    ops: &'static [Op],
    /// Keys held before the table is written out.
    held: usize,
    /// The keys held, one after the other.
    text: Vec<u8>,
    /// Per key held: where it ends in `text` (it starts where the previous ends).
    ends: Vec<usize>,
    /// The figures of key `i`: `figures[i * width..(i + 1) * width]`.
    figures: Vec<u64>,
    index: HashTable<u32>,
    spill: Option<Spill>,
    /// Whether a temporary file was tried (once).
    tried: bool,
    /// No more runs are written (no temporary file, or a full disk): the
    /// table grows instead.
    full: bool,
}

impl KeyedSums {
    /// Sums whose figures combine by `ops`, one per column.
    pub fn new(ops: &'static [Op]) -> Self {
        Self::holding(ops, ROWS_HELD)
    }

    /// Sums that hold at most `held` keys in memory.
    fn holding(ops: &'static [Op], held: usize) -> Self {
        KeyedSums {
            ops,
            held: held.max(1),
            text: Vec::new(),
            ends: Vec::new(),
            figures: Vec::new(),
            index: HashTable::new(),
            spill: None,
            tried: false,
            full: false,
        }
    }

    /// Runs written to the temporary file so far.
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.runs.len())
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// Adds `figures` (one per op) to the row of `key`.
    pub fn add(&mut self, key: &[u8], figures: &[u64]) {
        let w = self.ops.len();
        let hash = FxBuildHasher.hash_one(key);
        let (text, ends) = (&self.text, &self.ends);
        let at = |i: u32| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &text[start..ends[i]]
        };
        if let Some(&i) = self.index.find(hash, |&i| at(i) == key) {
            let i = i as usize;
            Op::combine(self.ops, &mut self.figures[i * w..(i + 1) * w], figures);
            return;
        }
        if self.ends.len() >= self.held && self.write_run() {
            return self.add(key, figures);
        }
        let i = self.ends.len() as u32;
        self.text.extend_from_slice(key);
        self.ends.push(self.text.len());
        self.figures.extend_from_slice(figures);
        let (text, ends) = (&self.text, &self.ends);
        let at = |i: u32| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &text[start..ends[i]]
        };
        self.index
            .insert_unique(hash, i, |&i| FxBuildHasher.hash_one(at(i)));
    }

    /// The keys held, in key order.
    fn sorted(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.ends.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.key(a as usize).cmp(self.key(b as usize)));
        order
    }

    /// Writes the keys held as a run and empties the table; false (the table
    /// is kept, and grows) where no temporary file can be had or written.
    fn write_run(&mut self) -> bool {
        if !self.tried {
            self.tried = true;
            self.spill = Spill::open();
        }
        if self.full {
            return false;
        }
        let Some(mut spill) = self.spill.take() else {
            self.full = true;
            return false;
        };
        let order = self.sorted();
        let w = self.ops.len();
        let written = spill.append(|out| {
            for &i in &order {
                let i = i as usize;
                put(out, self.key(i), &self.figures[i * w..(i + 1) * w])?;
            }
            Ok(())
        });
        self.spill = Some(spill);
        if written.is_err() {
            // A full disk: what was written of that run is not listed (the runs
            // before it are); the rows stay here from now on.
            self.full = true;
            return false;
        }
        self.text.clear();
        self.ends.clear();
        self.figures.clear();
        self.index.clear();
        true
    }

    /// Every key with its figures, in key order (the bytes of the keys); each
    /// key once.
    pub fn drain(mut self, emit: &mut dyn FnMut(&[u8], &[u64])) -> std::io::Result<()> {
        let w = self.ops.len();
        let Some(mut spill) = self.spill.take() else {
            // All in memory.
            for i in self.sorted() {
                let i = i as usize;
                emit(self.key(i), &self.figures[i * w..(i + 1) * w]);
            }
            return Ok(());
        };
        // The table's rows as the last run, then runs merged FAN at a time
        // until FAN or fewer are left.
        let order = self.sorted();
        let this = &self;
        spill.append(|out| {
            for &i in &order {
                let i = i as usize;
                put(out, this.key(i), &this.figures[i * w..(i + 1) * w])?;
            }
            Ok(())
        })?;
        drop(order);
        let ops = self.ops;
        drop(self);
        let mut first = 0;
        while spill.runs.len() - first > FAN {
            let group: Vec<Run> = spill.runs[first..first + FAN].to_vec();
            first += FAN;
            let file = &spill.file;
            let start = spill.end;
            let mut out = BufWriter::with_capacity(1 << 16, Positioned::new(file, start));
            let mut failed = None;
            merge(file, &group, ops, &mut |k, f| {
                if failed.is_none() {
                    failed = put(&mut out, k, f).err();
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            out.flush()?;
            let end = out.get_ref().at;
            drop(out);
            spill.end = end;
            spill.runs.push(Run { start, end });
        }
        merge(&spill.file, &spill.runs[first..], ops, emit)
    }
}

/// A run being read: its current record.
struct Reader {
    buf: Vec<u8>,
    /// The unread bytes of `buf`: `buf[at..filled]`.
    at: usize,
    filled: usize,
    /// The next byte of the run to read into `buf`, and the run's end.
    next: u64,
    end: u64,
    key: Vec<u8>,
    figures: Vec<u64>,
    done: bool,
}

impl Reader {
    fn new(run: Run, width: usize) -> Self {
        Reader {
            buf: vec![0; READ_BYTES],
            at: 0,
            filled: 0,
            next: run.start,
            end: run.end,
            key: Vec::new(),
            figures: vec![0; width],
            done: false,
        }
    }

    /// `n` bytes of the run, refilling the buffer as needed.
    fn take(&mut self, file: &File, n: usize) -> std::io::Result<&[u8]> {
        if self.filled - self.at < n {
            self.buf.copy_within(self.at..self.filled, 0);
            self.filled -= self.at;
            self.at = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            let room = (self.buf.len() - self.filled) as u64;
            let want = room.min(self.end - self.next) as usize;
            file.read_exact_at(&mut self.buf[self.filled..self.filled + want], self.next)?;
            self.next += want as u64;
            self.filled += want;
            if self.filled < n {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "a run of the temporary file ends early",
                ));
            }
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    /// Reads the next record, or marks the run done.
    fn advance(&mut self, file: &File) -> std::io::Result<()> {
        if self.at == self.filled && self.next == self.end {
            self.done = true;
            return Ok(());
        }
        let len = u32::from_le_bytes(self.take(file, 4)?.try_into().unwrap_or([0; 4])) as usize;
        let key = self.take(file, len)?.to_vec();
        self.key = key;
        for i in 0..self.figures.len() {
            let b = self.take(file, 8)?;
            self.figures[i] = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        }
        Ok(())
    }
}

/// Merges `runs` (each in key order) to `emit`, equal keys combined.
fn merge(
    file: &File,
    runs: &[Run],
    ops: &[Op],
    emit: &mut dyn FnMut(&[u8], &[u64]),
) -> std::io::Result<()> {
    let mut readers: Vec<Reader> = runs.iter().map(|&r| Reader::new(r, ops.len())).collect();
    for r in &mut readers {
        r.advance(file)?;
    }
    let mut key = Vec::new();
    let mut figures = vec![0; ops.len()];
    loop {
        // The least key of the runs' current records (a few runs: a scan).
        let mut least: Option<usize> = None;
        for (i, r) in readers.iter().enumerate() {
            if r.done {
                continue;
            }
            if least.is_none_or(|l| r.key.cmp(&readers[l].key) == Ordering::Less) {
                least = Some(i);
            }
        }
        let Some(l) = least else { break };
        key.clear();
        key.extend_from_slice(&readers[l].key);
        figures.copy_from_slice(&readers[l].figures);
        readers[l].advance(file)?;
        for r in readers.iter_mut() {
            // Each run holds a key once.
            if !r.done && r.key == key {
                Op::combine(ops, &mut figures, &r.figures);
                r.advance(file)?;
            }
        }
        emit(&key, &figures);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPS: &[Op] = &[Op::Sum, Op::Min, Op::Max];

    /// Spilled and merged (several levels), the sums equal those of a map.
    #[test]
    fn spilled_runs_merge_to_the_sums_of_every_key() {
        let held = 100;
        let mut sums = KeyedSums::holding(OPS, held);
        let mut want = std::collections::BTreeMap::<Vec<u8>, [u64; 3]>::new();
        let keys = held * (FAN * 2 + 3) + 17;
        let mut x: u64 = 7;
        for i in 0..keys * 2 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Every key comes at least once, many come again later.
            let k = if i < keys {
                i as u64
            } else {
                (x >> 33) % keys as u64
            };
            let key = format!("key{k}").into_bytes();
            let v = x >> 40;
            sums.add(&key, &[v, v, v]);
            let e = want.entry(key).or_insert([0, u64::MAX, 0]);
            e[0] = e[0].wrapping_add(v);
            e[1] = e[1].min(v);
            e[2] = e[2].max(v);
        }
        assert!(sums.spill.as_ref().is_some_and(|s| s.runs.len() > FAN));
        let mut got = Vec::new();
        sums.drain(&mut |k, f| got.push((k.to_vec(), [f[0], f[1], f[2]])))
            .unwrap();
        let want: Vec<_> = want.into_iter().collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want);
    }

    /// Without a temporary file the table grows and gives the same sums.
    #[test]
    fn without_a_temporary_file_the_table_grows() {
        let mut sums = KeyedSums::holding(OPS, 10);
        // As if no file could be made.
        sums.tried = true;
        for i in 0..1000u64 {
            sums.add(format!("{:04}", i % 300).as_bytes(), &[i, i, i]);
        }
        assert!(sums.spill.is_none() && sums.full);
        let mut got = Vec::new();
        sums.drain(&mut |k, f| got.push((String::from_utf8(k.to_vec()).unwrap(), f.to_vec())))
            .unwrap();
        assert_eq!(got.len(), 300);
        for (k, f) in &got {
            let i: u64 = k.parse().unwrap();
            let all: Vec<u64> = (0..1000).filter(|j| j % 300 == i).collect();
            assert_eq!(f, &vec![all.iter().sum(), all[0], *all.last().unwrap()]);
        }
    }

    #[test]
    fn a_small_table_stays_in_memory() {
        let mut sums = KeyedSums::new(OPS);
        for (k, v) in [("b", 3), ("a", 1), ("b", 5)] {
            sums.add(k.as_bytes(), &[v, v, v]);
        }
        assert!(sums.spill.is_none());
        let mut got = Vec::new();
        sums.drain(&mut |k, f| got.push((k.to_vec(), f.to_vec())))
            .unwrap();
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), vec![1, 1, 1]),
                (b"b".to_vec(), vec![8, 3, 5])
            ]
        );
    }
}
