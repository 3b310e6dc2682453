//! Decoding one thread's records into nested events: the writer's half of the
//! event path when records are kept (a trace is on). The repairs themselves are
//! [`Nesting`]'s, shared with the in-place profile.

use kprof_abi::{Anomaly, Kind};

use crate::base::anomaly::Anomalies;
use crate::hot::counters::{Values, MAX_COUNTERS};
use crate::hot::nesting::{
    count_unclosed, ended_at, ends_at_exit, Consumer, CopyInfo, DeviceActivity, Event, Extras,
    Global, Opening, SiteRef, Slice, Symbols, Transfer, ACTIVITY_ARGS, MAX_ARGS,
};
use crate::hot::open::GUID_SEQ_BITS;
use crate::hot::record::{Head, Op, CODE_SLOTS};

/// The open instances of one thread, and the rules that keep what they emit
/// nested whatever order the runtime ends them in: shared by the writer's record
/// decoding and by the in-place profile of an application thread.
pub struct Nesting {
    thread: u32,
    stack: Vec<Slice>,
    /// Records were lost: unmatched ends may be the ends of lost begins.
    lost: bool,
}

impl Nesting {
    /// The open instances of thread `thread` (none yet).
    pub fn new(thread: u32) -> Nesting {
        Nesting {
            thread,
            stack: Vec::new(),
            lost: false,
        }
    }

    /// Opens an instance nested in the innermost open one, and hands it to
    /// `began`.
    #[inline(always)]
    pub fn begin(&mut self, o: Opening, began: impl FnOnce(&Slice)) {
        let Some(kind) = Kind::from_u8(o.kind) else {
            return;
        };
        let enclosing = self.stack.last().map(|s| (s.guid, s.kind));
        let x = o.extras;
        self.stack.push(Slice {
            thread: self.thread,
            guid: o.guid,
            parent: o.parent,
            enclosing,
            kind,
            name: o.name,
            dev: o.dev,
            begin: o.begin,
            copy: x.copy,
            transfer: x.transfer,
            args: [x.arg.unwrap_or((0, 0)), (0, 0), (0, 0), (0, 0)],
            nargs: u8::from(x.arg.is_some()),
            end_lost: false,
            counters: x.counters,
            counted: false,
        });
        if let Some(top) = self.stack.last() {
            began(top);
        }
    }

    /// The GUID of the innermost open instance (0: none).
    pub fn innermost(&self) -> u64 {
        self.stack.last().map_or(0, |s| s.guid)
    }

    /// Attaches an argument to the innermost open instance (the first
    /// [`MAX_ARGS`] are kept).
    #[inline]
    pub fn arg(&mut self, key: u32, value: u64) {
        if let Some(top) = self.stack.last_mut() {
            let n = usize::from(top.nargs);
            if n < MAX_ARGS {
                top.args[n] = (key, value);
                top.nargs += 1;
            }
        }
    }

    /// Closes instance `guid` (0: the innermost of `kind`) at raw time `ts`, and
    /// every instance opened inside it that is still open (counted as an
    /// out-of-order end), handing each to `ended` with its end time; an end of
    /// nothing open is counted as unmatched.
    /// `counters`: the thread's counters read at the end; each ended slice read
    /// at its begin then holds what it counted.
    #[inline(always)]
    pub fn end(
        &mut self,
        ts: u64,
        kind: u8,
        guid: u64,
        counters: Option<Values>,
        mut ended: impl FnMut(&Slice, u64),
        anomalies: &Anomalies,
    ) {
        let Some(pos) = ended_at(&self.stack, kind, guid, self.lost, anomalies) else {
            return;
        };
        if let Some(at_end) = counters {
            for s in &mut self.stack[pos..] {
                if let Some(begin) = s.counters.as_mut() {
                    for (b, e) in begin.iter_mut().zip(at_end) {
                        *b = e.saturating_sub(*b);
                    }
                    s.counted = true;
                }
            }
        }
        // Ended in place, then dropped: a slice is large, and moving it out of
        // the stack first was a sixth of the writer's CPU (a memmove per end).
        for s in self.stack[pos..].iter().rev() {
            ended(s, ts.max(s.begin));
        }
        self.stack.truncate(pos);
    }

    /// Records were lost at raw time `ts`: the instances above depth `keep` (the
    /// lowest depth reached while dropping) ended unseen, and close here with
    /// their end marked lost.
    pub fn gap(&mut self, keep: usize, ts: u64, mut ended: impl FnMut(&Slice, u64)) {
        while self.stack.len() > keep {
            if let Some(mut s) = self.stack.pop() {
                s.end_lost = true;
                ended(&s, ts.max(s.begin));
            }
        }
        self.lost = true;
    }

    /// Closes every instance still open at raw time `end`, or when another
    /// thread reported it ended (`late`, see [`ends_at_exit`]), counting each
    /// (except kinds runtimes normally leave open, see [`Kind::may_end_late`]).
    pub fn close_all(
        &mut self,
        end: u64,
        late: &[(u64, u64)],
        mut ended: impl FnMut(&Slice, u64),
        anomalies: &Anomalies,
    ) {
        let mut ends = ends_at_exit(self.stack.iter().map(|s| s.guid), end, late);
        while let Some(s) = self.stack.pop() {
            count_unclosed(s.kind, anomalies);
            ended(&s, ends.pop().unwrap_or(end).max(s.begin));
        }
    }
}

/// The resolver state of one thread: decodes its records and feeds them to its
/// [`Nesting`].
pub struct ThreadStream {
    thread: u32,
    nesting: Nesting,
    /// The thread's GUID counter, recounted from its begins.
    next_guid: u64,
    /// Records processed (events and code-slot definitions).
    pub records: u64,
    /// Words processed.
    pub words: u64,
    /// Raw time of the newest record processed.
    pub last_ts: u64,
    /// Time of the last timed event: the base of short events' deltas.
    base_ts: u64,
    /// The thread's code slots: address and its name id once asked for.
    codes: Box<[(u64, Option<u32>); CODE_SLOTS]>,
    /// Counter values of the record just read, for the begin or end record that
    /// follows it (any other record drops them: they belonged to a dropped one).
    pending: Option<Values>,
    /// Counter values of the record being decoded.
    counters: Option<Values>,
}

impl ThreadStream {
    /// The stream of thread `thread`.
    pub fn new(thread: u32) -> ThreadStream {
        ThreadStream {
            thread,
            nesting: Nesting::new(thread),
            next_guid: u64::from(thread) << GUID_SEQ_BITS,
            records: 0,
            words: 0,
            last_ts: 0,
            base_ts: 0,
            codes: Box::new([(0, None); CODE_SLOTS]),
            pending: None,
            counters: None,
        }
    }

    /// The raw time of the event starting `words` (which holds whole events), and
    /// its op and length in words; `None` when the words do not parse (cannot
    /// happen with records written by this library).
    #[inline(always)]
    fn peek(&self, words: &[u64]) -> Option<(u64, Op, usize)> {
        let h = Head(*words.first()?);
        let op = Op::from_u8(h.op())?;
        let n = op.words();
        if words.len() < n {
            return None;
        }
        let ts = if op.is_short() {
            self.base_ts.wrapping_add(u64::from(h.low()))
        } else {
            words[1]
        };
        Some((ts, op, n))
    }

    /// Processes the events of `words` in order while their time is at most
    /// `limit` (at least one), and returns how many words it consumed. Cross-thread
    /// events go to [`Consumer::global`].
    pub fn feed<C: Consumer, S: Symbols>(
        &mut self,
        words: &[u64],
        limit: u64,
        out: &mut C,
        symbols: &mut S,
        anomalies: &Anomalies,
    ) -> usize {
        let mut i = 0;
        let mut events = 0;
        while i < words.len() {
            let Some((ts, op, n)) = self.peek(&words[i..]) else {
                // Without the op the rest of the batch cannot be parsed.
                anomalies.count(Anomaly::InternalError);
                i = words.len();
                break;
            };
            if ts > limit && i > 0 {
                break;
            }
            let h = Head(words[i]);
            let x = Units(if op.is_short() {
                &words[i + 1..i + n]
            } else {
                &words[i + 2..i + n]
            });
            i += n;
            events += 1;
            if op.is_timed() {
                self.base_ts = ts;
            }
            self.last_ts = self.last_ts.max(ts);
            if self.stage_counters(op, x) {
                continue;
            }
            self.apply(op, ts, h, x, out, symbols, anomalies);
        }
        self.records += events;
        self.words += i as u64;
        i
    }

    /// Counter values belong to the begin or end record right after them (a begin
    /// by code address may come after its slot's definition): a counters record is
    /// kept pending (returns true: nothing more to do with it), the next record
    /// takes them, any other drops them.
    #[inline(always)]
    fn stage_counters(&mut self, op: Op, x: Units<'_>) -> bool {
        self.counters = match op {
            Op::Counters => {
                let mut v = [0; MAX_COUNTERS];
                for (k, c) in v.iter_mut().enumerate() {
                    *c = if k % 2 == 0 { x.a(k / 2) } else { x.b(k / 2) };
                }
                self.pending = Some(v);
                return true;
            }
            Op::CodeDef => None,
            _ => self.pending.take(),
        };
        false
    }

    /// One decoded record, by what it does.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn apply<C: Consumer, S: Symbols>(
        &mut self,
        op: Op,
        ts: u64,
        h: Head,
        x: Units<'_>,
        out: &mut C,
        symbols: &mut S,
        anomalies: &Anomalies,
    ) {
        match op {
            Op::Counters => {}
            Op::Arg => self.nesting.arg(h.low(), x.a(0)),
            Op::CodeDef => {
                if let Some(entry) = self.codes.get_mut(usize::from(h.aux())) {
                    *entry = (x.a(0), None);
                }
            }
            Op::Begin
            | Op::BeginParent
            | Op::BeginShort
            | Op::BeginParentShort
            | Op::BeginTransferNamed
            | Op::CopyBegin => self.begin_named(op, ts, h, x, out),
            Op::BeginCode
            | Op::BeginCodeShort
            | Op::BeginCodeArgShort
            | Op::BeginAt
            | Op::BeginTransfer
            | Op::BeginAtArg => self.begin_code(op, ts, h, x, out, symbols),
            Op::End | Op::EndShort | Op::EndGuid => {
                let guid = self.end_guid(op, h, x);
                self.end(ts, h.kind(), guid, out, anomalies)
            }
            Op::Edge | Op::Instant | Op::Site | Op::Activity => self.pass_on(op, ts, h, x, out),
            Op::Alloc | Op::Free | Op::SectionStart | Op::SectionStop => {
                out.global(ts, &global(op, h, x))
            }
            Op::Gap => {
                // Instances below the lowest depth reached while dropping are
                // still open; the ones above ended (or began) unseen.
                self.nesting
                    .gap(h.low() as usize, ts, |s, t| out.event(&Event::End(s, t)));
                self.next_guid = x.b(0);
                // The thread redefines its code slots after a gap.
                *self.codes = [(0, None); CODE_SLOTS];
            }
        }
    }

    /// A begin whose record holds its name id.
    #[inline(always)]
    fn begin_named<C: Consumer>(&mut self, op: Op, ts: u64, h: Head, x: Units<'_>, out: &mut C) {
        let (dev, name, parent, extras) = match op {
            Op::Begin => (h.aux(), h.low(), 0, Extras::NONE),
            Op::BeginParent => (h.aux(), h.low(), x.a(0), Extras::NONE),
            Op::BeginShort => (0, u32::from(h.aux()), 0, Extras::NONE),
            Op::BeginParentShort => (0, u32::from(h.aux()), x.a(0), Extras::NONE),
            Op::BeginTransferNamed => {
                let transfer = Transfer {
                    bytes: x.a(1),
                    direction: x.b(1) as u32,
                };
                let extras = Extras {
                    transfer: Some(transfer),
                    ..Extras::NONE
                };
                (h.aux(), h.low(), x.a(0), extras)
            }
            Op::CopyBegin => {
                let copy = CopyInfo {
                    bytes: x.a(0),
                    src_label: x.b(0) as u32,
                    dst_space: x.a(1) as u32,
                    src_space: x.b(1) as u32,
                };
                let extras = Extras {
                    copy: Some(copy),
                    ..Extras::NONE
                };
                (h.aux(), h.low(), 0, extras)
            }
            // Only the ops above come here (see apply).
            _ => return,
        };
        self.begin(ts, h, dev, name, parent, extras, out);
    }

    /// A begin named by a code address: in the record, or in one of the thread's
    /// code slots.
    #[inline(always)]
    fn begin_code<C: Consumer, S: Symbols>(
        &mut self,
        op: Op,
        ts: u64,
        h: Head,
        x: Units<'_>,
        out: &mut C,
        symbols: &mut S,
    ) {
        let (dev, name, parent, extras) = match op {
            Op::BeginCodeShort => (0, self.code_name(h.aux(), symbols), 0, Extras::NONE),
            Op::BeginCodeArgShort => {
                let name = self.code_name(h.aux(), symbols);
                let kv = x.a(0);
                let extras = Extras {
                    arg: Some((kv as u32, kv >> 32)),
                    ..Extras::NONE
                };
                (0, name, 0, extras)
            }
            Op::BeginAt | Op::BeginTransfer => {
                let name = symbols.name_of(x.a(0));
                let transfer = (op == Op::BeginTransfer).then(|| Transfer {
                    bytes: x.a(1),
                    direction: h.low(),
                });
                let extras = Extras {
                    transfer,
                    ..Extras::NONE
                };
                (h.aux(), name, x.b(0), extras)
            }
            Op::BeginAtArg => {
                let name = symbols.name_of(x.a(0));
                let extras = Extras {
                    arg: Some((h.low(), x.b(0))),
                    ..Extras::NONE
                };
                (h.aux(), name, 0, extras)
            }
            Op::BeginCode => {
                let codeptr = u64::from(h.low()) | u64::from(h.aux()) << 32;
                // The head's aux bits are the address: the device is 0.
                (0, symbols.name_of(codeptr), 0, Extras::NONE)
            }
            // Only the ops above come here (see apply).
            _ => return,
        };
        self.begin(ts, h, dev, name, parent, extras, out);
    }

    /// The GUID an end record names (0: the innermost open instance of its kind).
    #[inline(always)]
    fn end_guid(&self, op: Op, h: Head, x: Units<'_>) -> u64 {
        match op {
            // Counted back from the thread's newest begin.
            Op::EndShort => match h.aux() {
                0 => 0,
                back => self.next_guid - u64::from(back - 1),
            },
            // The sequence number of one of the thread's own begins.
            Op::End => {
                let seq = u64::from(h.low()) | u64::from(h.aux()) << 32;
                if seq == 0 {
                    0
                } else {
                    u64::from(self.thread) << GUID_SEQ_BITS | seq
                }
            }
            // EndGuid: the whole GUID (another thread's instance, say).
            _ => x.a(0),
        }
    }

    /// A record the consumer takes as it is, on this thread: an edge, an instant,
    /// a site, a device activity.
    #[inline(always)]
    fn pass_on<C: Consumer>(&mut self, op: Op, ts: u64, h: Head, x: Units<'_>, out: &mut C) {
        let thread = self.thread;
        match op {
            Op::Site => out.event(&Event::Site {
                thread,
                token: u64::from(h.low()) | u64::from(h.aux()) << 32,
                guid: self.nesting.innermost(),
            }),
            _ => {
                let Some(kind) = Kind::from_u8(h.kind()) else {
                    return;
                };
                match op {
                    Op::Edge => out.event(&Event::Edge {
                        thread,
                        kind,
                        from: x.a(0),
                        to: x.b(0),
                        ts,
                    }),
                    Op::Instant => out.event(&Event::Instant {
                        thread,
                        kind,
                        name: h.low(),
                        a: x.a(0),
                        b: x.b(0),
                        ts,
                    }),
                    Op::Activity => {
                        out.event(&Event::Activity(&device_activity(thread, kind, ts, h, x)))
                    }
                    // Only the ops above come here (see apply).
                    _ => {}
                }
            }
        }
    }

    /// The name id of the address in code slot `slot`, symbolized once per
    /// definition.
    fn code_name<S: Symbols>(&mut self, slot: u16, symbols: &mut S) -> u32 {
        match self.codes.get_mut(usize::from(slot)) {
            Some((_, Some(name))) => *name,
            Some((addr, name)) => *name.insert(symbols.name_of(*addr)),
            None => symbols.name_of(0),
        }
    }

    /// Raw time of the first event in `words` (for merging threads by time).
    pub fn next_time(&self, words: &[u64]) -> u64 {
        self.peek(words).map_or(u64::MAX, |(ts, _, _)| ts)
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn begin<C: Consumer>(
        &mut self,
        ts: u64,
        h: Head,
        dev: u16,
        name: u32,
        parent: u64,
        extras: Extras,
        out: &mut C,
    ) {
        self.next_guid += 1;
        let o = Opening {
            guid: self.next_guid,
            parent,
            kind: h.kind(),
            name,
            dev,
            begin: ts,
            extras: Extras {
                counters: self.counters.take(),
                ..extras
            },
        };
        self.nesting.begin(o, |s| out.event(&Event::Begin(s)));
    }

    #[inline(always)]
    fn end<C: Consumer>(
        &mut self,
        ts: u64,
        kind: u8,
        guid: u64,
        out: &mut C,
        anomalies: &Anomalies,
    ) {
        self.nesting.end(
            ts,
            kind,
            guid,
            self.counters.take(),
            |s, t| out.event(&Event::End(s, t)),
            anomalies,
        );
    }

    /// Closes every slice still open at raw time `end`, or as `late` says (see
    /// [`Nesting::close_all`]).
    pub fn close_all<C: Consumer>(
        &mut self,
        end: u64,
        late: &[(u64, u64)],
        out: &mut C,
        anomalies: &Anomalies,
    ) {
        self.nesting
            .close_all(end, late, |s, t| out.event(&Event::End(s, t)), anomalies);
    }
}

/// The extension units of one record: pairs of words after its head (and its
/// timestamp, for a timed record).
#[derive(Clone, Copy)]
struct Units<'a>(&'a [u64]);

impl Units<'_> {
    /// The first word of unit `k` (0 when the record has none).
    #[inline(always)]
    fn a(self, k: usize) -> u64 {
        self.0.get(2 * k).copied().unwrap_or(0)
    }

    /// The second word of unit `k` (0 when the record has none).
    #[inline(always)]
    fn b(self, k: usize) -> u64 {
        self.0.get(2 * k + 1).copied().unwrap_or(0)
    }
}

/// A cross-thread record (memory, sections) as the consumer takes it.
#[inline(always)]
fn global(op: Op, h: Head, x: Units<'_>) -> Global {
    let (space, label) = (x.a(1) as u32, h.low());
    let (ptr, bytes) = (x.a(0), x.b(0));
    match op {
        Op::Alloc => Global::Alloc {
            space,
            label,
            ptr,
            bytes,
        },
        Op::Free => Global::Free {
            space,
            label,
            ptr,
            bytes,
        },
        Op::SectionStart => Global::SectionStart(h.low()),
        // SectionStop: the only other op that comes here (see apply).
        _ => Global::SectionStop(h.low()),
    }
}

/// A device activity record of `thread`, decoded.
#[inline(always)]
fn device_activity(thread: u32, kind: Kind, ts: u64, h: Head, x: Units<'_>) -> DeviceActivity {
    let mut args = [(0, 0); ACTIVITY_ARGS];
    let nargs = ((x.a(2) >> 8) as usize).min(ACTIVITY_ARGS);
    for (k, arg) in args.iter_mut().enumerate().take(nargs) {
        *arg = (x.a(4 + k) as u32, x.b(4 + k));
    }
    DeviceActivity {
        thread,
        kind,
        name: h.low(),
        dev: h.aux(),
        begin: ts,
        end: x.a(0).max(ts),
        begin_ns: x.a(3),
        dur_ns: x.b(2),
        bytes: x.b(0),
        direction: x.a(2) as u8,
        site: SiteRef::from_word(x.a(1)),
        flow_from: x.b(1),
        args,
        nargs: nargs as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoSymbols;

    impl Symbols for NoSymbols {
        fn name_of(&mut self, addr: u64) -> u32 {
            addr as u32
        }
    }

    #[derive(Default)]
    struct Log(Vec<String>);

    impl Consumer for Log {
        fn event(&mut self, ev: &Event<'_>) {
            self.0.push(match ev {
                Event::Begin(s) => format!("B{}", s.name),
                // `!`: closed at a gap, its real end lost.
                Event::End(s, t) => format!("E{}@{t}{}", s.name, if s.end_lost { "!" } else { "" }),
                Event::Instant { name, .. } => format!("I{name}"),
                Event::Edge { from, to, .. } => format!("D{from}>{to}"),
                Event::Site { token, guid, .. } => format!("S{token}>{guid:#x}"),
                Event::Activity(a) => format!(
                    "A{}:{:?}@{}-{}/{:?}<{:#x} {:?}",
                    a.name,
                    a.kind,
                    a.begin,
                    a.end,
                    a.site,
                    a.flow_from,
                    a.args()
                ),
            });
        }
        fn global(&mut self, _: u64, _: &Global) {}
    }

    use crate::hot::record::{head, long};

    fn begin(ts: u64, name: u32, kind: Kind) -> Vec<u64> {
        long(ts, Op::Begin, kind as u8, name, 0).to_vec()
    }

    /// An end of this thread's GUID with counter `seq` (0: innermost of `kind`).
    fn end(ts: u64, seq: u32, kind: Kind) -> Vec<u64> {
        long(ts, Op::End, kind as u8, seq, 0).to_vec()
    }

    #[test]
    fn decodes_sites_and_device_activities() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let [site, _] = long(0, Op::Site, 0, 5, 0);
        let mut act = long(100, Op::Activity, Kind::GpuKernel as u8, 9, 3).to_vec();
        act.extend([
            150,
            0,
            SiteRef::Token(5).word(),
            0x77,
            2 << 8,
            50,
            1000,
            0,
            11,
            256,
            12,
            128,
        ]);
        act.resize(Op::Activity.words(), 0);
        let words: Vec<u64> = [begin(10, 1, Kind::Region), vec![site, 0], act].concat();
        s.feed(&words, u64::MAX, &mut log, &mut NoSymbols, &an);
        assert_eq!(
            log.0,
            [
                "B1".to_string(),
                format!("S5>{:#x}", 1u64 << GUID_SEQ_BITS | 1),
                "A9:GpuKernel@100-150/Token(5)<0x77 [(11, 256), (12, 128)]".to_string(),
            ]
        );
        // Neither moves the thread's time base: a short event after them is
        // relative to the begin.
        assert_eq!(s.base_ts, 10);
    }

    #[test]
    fn repairs_out_of_order_and_unmatched_ends() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let rs = [
            begin(1, 1, Kind::Region),
            begin(2, 2, Kind::ParallelFor),
            // Region popped while the kernel is open: the kernel closes first.
            end(3, 0, Kind::Region),
            // The kernel's own end (GUID counter 2) comes too late, as does a pop.
            end(4, 2, Kind::ParallelFor),
            end(5, 0, Kind::Region),
            begin(6, 3, Kind::ParallelFor),
        ]
        .concat();
        s.feed(&rs, u64::MAX, &mut log, &mut NoSymbols, &an);
        s.close_all(9, &[], &mut log, &an);
        assert_eq!(log.0, ["B1", "B2", "E2@3", "E1@3", "B3", "E3@9"]);
        assert_eq!(an.get(Anomaly::OutOfOrderEnd), 1);
        assert_eq!(an.get(Anomaly::UnmatchedEnd), 2);
        assert_eq!(an.get(Anomaly::UnclosedAtExit), 1);
    }

    #[test]
    fn an_end_reported_late_closes_its_instance_and_those_inside_at_exit() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let base = 1u64 << GUID_SEQ_BITS;
        // A worker parked in its implicit barrier when the run ends; another
        // thread reported its implicit task ended at 5 (and something unknown).
        let rs = [
            begin(1, 1, Kind::OmpImplicitTask),
            begin(2, 2, Kind::OmpBarrier),
        ]
        .concat();
        s.feed(&rs, u64::MAX, &mut log, &mut NoSymbols, &an);
        s.close_all(9, &[(base | 7, 3), (base | 1, 5)], &mut log, &an);
        assert_eq!(log.0, ["B1", "B2", "E2@5", "E1@5"]);
        // Never before the instance began, never after the run's end.
        let mut log = Log::default();
        let mut s = ThreadStream::new(1);
        s.feed(&rs, u64::MAX, &mut log, &mut NoSymbols, &an);
        s.close_all(9, &[(base | 2, 1), (base | 1, 50)], &mut log, &an);
        assert_eq!(log.0, ["B1", "B2", "E2@2", "E1@9"]);
        assert_eq!(an.get(Anomaly::UnclosedAtExit), 0);
    }

    #[test]
    fn ends_after_a_gap_are_not_anomalies() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let base = 1u64 << GUID_SEQ_BITS;
        let rs = [
            begin(1, 1, Kind::Region),
            begin(2, 2, Kind::ParallelFor),
            // Dropped: the kernel's end, a begin/end pair, a begin (counter 5).
            // The lowest depth while dropping was 1 (the region alone).
            long(9, Op::Gap, 0, 1, 0).to_vec(),
            vec![4, base | 5],
            end(10, 5, Kind::ParallelFor),
            begin(11, 6, Kind::ParallelFor),
            end(12, 6, Kind::ParallelFor),
            end(13, 0, Kind::Region),
        ]
        .concat();
        s.feed(&rs, u64::MAX, &mut log, &mut NoSymbols, &an);
        assert_eq!(an.get(Anomaly::UnmatchedEnd), 0);
        assert_eq!(log.0, ["B1", "B2", "E2@9!", "B6", "E6@12", "E1@13"]);
    }

    /// Symbols that remember every address asked for, named by their order.
    #[derive(Default)]
    struct Addresses(Vec<u64>);

    impl Symbols for Addresses {
        fn name_of(&mut self, addr: u64) -> u32 {
            self.0.push(addr);
            self.0.len() as u32
        }
    }

    /// A slice as it ended: name, device, parent, args.
    type EndedSlice = (u32, u16, u64, Vec<(u32, u64)>);

    /// The slices as they end.
    #[derive(Default)]
    struct Ended(Vec<EndedSlice>);

    impl Consumer for Ended {
        fn event(&mut self, ev: &Event<'_>) {
            if let Event::End(s, _) = ev {
                self.0.push((s.name, s.dev, s.parent, s.args().to_vec()));
            }
        }
        fn global(&mut self, _: u64, _: &Global) {}
    }

    #[test]
    fn decodes_code_address_begins() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let (mut out, mut syms) = (Ended::default(), Addresses::default());
        let kind = Kind::OmpParallel as u8;
        let addr = 0x7f12_3456_789a_u64;
        let rs = [
            // Two words: the address in the head's 48 bits.
            long(1, Op::BeginCode, kind, addr as u32, (addr >> 32) as u16).to_vec(),
            // Four: address and argument value; the key in the head.
            long(2, Op::BeginAtArg, kind, 42, 3).to_vec(),
            vec![addr + 1, 7],
            end(3, 0, Kind::OmpParallel),
            end(4, 0, Kind::OmpParallel),
            // The general form: an explicit parent.
            long(5, Op::BeginAt, kind, 0, 2).to_vec(),
            vec![addr + 2, 99],
            end(6, 0, Kind::OmpParallel),
        ]
        .concat();
        s.feed(&rs, u64::MAX, &mut out, &mut syms, &an);
        assert_eq!(syms.0, [addr, addr + 1, addr + 2]);
        assert_eq!(
            out.0,
            [
                (2, 3, 0, vec![(42, 7)]),
                (1, 0, 0, vec![]),
                (3, 2, 99, vec![])
            ]
        );
        assert_eq!(an.get(Anomaly::InternalError), 0);
    }

    /// Short events: times as deltas from the last timed event (not from an
    /// argument), ends by back reference, and the long form in between.
    #[test]
    fn decodes_short_events() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let mut log = Log::default();
        let region = Kind::Region as u8;
        let guid = |seq: u64| (1u64 << GUID_SEQ_BITS) | seq;
        let rs = [
            long(1000, Op::Begin, region, 1, 0).to_vec(),
            // GUID 2 at 1000 + 5, parent GUID 1 given explicitly.
            vec![head(Op::BeginParentShort, region, 5, 2), guid(1)],
            long(0, Op::Arg, 0, 9, 0).to_vec(),
            vec![4, 0],
            // GUID 3 at 1005 + 7: the argument's time is no base.
            vec![head(Op::BeginShort, region, 7, 3)],
            // End GUID 2 (one GUID taken since): GUID 3 closes first, out of order.
            vec![head(Op::EndShort, region, 10, 2)],
            long(2000, Op::Begin, region, 4, 0).to_vec(),
            // Innermost of the kind: GUID 4 at 2000 + 1.
            vec![head(Op::EndShort, region, 1, 0)],
            vec![head(Op::EndShort, region, 3, 0)],
        ]
        .concat();
        assert_eq!(s.next_time(&rs), 1000);
        assert_eq!(
            s.feed(&rs, u64::MAX, &mut log, &mut NoSymbols, &an),
            rs.len()
        );
        assert_eq!(
            log.0,
            ["B1", "B2", "B3", "E3@1022", "E2@1022", "B4", "E4@2001", "E1@2004"]
        );
        assert_eq!((s.records, s.words), (8, rs.len() as u64));
        assert_eq!(an.get(Anomaly::OutOfOrderEnd), 1);
        assert_eq!(an.get(Anomaly::UnmatchedEnd), 0);
    }

    /// Code slots: defined once, named by the writer's symbols once per
    /// definition, redefined, and cleared at a gap.
    #[test]
    fn decodes_code_slots() {
        let an = Anomalies::default();
        let mut s = ThreadStream::new(1);
        let (mut out, mut syms) = (Ended::default(), Addresses::default());
        let kind = Kind::OmpLoop as u8;
        let end = |delta| vec![head(Op::EndShort, kind, delta, 0)];
        let rs = [
            long(100, Op::Begin, Kind::OmpParallel as u8, 50, 0).to_vec(),
            vec![head(Op::CodeDef, 0, 0, 7), 0x4000],
            vec![head(Op::BeginCodeShort, kind, 1, 7)],
            end(1),
            // The slot again: no definition, no new symbol lookup.
            vec![head(Op::BeginCodeArgShort, kind, 1, 7), 42 | 3 << 32],
            end(1),
            // Redefined.
            vec![head(Op::CodeDef, 0, 0, 7), 0x5000],
            vec![head(Op::BeginCodeShort, kind, 1, 7)],
            end(1),
            // After a gap every slot is empty (address 0) until defined.
            long(200, Op::Gap, 0, 1, 0).to_vec(),
            vec![0, (1 << GUID_SEQ_BITS) | 4],
            vec![head(Op::BeginCodeShort, kind, 1, 7)],
            end(1),
        ]
        .concat();
        s.feed(&rs, u64::MAX, &mut out, &mut syms, &an);
        assert_eq!(syms.0, [0x4000, 0x5000, 0]);
        let names: Vec<(u32, Vec<(u32, u64)>)> = out.0.iter().map(|e| (e.0, e.3.clone())).collect();
        assert_eq!(
            names,
            [(1, vec![]), (1, vec![(42, 3)]), (2, vec![]), (3, vec![])]
        );
        assert_eq!(an.get(Anomaly::InternalError), 0);
    }
}
