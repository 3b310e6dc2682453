//! Turning one thread's raw records into well-formed events.
//!
//! Runtimes call begin/end in orders a trace format cannot take (an end for an id
//! that is not innermost, a pop with nothing pushed, records lost to a full buffer).
//! The resolver keeps the thread's stack of open instances and emits begin/end
//! events that always nest, counting every repair as an anomaly. Every consumer
//! (profile, traces) sees the same repaired stream.

use kprof_abi::{Anomaly, Kind};

use crate::anomaly::Anomalies;
use crate::record::{Op, Record};

/// Extra fields of a memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyInfo {
    /// Bytes copied.
    pub bytes: u64,
    /// Source label id.
    pub src_label: u32,
    /// Destination space name id.
    pub dst_space: u32,
    /// Source space name id.
    pub src_space: u32,
}

/// An open (or just closed) instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Thread index.
    pub thread: u32,
    /// The instance's GUID.
    pub guid: u64,
    /// Explicit parent GUID (0: the enclosing slice on this thread).
    pub parent: u64,
    /// What it is.
    pub kind: Kind,
    /// Name id (destination label for copies).
    pub name: u32,
    /// Device index.
    pub dev: u16,
    /// Raw begin time.
    pub begin: u64,
    /// Copy details, for [`Kind::DeepCopy`].
    pub copy: Option<CopyInfo>,
}

/// A thread-ordered event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A slice opened (nested in the previously opened, still open ones).
    Begin(&'a Slice),
    /// The innermost open slice closed at raw time `end`.
    End(&'a Slice, u64),
    /// A point event.
    Instant {
        /// Thread index.
        thread: u32,
        /// What it is.
        kind: Kind,
        /// Name id.
        name: u32,
        /// Kind-specific values.
        a: u64,
        /// Kind-specific values.
        b: u64,
        /// Raw time.
        ts: u64,
    },
}

/// An event whose meaning depends on order across threads (memory in use, section
/// timers); the writer delivers these in timestamp order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Global {
    /// An allocation.
    Alloc {
        /// Space name id.
        space: u32,
        /// Label id.
        label: u32,
        /// Address.
        ptr: u64,
        /// Size.
        bytes: u64,
    },
    /// A deallocation.
    Free {
        /// Space name id.
        space: u32,
        /// Label id.
        label: u32,
        /// Address.
        ptr: u64,
        /// Size as reported.
        bytes: u64,
    },
    /// A section started.
    SectionStart(u32),
    /// A section stopped.
    SectionStop(u32),
}

/// What receives the resolved events.
pub trait Consumer {
    /// A thread-ordered event.
    fn event(&mut self, ev: &Event<'_>);
    /// A cross-thread event, in timestamp order (raw time `ts`).
    fn global(&mut self, ts: u64, ev: &Global);
}

/// The resolver state of one thread.
pub struct ThreadStream {
    thread: u32,
    stack: Vec<Slice>,
    /// Records were lost: unmatched ends may be the ends of lost begins.
    lost: bool,
    /// Records processed.
    pub records: u64,
    /// Raw time of the newest record processed.
    pub last_ts: u64,
}

impl ThreadStream {
    /// The stream of thread `thread`.
    pub fn new(thread: u32) -> ThreadStream {
        ThreadStream {
            thread,
            stack: Vec::new(),
            lost: false,
            records: 0,
            last_ts: 0,
        }
    }

    /// Processes a batch of records in order. Cross-thread events go to `globals`
    /// with their timestamps; everything else straight to `out`.
    pub fn feed(
        &mut self,
        records: &[Record],
        out: &mut dyn Consumer,
        globals: &mut dyn FnMut(u64, Global),
        anomalies: &Anomalies,
    ) {
        self.records += records.len() as u64;
        let mut i = 0;
        while i < records.len() {
            let r = &records[i];
            let cont = records.get(i + 1).filter(|c| c.op == Op::Cont as u8);
            i += 1;
            if r.ts > self.last_ts {
                self.last_ts = r.ts;
            }
            match Op::from_u8(r.op) {
                Some(Op::Begin) => {
                    let Some(kind) = Kind::from_u8(r.kind) else {
                        anomalies.count(Anomaly::InternalError);
                        continue;
                    };
                    let copy = match (kind, cont) {
                        (Kind::DeepCopy, Some(c)) => {
                            i += 1;
                            Some(CopyInfo {
                                bytes: c.a,
                                src_label: c.name,
                                dst_space: (c.b >> 32) as u32,
                                src_space: c.b as u32,
                            })
                        }
                        _ => None,
                    };
                    self.stack.push(Slice {
                        thread: self.thread,
                        guid: r.a,
                        parent: r.b,
                        kind,
                        name: r.name,
                        dev: r.aux,
                        begin: r.ts,
                        copy,
                    });
                    if let Some(top) = self.stack.last() {
                        out.event(&Event::Begin(top));
                    }
                }
                Some(Op::End) => self.end(r, out, anomalies),
                Some(Op::Instant) => {
                    if let Some(kind) = Kind::from_u8(r.kind) {
                        out.event(&Event::Instant {
                            thread: self.thread,
                            kind,
                            name: r.name,
                            a: r.a,
                            b: r.b,
                            ts: r.ts,
                        });
                    }
                }
                Some(op @ (Op::Alloc | Op::Free)) => {
                    let Some(c) = cont else { continue };
                    i += 1;
                    let (space, label, ptr, bytes) = (c.name, r.name, r.a, r.b);
                    let g = if op == Op::Alloc {
                        Global::Alloc {
                            space,
                            label,
                            ptr,
                            bytes,
                        }
                    } else {
                        Global::Free {
                            space,
                            label,
                            ptr,
                            bytes,
                        }
                    };
                    globals(r.ts, g);
                }
                Some(Op::SectionStart) => globals(r.ts, Global::SectionStart(r.a as u32)),
                Some(Op::SectionStop) => globals(r.ts, Global::SectionStop(r.a as u32)),
                Some(Op::Gap) => self.lost = true,
                Some(Op::Cont) => {}
                None => anomalies.count(Anomaly::InternalError),
            }
        }
    }

    fn end(&mut self, r: &Record, out: &mut dyn Consumer, anomalies: &Anomalies) {
        let pos = if r.a != 0 {
            self.stack.iter().rposition(|s| s.guid == r.a)
        } else {
            self.stack.iter().rposition(|s| s.kind as u8 == r.kind)
        };
        let Some(pos) = pos else {
            // After lost records, an unknown end is most likely a lost begin's end.
            if !self.lost {
                anomalies.count(Anomaly::UnmatchedEnd);
            }
            return;
        };
        if pos + 1 < self.stack.len() {
            anomalies.count(Anomaly::OutOfOrderEnd);
        }
        while self.stack.len() > pos {
            if let Some(s) = self.stack.pop() {
                out.event(&Event::End(&s, r.ts.max(s.begin)));
            }
        }
    }

    /// Closes every slice still open at raw time `end`, counting each.
    pub fn close_all(&mut self, end: u64, out: &mut dyn Consumer, anomalies: &Anomalies) {
        while let Some(s) = self.stack.pop() {
            anomalies.count(Anomaly::UnclosedAtExit);
            out.event(&Event::End(&s, end.max(s.begin)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);

    impl Consumer for Log {
        fn event(&mut self, ev: &Event<'_>) {
            self.0.push(match ev {
                Event::Begin(s) => format!("B{}", s.name),
                Event::End(s, t) => format!("E{}@{t}", s.name),
                Event::Instant { name, .. } => format!("I{name}"),
            });
        }
        fn global(&mut self, _: u64, _: &Global) {}
    }

    fn rec(op: Op, ts: u64, a: u64, name: u32, kind: Kind) -> Record {
        Record {
            ts,
            a,
            name,
            kind: kind as u8,
            op: op as u8,
            ..Record::default()
        }
    }

    #[test]
    fn repairs_out_of_order_and_unmatched_ends() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let rs = [
            rec(Op::Begin, 1, 10, 1, Kind::Region),
            rec(Op::Begin, 2, 11, 2, Kind::ParallelFor),
            // Region popped while the kernel is open: the kernel closes first.
            rec(Op::End, 3, 0, 0, Kind::Region),
            rec(Op::End, 4, 11, 0, Kind::ParallelFor),
            rec(Op::End, 5, 0, 0, Kind::Region),
            rec(Op::Begin, 6, 12, 3, Kind::ParallelFor),
        ];
        s.feed(&rs, &mut log, &mut |_, _| {}, &an);
        s.close_all(9, &mut log, &an);
        assert_eq!(log.0, ["B1", "B2", "E2@3", "E1@3", "B3", "E3@9"]);
        assert_eq!(an.get(Anomaly::OutOfOrderEnd), 1);
        assert_eq!(an.get(Anomaly::UnmatchedEnd), 2);
        assert_eq!(an.get(Anomaly::UnclosedAtExit), 1);
    }

    #[test]
    fn ends_after_a_gap_are_not_anomalies() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let rs = [
            rec(Op::Gap, 1, 5, 0, Kind::Region),
            rec(Op::End, 2, 77, 0, Kind::ParallelFor),
        ];
        s.feed(&rs, &mut Log::default(), &mut |_, _| {}, &an);
        assert_eq!(an.get(Anomaly::UnmatchedEnd), 0);
    }
}
