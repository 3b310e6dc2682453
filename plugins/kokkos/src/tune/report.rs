//! What the tuner reports: profile.json's `tuning` block and the summary's lines,
//! handed to the core (which writes them; the plugin writes no output file).

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use super::space::{describe, Value};
use super::Tuner;

fn values_json(v: &[Value]) -> Json {
    Json::Array(v.iter().map(Value::to_json).collect())
}

fn finite(x: f64) -> Json {
    serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number)
}

/// The `tuning` block of profile.json.
pub fn json(t: &Tuner, cache: Option<&str>) -> Json {
    let problems: Vec<Json> = t
        .problems()
        .iter()
        .map(|p| {
            let variables: Vec<Json> = p
                .outputs
                .iter()
                .filter_map(|id| t.variable(*id))
                .map(|v| {
                    json!({
                        "name": v.name,
                        "type": v.ty.name(),
                        "candidates": describe(&v.candidates),
                    })
                })
                .collect();
            let inputs: serde_json::Map<String, Json> = p
                .inputs
                .iter()
                .map(|(n, v)| (n.clone(), v.to_json()))
                .collect();
            let best = p.search.best();
            let tried: Vec<Json> = p
                .search
                .candidates()
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.samples.is_empty())
                .map(|(i, c)| {
                    json!({
                        "values": values_json(&p.values(i)),
                        "measurements": c.samples.len(),
                        "median": finite(c.median()),
                        "lowest": finite(c.estimate()),
                    })
                })
                .collect();
            json!({
                "variables": variables,
                "inputs": inputs,
                "objective": p.objective,
                "strategy": p.search.strategy().name(),
                "default": values_json(&p.defaults),
                "chosen": values_json(&p.values(best)),
                "converged": p.search.is_converged(),
                "gain": p.gain().map_or(Json::Null, finite),
                "contexts": p.requests,
                "search_contexts": p.search.searching(),
                "overridden_by_next_tool": p.overridden,
                "tried": tried,
            })
        })
        .collect();
    let misuses: serde_json::Map<String, Json> = t
        .misuses
        .list()
        .iter()
        .map(|(k, n)| (k.to_string(), Json::from(*n)))
        .collect();
    json!({
        "contexts": t.contexts,
        "cache": cache,
        "problems": problems,
        "misuses": misuses,
    })
}

/// The summary's lines.
pub fn summary(t: &Tuner) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Tuning (KPROF_TUNE=1): {} problem(s), {} context(s)",
        t.problems().len(),
        t.contexts
    );
    for p in t.problems() {
        let names: Vec<String> = p
            .outputs
            .iter()
            .filter_map(|id| t.variable(*id).map(|v| v.name.clone()))
            .collect();
        let inputs: Vec<String> = p.inputs.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let show = |v: &[Value]| {
            v.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let chosen = show(&p.values(p.search.best()));
        let state = if p.search.is_converged() {
            let cached = if p.cached_gain.is_some() {
                " (from the cache)"
            } else {
                ""
            };
            match p.gain() {
                Some(g) => format!("{:+.1}% vs default{cached}", 100.0 * g),
                None => format!("not measured{cached}"),
            }
        } else {
            "still searching".into()
        };
        let tried = p
            .search
            .candidates()
            .iter()
            .filter(|c| !c.samples.is_empty())
            .count();
        let what = if inputs.is_empty() {
            names.join(", ")
        } else {
            format!("{} [{}]", names.join(", "), inputs.join(" "))
        };
        let _ = writeln!(
            s,
            "  {what}: {chosen} (default {}), {state}; {tried} value(s) tried in {} context(s) ({})",
            show(&p.defaults),
            p.search.searching(),
            p.search.strategy().name()
        );
    }
    let m = t.misuse_total();
    if m > 0 {
        let parts: Vec<String> = t
            .misuses
            .list()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "  interface misuses: {}", parts.join(", "));
    }
    s
}
