//! The Kokkos Tools tuning callbacks: kprof's tuner with `KPROF_TUNE=1`, else
//! forwarded to a chained tool.
//!
//! Without `KPROF_TUNE=1` kprof does no tuning, but a tuning tool chained after it
//! (`KOKKOS_TOOLS_LIBS="libkprof.so;libtuner.so"`) must still get Kokkos' tuning
//! calls. Exporting them unconditionally would change Kokkos when no chained tool
//! tunes: Kokkos (built with `Kokkos_ENABLE_TUNING`) takes the presence of
//! `kokkosp_request_values` as "a tuning tool is loaded" (`have_tuning_tool()`), and
//! its own tuners (`--kokkos-tune-internals`) then apply whatever values come back:
//! values that a do-nothing forwarder leaves at the tuner's starting point (team
//! sizes, MDRange tiles of 1), not Kokkos' defaults.
//!
//! So each tuning symbol is a GNU indirect function: Kokkos' `dlsym` runs its
//! resolver, which loads the chained tool (Kokkos looks the symbols up before it
//! initializes the tool) and answers kprof's tuner when `KPROF_TUNE=1`, the
//! forwarder when that tool exports the same callback, and NULL otherwise: to
//! Kokkos the symbol is then absent, exactly as if kprof did not export it.
//!
//! With the tuner, kprof chooses the values, then forwards the call: a chained tool
//! sees kprof's choice and may still change it (its change wins; that context is not
//! measured). This module decodes Kokkos' structs; the tuning itself is in
//! [`crate::tune`].

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use kprof_abi::guard::guard;
use kprof_abi::Anomaly;

use crate::chain::{self, next, Next};
use crate::tune::cache::{self, Identity};
use crate::tune::space::{Candidates, Value, ValueType, Variable};
use crate::tune::{report, Tuner};
use crate::types::{OptimizationGoal, ValueUnion, VariableInfo, VariableValue};

/// Candidates of a set read at most (a larger size is taken as garbage).
const MAX_SET: usize = 1 << 16;
/// Variables of one request read at most.
const MAX_VARIABLES: usize = 1 << 12;

/// Whether `KPROF_TUNE` asks for kprof's tuner (read once; an invalid value is
/// reported in one line and means off).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| match kprof_tables::settings::kokkos::TUNE.get() {
        None => false,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => true,
            "" | "0" | "false" | "no" | "off" => false,
            _ => {
                crate::say::warn(&format!(
                    "KPROF_TUNE={v} is invalid (1 or 0); using 0 (no tuning)"
                ));
                false
            }
        },
    })
}

/// The tuner, once a tuning callback ran; its cache file and identity.
struct State {
    tuner: Tuner,
    cache: Option<(PathBuf, Identity)>,
    /// [`flush`] is registered with the core.
    reporting: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Runs `f` on the tuner (created on first use: the cache is read then; [`flush`]
/// is registered once the core is attached), and counts the misuses it found as
/// core anomalies.
fn with_tuner<R>(f: impl FnOnce(&mut Tuner) -> R) -> R {
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let state = guard.get_or_insert_with(start);
    if !state.reporting {
        if let Some(api) = crate::api() {
            // Once the core is attached (a tuning call may come first): the report
            // and the cache are written at its end. SAFETY: registering a function
            // of this library, which is never unloaded.
            if !unsafe { (api.on_flush)(flush) } {
                crate::say::warn("cannot register the tuning report; it will be missing");
            }
            state.reporting = true;
        }
    }
    let before = state.tuner.misuse_total();
    let r = f(&mut state.tuner);
    let found = state.tuner.misuse_total() - before;
    drop(guard);
    count_misuses(found);
    r
}

fn count_misuses(n: u64) {
    if let Some(api) = crate::api() {
        for _ in 0..n {
            // SAFETY: a plain integer.
            unsafe { (api.anomaly)(Anomaly::TuningMisuse as u32) };
        }
    }
}

/// Creates the tuner: reads the cache.
fn start() -> State {
    let cache = kprof_tables::settings::kokkos::TUNING_CACHE
        .path()
        .map(|p| (PathBuf::from(p), Identity::current()));
    let entries = match &cache {
        Some((path, me)) => cache::load(path, me).unwrap_or_else(|e| {
            crate::say::warn(&e.to_string());
            BTreeMap::new()
        }),
        None => BTreeMap::new(),
    };
    State {
        tuner: Tuner::new(entries),
        cache,
        reporting: false,
    }
}

/// At the end of the run (called by the core, before it writes its output): hands
/// the tuning report to the core and writes the cache.
unsafe extern "C" fn flush() {
    guard((), || {
        // At a terminating signal this runs on kprof's writer thread while the
        // interrupted thread may hold the lock inside a tuning callback: waited
        // for, bounded, never a hang at exit.
        let mut guard = None;
        for _ in 0..200 {
            match STATE.try_lock() {
                Ok(g) => {
                    guard = Some(g);
                    break;
                }
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    guard = Some(p.into_inner());
                    break;
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
            }
        }
        let Some(mut guard) = guard else {
            crate::say::warn("the tuner was busy at the end of the run; no tuning report or cache");
            return;
        };
        let Some(state) = guard.as_mut() else {
            return;
        };
        let before = state.tuner.misuse_total();
        state.tuner.close();
        let found = state.tuner.misuse_total() - before;
        let cache_path = state.cache.as_ref().map(|(p, _)| p.display().to_string());
        let json = report::json(&state.tuner, cache_path.as_deref()).to_string();
        let summary = report::summary(&state.tuner);
        if let Some((path, me)) = &state.cache {
            let entries = state.tuner.cache_entries();
            if let Err(e) = cache::save(path, me, &entries) {
                crate::say::warn(&e.to_string());
            }
        }
        drop(guard);
        count_misuses(found);
        if let Some(api) = crate::api() {
            let json = format!("{json}\0");
            let summary = format!("{summary}\0");
            // SAFETY: NUL-terminated strings living across the call.
            unsafe {
                (api.extension)(
                    c"tuning".as_ptr(),
                    json.as_ptr().cast(),
                    summary.as_ptr().cast(),
                )
            };
        }
    })
}

/// Text of a C string, lossy; empty for NULL.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A 64-byte string value, up to its first NUL.
fn string64(s: &[c_char; 64]) -> String {
    let bytes: Vec<u8> = s
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A value union read as `ty`.
fn decode(v: &ValueUnion, ty: ValueType) -> Value {
    // SAFETY: every bit pattern is a valid i64, f64 and char array, and the union
    // is 64 initialised bytes (Kokkos' own struct, or ours).
    unsafe {
        match ty {
            ValueType::Int => Value::Int(v.int_value),
            ValueType::Double => Value::Double(v.double_value),
            ValueType::Text => Value::Text(string64(&v.string_value)),
        }
    }
}

/// Writes `value` into a value union.
fn encode(value: &Value, out: &mut ValueUnion) {
    match value {
        Value::Int(i) => out.int_value = *i,
        Value::Double(d) => out.double_value = *d,
        Value::Text(s) => {
            let mut buf = [0 as c_char; 64];
            for (b, &c) in buf.iter_mut().zip(s.as_bytes().iter().take(63)) {
                *b = c as c_char;
            }
            out.string_value = buf;
        }
    }
}

/// A variable's declaration, or `None` when it is not one the interface defines.
///
/// # Safety
/// `info` is NULL or points to a declaration whose set (if any) holds `size`
/// readable values.
unsafe fn declaration(name: *const c_char, info: *const VariableInfo) -> Option<Variable> {
    // SAFETY: per the contract.
    let info = unsafe { info.as_ref() }?;
    let ty = ValueType::from_c(info.value_type)?;
    let candidates = match info.value_quantity {
        0 => {
            // SAFETY: value_quantity 0 says the union holds a set.
            let set = unsafe { info.candidates.set };
            if set.size > MAX_SET {
                return None;
            }
            let mut values = Vec::with_capacity(set.size);
            for i in 0..set.size {
                // SAFETY: the set holds `size` values of the declared type; a
                // NULL array is refused below before any read.
                unsafe {
                    if set.values.int_value.is_null() {
                        return None;
                    }
                    values.push(match ty {
                        ValueType::Int => Value::Int(*set.values.int_value.add(i)),
                        ValueType::Double => Value::Double(*set.values.double_value.add(i)),
                        ValueType::Text => Value::Text(string64(&*set.values.string_value.add(i))),
                    });
                }
            }
            Candidates::Set(values)
        }
        1 => {
            // SAFETY: value_quantity 1 says the union holds a range.
            let r = unsafe { info.candidates.range };
            let num = |v: &ValueUnion| decode(v, ty).number();
            Candidates::Range {
                lower: num(&r.lower)?,
                upper: num(&r.upper)?,
                step: num(&r.step)?,
                open_lower: r.open_lower != 0,
                open_upper: r.open_upper != 0,
            }
        }
        2 => Candidates::Unbounded,
        _ => return None,
    };
    Some(Variable {
        // SAFETY: Kokkos passes a NUL-terminated name.
        name: unsafe { text(name) },
        ty,
        category: info.category,
        candidates,
    })
}

/// The ids and values of `n` variables at `values`.
///
/// # Safety
/// `values` is NULL or holds `n` variable values.
unsafe fn read_values(
    t: &Tuner,
    values: *const VariableValue,
    n: usize,
) -> Vec<(usize, Option<Value>)> {
    if values.is_null() {
        return Vec::new();
    }
    // SAFETY: per the contract.
    let slice = unsafe { std::slice::from_raw_parts(values, n.min(MAX_VARIABLES)) };
    slice
        .iter()
        .map(|v| {
            (
                v.type_id,
                t.value_type(v.type_id).map(|ty| decode(&v.value, ty)),
            )
        })
        .collect()
}

/// kprof's `kokkosp_declare_output_type` / `_input_type`.
///
/// # Safety
/// Kokkos' arguments.
unsafe fn declare(name: *const c_char, id: usize, info: *mut VariableInfo, output: bool) {
    // SAFETY: forwarded from Kokkos.
    let var = unsafe { declaration(name, info) };
    with_tuner(|t| t.declare(id, var, output));
    let fwd = next().and_then(|n| {
        if output {
            n.declare_output_type
        } else {
            n.declare_input_type
        }
    });
    if let Some(f) = fwd {
        // SAFETY: forwarding Kokkos' arguments unchanged.
        unsafe { f(name, id, info) };
    }
}

unsafe extern "C" fn tune_declare_output_type(
    name: *const c_char,
    id: usize,
    info: *mut VariableInfo,
) {
    // SAFETY: Kokkos' arguments.
    guard((), || unsafe { declare(name, id, info, true) })
}

unsafe extern "C" fn tune_declare_input_type(
    name: *const c_char,
    id: usize,
    info: *mut VariableInfo,
) {
    // SAFETY: Kokkos' arguments.
    guard((), || unsafe { declare(name, id, info, false) })
}

unsafe extern "C" fn tune_request_values(
    context: usize,
    n_in: usize,
    inputs: *const VariableValue,
    n_out: usize,
    outputs: *mut VariableValue,
) {
    guard((), || {
        let now = Instant::now();
        let n_out = if outputs.is_null() {
            0
        } else {
            n_out.min(MAX_VARIABLES)
        };
        let answers = with_tuner(|t| {
            // SAFETY: Kokkos passes n_in inputs and n_out outputs.
            let ins = unsafe { read_values(t, inputs, n_in) };
            // SAFETY: as above.
            let outs = unsafe { read_values(t, outputs, n_out) };
            t.request(context, now, &ins, &outs)
        });
        let mut written = Vec::new();
        for (i, a) in answers.iter().enumerate() {
            if let Some(v) = a {
                // SAFETY: i < n_out, within Kokkos' output array.
                let out = unsafe { &mut *outputs.add(i) };
                encode(v, &mut out.value);
                // SAFETY: the bytes just written; a union is plain bytes.
                written.push((i, unsafe { out.value.string_value }));
            }
        }
        if let Some(f) = next().and_then(|n| n.request_values) {
            // SAFETY: forwarding Kokkos' arguments, with kprof's values.
            unsafe { f(context, n_in, inputs, n_out, outputs) };
            // SAFETY: i < n_out as above.
            let changed = written
                .iter()
                .any(|(i, bytes)| unsafe { (*outputs.add(*i)).value.string_value } != *bytes);
            if changed {
                with_tuner(|t| t.overridden(context));
            }
        }
    })
}

unsafe extern "C" fn tune_begin_context(context: usize) {
    guard((), || {
        with_tuner(|t| t.begin(context, Instant::now()));
        if let Some(f) = next().and_then(|n| n.begin_context) {
            // SAFETY: forwarding.
            unsafe { f(context) };
        }
    })
}

unsafe extern "C" fn tune_end_context(context: usize, value: VariableValue) {
    guard((), || {
        let now = Instant::now();
        with_tuner(|t| {
            let v = t
                .value_type(value.type_id)
                .map(|ty| decode(&value.value, ty));
            t.end(context, now, (value.type_id, v))
        });
        if let Some(f) = next().and_then(|n| n.end_context) {
            // SAFETY: forwarding Kokkos' struct unchanged.
            unsafe { f(context, value) };
        }
    })
}

unsafe extern "C" fn tune_declare_optimization_goal(context: usize, goal: OptimizationGoal) {
    guard((), || {
        with_tuner(|t| t.goal(context, goal.type_id, goal.goal == 1));
        if let Some(f) = next().and_then(|n| n.declare_optimization_goal) {
            // SAFETY: forwarding Kokkos' struct unchanged.
            unsafe { f(context, goal) };
        }
    })
}

/// The address `forwarder` when the next tool exports the callback `has` looks
/// for, `own` (kprof's tuner) with `KPROF_TUNE=1`, else 0. Loads the next tool
/// first if `kokkosp_init_library` has not yet.
fn resolve(has: fn(&Next) -> bool, forwarder: usize, own: usize) -> usize {
    guard(0, || {
        if chain::loading() {
            // The next tool, being loaded, binds one of its own references to this
            // symbol: give it the forwarder, which calls it back once it is loaded.
            return forwarder;
        }
        let path = kprof_abi::loader::library_path(crate::anchor());
        // A load error is reported once, by kokkosp_init_library.
        let _ = chain::load(0, path.as_deref());
        if enabled() {
            return own;
        }
        match next() {
            Some(n) if has(n) => forwarder,
            _ => 0,
        }
    })
}

macro_rules! tuning_callbacks {
    ($($sym:ident, $fwd:ident, $own:ident, $field:ident, fn($($arg:ident: $ty:ty),*);)*) => {
        $(
            /// Forwards this tuning callback to the next tool.
            ///
            /// # Safety
            /// Called by Kokkos with the arguments of the Kokkos Tools interface.
            unsafe extern "C" fn $fwd($($arg: $ty),*) {
                guard((), || {
                    if let Some(f) = next().and_then(|n| n.$field) {
                        // SAFETY: forwarding Kokkos' arguments unchanged.
                        unsafe { f($($arg),*) };
                    }
                })
            }

            /// The resolver of this GNU indirect function symbol (see the module
            /// documentation): kprof's tuner with `KPROF_TUNE=1`, else the
            /// forwarder when the next tool exports the callback, else NULL. Only
            /// the dynamic loader calls it.
            #[no_mangle]
            pub extern "C" fn $sym() -> usize {
                resolve(|n| n.$field.is_some(), $fwd as *const () as usize, $own as *const () as usize)
            }
        )*

        // Each resolver's symbol is typed STT_GNU_IFUNC (the assembler combines this
        // with the function type it emits for the definition, in the same object).
        std::arch::global_asm!(
            $(concat!(".type ", stringify!($sym), ", %gnu_indirect_function"),)*
        );
    };
}

tuning_callbacks! {
    kokkosp_declare_output_type, fwd_declare_output_type, tune_declare_output_type, declare_output_type,
        fn(name: *const c_char, id: usize, info: *mut VariableInfo);
    kokkosp_declare_input_type, fwd_declare_input_type, tune_declare_input_type, declare_input_type,
        fn(name: *const c_char, id: usize, info: *mut VariableInfo);
    kokkosp_request_values, fwd_request_values, tune_request_values, request_values,
        fn(context: usize, n_in: usize, inputs: *const VariableValue, n_out: usize,
           outputs: *mut VariableValue);
    kokkosp_begin_context, fwd_begin_context, tune_begin_context, begin_context, fn(context: usize);
    kokkosp_end_context, fwd_end_context, tune_end_context, end_context,
        fn(context: usize, value: VariableValue);
    kokkosp_declare_optimization_goal, fwd_declare_optimization_goal, tune_declare_optimization_goal,
        declare_optimization_goal, fn(context: usize, goal: OptimizationGoal);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{SetOrRange, ValueRange, ValueSet, ValueUnionSet};

    fn info(value_type: u32, value_quantity: u32, candidates: SetOrRange) -> VariableInfo {
        VariableInfo {
            value_type,
            category: 1,
            value_quantity,
            candidates,
            tool_provided_info: std::ptr::null_mut(),
        }
    }

    fn string_value(s: &str) -> ValueUnion {
        let mut v = ValueUnion { int_value: 0 };
        encode(&Value::Text(s.into()), &mut v);
        v
    }

    #[test]
    fn declarations_are_decoded() {
        let mut doubles = [0.5f64, 1.5];
        let set = SetOrRange {
            set: ValueSet {
                size: 2,
                values: ValueUnionSet {
                    double_value: doubles.as_mut_ptr(),
                },
            },
        };
        // SAFETY: a declaration built here, its set alive across the call.
        let v = unsafe { declaration(c"ratio".as_ptr(), &info(0, 0, set)) }.unwrap();
        assert_eq!(v.name, "ratio");
        assert_eq!(
            v.candidates,
            Candidates::Set(vec![Value::Double(0.5), Value::Double(1.5)])
        );

        let mut strings = [[0 as c_char; 64]; 2];
        for (dst, s) in strings.iter_mut().zip(["static", "dynamic"]) {
            // SAFETY: writing the string field of a local union.
            *dst = unsafe { string_value(s).string_value };
        }
        let set = SetOrRange {
            set: ValueSet {
                size: 2,
                values: ValueUnionSet {
                    string_value: strings.as_mut_ptr(),
                },
            },
        };
        // SAFETY: as above.
        let v = unsafe { declaration(c"schedule".as_ptr(), &info(2, 0, set)) }.unwrap();
        assert_eq!(
            v.candidates,
            Candidates::Set(vec![
                Value::Text("static".into()),
                Value::Text("dynamic".into())
            ])
        );

        let range = SetOrRange {
            range: ValueRange {
                lower: ValueUnion { int_value: 1 },
                upper: ValueUnion { int_value: 64 },
                step: ValueUnion { int_value: 1 },
                open_lower: 0,
                open_upper: 1,
            },
        };
        // SAFETY: as above.
        let v = unsafe { declaration(c"tile".as_ptr(), &info(1, 1, range)) }.unwrap();
        assert_eq!(
            v.candidates,
            Candidates::Range {
                lower: 1.0,
                upper: 64.0,
                step: 1.0,
                open_lower: false,
                open_upper: true
            }
        );
        assert_eq!(v.axis().size(), 63, "64 excluded");

        let null_set = SetOrRange {
            set: ValueSet {
                size: 3,
                values: ValueUnionSet {
                    int_value: std::ptr::null_mut(),
                },
            },
        };
        // SAFETY: the NULL array is refused before any read.
        assert!(unsafe { declaration(c"x".as_ptr(), &info(1, 0, null_set)) }.is_none());
        // SAFETY: NULL info.
        assert!(unsafe { declaration(c"x".as_ptr(), std::ptr::null()) }.is_none());
    }

    #[test]
    fn values_round_trip_through_the_union() {
        for v in [
            Value::Int(-7),
            Value::Double(0.25),
            Value::Text("a".repeat(80)),
        ] {
            let mut u = ValueUnion { int_value: 0 };
            encode(&v, &mut u);
            let ty = match v {
                Value::Int(_) => ValueType::Int,
                Value::Double(_) => ValueType::Double,
                Value::Text(_) => ValueType::Text,
            };
            let back = decode(&u, ty);
            match (&v, &back) {
                (Value::Text(s), Value::Text(b)) => assert_eq!(&s[..63], b, "cut to 63 bytes"),
                _ => assert_eq!(v, back),
            }
        }
    }
}
