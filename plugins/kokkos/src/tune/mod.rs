//! The tuner behind Kokkos' tuning interface (`KPROF_TUNE=1`): declared variables,
//! open contexts and one [`search::Search`] per tuning problem.
//!
//! A tuning problem is a set of output variables together with the values of the
//! input variables of the request (Kokkos passes the kernel's name and type; an
//! application may pass problem sizes): `team_size` for kernel "axpy" and for
//! kernel "dot" are two problems. Each request of a context gets the problem's
//! next candidate; the context's end measures it: its duration, or the value
//! Kokkos passes for a declared optimization goal (negated to maximize).
//!
//! Everything here is plain data, driven by `crate::tuning` (the C callbacks),
//! which decodes Kokkos' structs and holds the one [`Tuner`] under a lock.

pub mod cache;
pub mod report;
pub mod search;
pub mod space;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use search::Search;
use space::{Axis, Placement, Value, ValueType, Variable};

/// Problems tuned at most; later ones keep their defaults (counted).
pub const MAX_PROBLEMS: usize = 4096;
/// Contexts open at once, at most: Kokkos 3.4 begins a context per kernel that it
/// never ends, so the oldest half is forgotten (as never ended) beyond this.
pub const MAX_OPEN: usize = 4096;

/// Misuses of the interface, counted (each also one core anomaly).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Misuses {
    /// A variable id never declared (in a request, an end or a goal).
    pub unknown_variables: u64,
    /// A default value outside its variable's declared candidates.
    pub values_outside_set: u64,
    /// A context ended that was not open (ended twice, or never begun).
    pub unmatched_ends: u64,
    /// A context begun while open under the same id.
    pub begun_twice: u64,
    /// Contexts never ended (forgotten beyond [`MAX_OPEN`], or open at exit).
    pub never_ended: u64,
    /// A declaration with an undefined type or candidate kind.
    pub bad_declarations: u64,
    /// Requests beyond [`MAX_PROBLEMS`] problems.
    pub too_many_problems: u64,
}

impl Misuses {
    /// Every counter with its key in reports.
    pub fn list(&self) -> [(&'static str, u64); 7] {
        [
            ("unknown_variables", self.unknown_variables),
            ("values_outside_set", self.values_outside_set),
            ("unmatched_ends", self.unmatched_ends),
            ("begun_twice", self.begun_twice),
            ("never_ended", self.never_ended),
            ("bad_declarations", self.bad_declarations),
            ("too_many_problems", self.too_many_problems),
        ]
    }

    fn total(&self) -> u64 {
        self.list().iter().map(|(_, n)| n).sum()
    }
}

/// One tuning problem.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Key: outputs and input values (also the cache's key).
    pub key: String,
    /// Output variables (ids as declared in this run).
    pub outputs: Vec<usize>,
    /// Input variables' names and values.
    pub inputs: Vec<(String, Value)>,
    /// Lattice axis of each output.
    pub axes: Vec<Axis>,
    /// The program's default of each output.
    pub defaults: Vec<Value>,
    /// The search.
    pub search: Search,
    /// Requests answered.
    pub requests: u64,
    /// Contexts whose values a chained tool changed (not measured).
    pub overridden: u64,
    /// What is minimized: "duration" or the goal variable's name.
    pub objective: String,
    /// The gain the cache recorded, when the values came from it.
    pub cached_gain: Option<f64>,
}

impl Problem {
    /// The values of candidate `c`.
    pub fn values(&self, c: usize) -> Vec<Value> {
        let point = &self.search.candidates()[c].point;
        self.axes
            .iter()
            .zip(point)
            .zip(&self.defaults)
            .map(|((a, &i), d)| a.value(i, d))
            .collect()
    }

    /// The relative gain of the chosen values over the default (0.25: a quarter
    /// of the default's cost saved), from their estimates (lowest measurements),
    /// when both were measured; for values from the
    /// cache, the gain the run that found them measured. Here, not in [`report`],
    /// because the cache entries need it too and `report` reads the tuner: the
    /// imports run one way, from `report` to this module.
    pub fn gain(&self) -> Option<f64> {
        if self.cached_gain.is_some() {
            return self.cached_gain;
        }
        let cands = self.search.candidates();
        let d = cands.first()?.estimate();
        let b = cands.get(self.search.best())?.estimate();
        (d.is_finite() && b.is_finite() && d != 0.0).then(|| (d - b) / d.abs())
    }
}

/// A context open now.
#[derive(Debug, Clone)]
struct Open {
    seq: u64,
    begun: Instant,
    /// The problem and candidate it runs.
    request: Option<(usize, usize)>,
    /// The declared goal: variable id, maximize.
    goal: Option<(usize, bool)>,
}

/// The state of the tuning interface for the process.
#[derive(Debug, Default)]
pub struct Tuner {
    vars: HashMap<usize, (Variable, bool)>,
    problems: Vec<Problem>,
    by_key: HashMap<String, usize>,
    open: HashMap<usize, Open>,
    seq: u64,
    /// Contexts begun.
    pub contexts: u64,
    /// Counted misuses.
    pub misuses: Misuses,
    cached: BTreeMap<String, cache::Entry>,
}

impl Tuner {
    /// A tuner starting from `cached` entries (from [`cache::load`]).
    pub fn new(cached: BTreeMap<String, cache::Entry>) -> Tuner {
        Tuner {
            cached,
            ..Tuner::default()
        }
    }

    /// Misuses counted so far.
    pub fn misuse_total(&self) -> u64 {
        self.misuses.total()
    }

    /// `kokkosp_declare_output_type` / `_input_type`; `None`: a declaration this
    /// interface does not define (counted, the variable stays unknown).
    pub fn declare(&mut self, id: usize, var: Option<Variable>, output: bool) {
        match var {
            Some(v) => {
                self.vars.insert(id, (v, output));
            }
            None => self.misuses.bad_declarations += 1,
        }
    }

    /// The type of variable `id`, when declared.
    pub fn value_type(&self, id: usize) -> Option<ValueType> {
        self.vars.get(&id).map(|(v, _)| v.ty)
    }

    /// `kokkosp_begin_context`.
    pub fn begin(&mut self, ctx: usize, now: Instant) {
        self.contexts += 1;
        self.seq += 1;
        let open = Open {
            seq: self.seq,
            begun: now,
            request: None,
            goal: None,
        };
        if self.open.insert(ctx, open).is_some() {
            self.misuses.begun_twice += 1;
        }
        if self.open.len() > MAX_OPEN {
            let mut seqs: Vec<u64> = self.open.values().map(|o| o.seq).collect();
            seqs.sort_unstable();
            let cut = seqs[seqs.len() / 2];
            let before = self.open.len();
            self.open.retain(|_, o| o.seq >= cut);
            self.misuses.never_ended += (before - self.open.len()) as u64;
        }
    }

    /// `kokkosp_declare_optimization_goal`.
    pub fn goal(&mut self, ctx: usize, var: usize, maximize: bool) {
        if !self.vars.contains_key(&var) {
            self.misuses.unknown_variables += 1;
        }
        match self.open.get_mut(&ctx) {
            Some(o) => o.goal = Some((var, maximize)),
            None => self.misuses.unmatched_ends += 1,
        }
    }

    /// `kokkosp_request_values`: the value of each output (`None`: leave it as
    /// the program gave it: an unknown variable). `inputs` and `outputs` are the
    /// variable ids with their values (`None`: undecodable, the id is unknown).
    pub fn request(
        &mut self,
        ctx: usize,
        now: Instant,
        inputs: &[(usize, Option<Value>)],
        outputs: &[(usize, Option<Value>)],
    ) -> Vec<Option<Value>> {
        let mut answer = vec![None; outputs.len()];
        let mut ins: Vec<(String, Value)> = Vec::new();
        for (id, v) in inputs {
            match (self.vars.get(id), v) {
                (Some((var, _)), Some(v)) => ins.push((var.name.clone(), v.clone())),
                _ => self.misuses.unknown_variables += 1,
            }
        }
        ins.sort_by(|a, b| a.0.cmp(&b.0));
        let mut outs: Vec<(usize, usize, Value)> = Vec::new(); // (slot, id, default)
        for (slot, (id, v)) in outputs.iter().enumerate() {
            match (self.vars.get(id), v) {
                (Some((_, true)), Some(v)) => outs.push((slot, *id, v.clone())),
                _ => self.misuses.unknown_variables += 1,
            }
        }
        if outs.is_empty() {
            return answer;
        }
        let names: Vec<String> = outs
            .iter()
            .map(|(_, id, _)| self.vars[id].0.name.clone())
            .collect();
        let key = problem_key(&names, &ins);
        let p = match self.by_key.get(&key) {
            Some(&p) => p,
            None => {
                if self.problems.len() >= MAX_PROBLEMS {
                    self.misuses.too_many_problems += 1;
                    return answer;
                }
                let p = self.new_problem(key, &outs, ins);
                let objective = self
                    .open
                    .get(&ctx)
                    .and_then(|o| o.goal)
                    .and_then(|(g, _)| self.vars.get(&g).map(|(v, _)| v.name.clone()))
                    .unwrap_or_else(|| "duration".into());
                self.problems[p].objective = objective;
                p
            }
        };
        let problem = &mut self.problems[p];
        problem.requests += 1;
        let c = problem.search.next();
        for ((slot, _, _), value) in outs.iter().zip(problem.values(c)) {
            answer[*slot] = Some(value);
        }
        // A request outside any context is timed from now.
        self.seq += 1;
        let seq = self.seq;
        let o = self.open.entry(ctx).or_insert(Open {
            seq,
            begun: now,
            request: None,
            goal: None,
        });
        o.request = Some((p, c));
        answer
    }

    fn new_problem(
        &mut self,
        key: String,
        outs: &[(usize, usize, Value)],
        ins: Vec<(String, Value)>,
    ) -> usize {
        let mut axes = Vec::new();
        let mut defaults = Vec::new();
        let mut start = Vec::new();
        for (_, id, default) in outs {
            let var = &self.vars[id].0;
            let axis = var.axis();
            let (i, how) = axis.place(default, &var.candidates);
            if how == Placement::Outside {
                self.misuses.values_outside_set += 1;
            }
            start.push(i);
            defaults.push(default.clone());
            axes.push(axis);
        }
        let sizes: Vec<usize> = axes.iter().map(Axis::size).collect();
        let cached_gain = self.cached.get(&key).map(|e| e.gain);
        let search = match self.cached.get(&key).and_then(|e| {
            let best: Option<Vec<usize>> = outs
                .iter()
                .zip(&axes)
                .zip(&e.best)
                .map(|(((_, id, _), axis), v)| {
                    let var = &self.vars[id].0;
                    let v = Value::from_json(v, var.ty)?;
                    match axis.place(&v, &var.candidates) {
                        (i, Placement::Inside) => Some(i),
                        _ => None,
                    }
                })
                .collect();
            best.filter(|b| b.len() == outs.len())
        }) {
            Some(best) => Search::converged(sizes, start, best),
            None => Search::new(sizes, start, seed(&key)),
        };
        self.problems.push(Problem {
            key: key.clone(),
            outputs: outs.iter().map(|(_, id, _)| *id).collect(),
            inputs: ins,
            axes,
            defaults,
            search,
            requests: 0,
            overridden: 0,
            objective: String::new(),
            cached_gain: None,
        });
        let p = self.problems.len() - 1;
        if self.problems[p].search.strategy() == search::Strategy::Cached {
            self.problems[p].cached_gain = cached_gain;
        }
        self.by_key.insert(key, p);
        p
    }

    /// A chained tool changed the values of context `ctx`: it is not measured.
    pub fn overridden(&mut self, ctx: usize) {
        if let Some((p, _)) = self.open.get_mut(&ctx).and_then(|o| o.request.take()) {
            self.problems[p].overridden += 1;
        }
    }

    /// `kokkosp_end_context`: `value` is the variable id Kokkos passes and its
    /// value, when that id is declared.
    pub fn end(&mut self, ctx: usize, now: Instant, value: (usize, Option<Value>)) {
        let Some(open) = self.open.remove(&ctx) else {
            self.misuses.unmatched_ends += 1;
            return;
        };
        let Some((p, c)) = open.request else {
            return;
        };
        let cost = match (open.goal, value) {
            (Some((g, maximize)), (id, Some(v))) if g == id => match v.number() {
                Some(x) if maximize => -x,
                Some(x) => x,
                None => return,
            },
            _ => now.saturating_duration_since(open.begun).as_nanos() as f64,
        };
        self.problems[p].search.record(c, cost);
    }

    /// The problems met so far.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The run is over: contexts still open were never ended.
    pub fn close(&mut self) {
        self.misuses.never_ended += self.open.len() as u64;
        self.open.clear();
    }

    /// The cache entries of the problems that converged in this run (or came
    /// from the cache).
    pub fn cache_entries(&self) -> BTreeMap<String, cache::Entry> {
        self.problems
            .iter()
            .filter(|p| p.search.is_converged())
            .map(|p| {
                let best = p.search.best();
                let entry = cache::Entry {
                    outputs: p
                        .outputs
                        .iter()
                        .map(|id| self.vars[id].0.name.clone())
                        .collect(),
                    best: p.values(best).iter().map(Value::to_json).collect(),
                    gain: p.gain().unwrap_or(0.0),
                };
                (p.key.clone(), entry)
            })
            .collect()
    }

    /// The declared variable `id` (name, declaration).
    pub fn variable(&self, id: usize) -> Option<&Variable> {
        self.vars.get(&id).map(|(v, _)| v)
    }
}

/// The key of a problem: its outputs' names and its inputs' values.
pub fn problem_key(outputs: &[String], inputs: &[(String, Value)]) -> String {
    let mut k = outputs.join(",");
    k.push_str(" |");
    for (n, v) in inputs {
        k.push_str(&format!(" {n}={v}"));
    }
    k
}

/// A seed from the key (FNV-1a), so a problem's sample is the same every run.
fn seed(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::Candidates;
    use std::time::Duration;

    fn tuner_with_block(cached: BTreeMap<String, cache::Entry>) -> Tuner {
        let mut t = Tuner::new(cached);
        let set = (0..8).map(|k| Value::Int(1 << k)).collect();
        t.declare(
            1,
            Some(Variable {
                name: "block".into(),
                ty: ValueType::Int,
                category: 1,
                candidates: Candidates::Set(set),
            }),
            true,
        );
        t.declare(
            2,
            Some(Variable {
                name: "kernel".into(),
                ty: ValueType::Text,
                category: 0,
                candidates: Candidates::Unbounded,
            }),
            false,
        );
        t
    }

    /// Runs `n` contexts whose cost is `cost(block)` µs (faked clock); returns the
    /// blocks chosen.
    fn run(t: &mut Tuner, n: usize, cost: impl Fn(i64) -> u64) -> Vec<i64> {
        let mut now = Instant::now();
        let mut chosen = Vec::new();
        for _ in 0..n {
            t.begin(1, now);
            let got = t.request(
                1,
                now,
                &[(2, Some(Value::Text("stencil".into())))],
                &[(1, Some(Value::Int(16)))],
            );
            let Some(Value::Int(b)) = got[0] else {
                panic!("no value: {got:?}")
            };
            chosen.push(b);
            now += Duration::from_micros(cost(b));
            t.end(1, now, (0, None));
        }
        chosen
    }

    fn bowl(b: i64) -> u64 {
        let x = (b as f64).log2() - 2.0;
        (20.0 * (1.0 + 0.5 * x * x)) as u64
    }

    #[test]
    fn converges_then_exploits_then_caches() {
        let mut t = tuner_with_block(BTreeMap::new());
        let chosen = run(&mut t, 100, bowl);
        assert_eq!(chosen[0], 16, "the default first");
        // Noiseless: every value measured twice, then the best.
        assert!(chosen[16..].iter().all(|&b| b == 4), "{chosen:?}");
        let p = &t.problems()[0];
        assert_eq!(p.search.searching(), 16);
        assert_eq!(t.misuse_total(), 0, "{:?}", t.misuses);
        let entries = t.cache_entries();
        let e = entries.values().next().unwrap();
        assert_eq!(e.best, vec![serde_json::Value::from(4)]);
        assert!(e.gain > 0.5, "{e:?}");
        // The next run starts at the best.
        let mut again = tuner_with_block(entries.clone());
        let chosen = run(&mut again, 5, bowl);
        assert_eq!(chosen, vec![4; 5]);
        // ... and keeps the gain measured when it was found.
        assert_eq!(again.cache_entries(), entries);
    }

    #[test]
    fn goal_values_are_the_objective() {
        let mut t = tuner_with_block(BTreeMap::new());
        t.declare(
            3,
            Some(Variable {
                name: "flops".into(),
                ty: ValueType::Double,
                category: 3,
                candidates: Candidates::Unbounded,
            }),
            false,
        );
        let now = Instant::now();
        for _ in 0..200 {
            t.begin(7, now);
            t.goal(7, 3, true);
            let got = t.request(7, now, &[], &[(1, Some(Value::Int(16)))]);
            let Some(Value::Int(b)) = got[0] else {
                panic!()
            };
            // Maximize flops: best at 64.
            let flops = 100.0 - 10.0 * ((b as f64).log2() - 6.0).powi(2);
            t.end(7, now, (3, Some(Value::Double(flops))));
        }
        let p = &t.problems()[0];
        assert_eq!(p.objective, "flops");
        assert_eq!(p.values(p.search.best()), vec![Value::Int(64)]);
    }

    #[test]
    fn misuses_are_counted() {
        let mut t = tuner_with_block(BTreeMap::new());
        let now = Instant::now();
        t.end(5, now, (0, None));
        t.begin(1, now);
        t.begin(1, now);
        let got = t.request(
            1,
            now,
            &[(99, None)],
            &[(1, Some(Value::Int(3))), (42, None)],
        );
        assert_eq!(got.len(), 2);
        assert!(got[0].is_some() && got[1].is_none());
        t.end(1, now, (0, None));
        t.end(1, now, (0, None));
        t.begin(2, now);
        t.close();
        t.declare(9, None, true);
        let m = &t.misuses;
        assert_eq!(m.unmatched_ends, 2);
        assert_eq!(m.begun_twice, 1);
        assert_eq!(m.unknown_variables, 2);
        assert_eq!(m.values_outside_set, 1);
        assert_eq!(m.never_ended, 1);
        assert_eq!(m.bad_declarations, 1);
    }

    #[test]
    fn leaked_contexts_are_bounded() {
        let mut t = Tuner::default();
        let now = Instant::now();
        for ctx in 0..3 * MAX_OPEN {
            t.begin(ctx, now);
        }
        assert!(t.open.len() <= MAX_OPEN);
        t.close();
        assert_eq!(t.misuses.never_ended, 3 * MAX_OPEN as u64);
    }
}
