"""Loads a kprof tasktree.json with llnl-hatchet (GraphFrame.from_literal, as a
Hatchet user would) and asserts that Hatchet's dataframe holds the counts and times
of the profile.json beside it, node by node (matched by call path).

    python3 check_tasktree.py DIR            # one process's output directory
    python3 check_tasktree.py DIR --merged   # a `kprof merge` directory

Prints one line with the number of nodes checked; exits non-zero on a difference.
Run by tests/tests/analyses.rs.
"""

import json
import math
import os
import sys

import hatchet as ht


def expected(node, merged):
    """What Hatchet's columns must hold for one profile.json node."""
    if not merged:
        return {
            "count": node["count"],
            "time (inc)": node["total_ns"],
            "time": node["self_ns"],
            "max (inc)": node["max_ns"],
            "threads": (node.get("threads") or {}).get("threads", 0),
        }
    return {
        "count": node["count"]["sum"],
        "time (inc)": node["total_ns"]["mean"],
        "time": node["self_ns"]["mean"],
        "min time/rank (inc)": node["total_ns"]["min"],
        "max time/rank (inc)": node["total_ns"]["max"],
        "ranks": node["ranks"],
    }


def main():
    out, merged = sys.argv[1], "--merged" in sys.argv[2:]
    with open(os.path.join(out, "tasktree.json")) as f:
        literal = json.load(f)
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)

    gf = ht.GraphFrame.from_literal(literal)
    df = gf.dataframe
    assert "time (inc)" in gf.inc_metrics, gf.inc_metrics
    assert "time" in gf.exc_metrics, gf.exc_metrics

    want = {}

    def walk(nodes, path):
        for n in nodes:
            p = path + ((n["name"], n["kind"]),)
            want.setdefault(p, []).append(expected(n, merged))
            walk(n["children"], p)

    walk(profile["tree"], ())
    # A tree without teams (no OpenMP) leaves the team columns out.
    teams = any(r.get("threads") for rows_ in want.values() for r in rows_)
    if not merged:
        assert ("threads" in df.columns) == teams, (teams, list(df.columns))
        if not teams:
            for rows_ in want.values():
                for r in rows_:
                    del r["threads"]
    got = {}
    for node in gf.graph.traverse():
        p = tuple((x.frame["name"], x.frame["type"]) for x in node.path())
        row = df.loc[node]
        got.setdefault(p, []).append({k: row[k] for k in want_keys(merged, teams)})

    rows = sum(len(v) for v in want.values())
    assert len(df) == rows, f"hatchet has {len(df)} rows, profile.json {rows} nodes"
    assert sorted(got) == sorted(want), (
        f"paths differ: only in hatchet {sorted(set(got) - set(want))[:5]}, "
        f"only in profile.json {sorted(set(want) - set(got))[:5]}"
    )
    for p, rows_want in want.items():
        key = lambda r: tuple(sorted(r.items()))
        a = sorted(got[p], key=key)
        b = sorted(rows_want, key=key)
        for x, y in zip(a, b):
            for k in y:
                assert math.isclose(float(x[k]), float(y[k]), rel_tol=1e-9, abs_tol=1e-6), (
                    f"{' / '.join(n for n, _ in p)}: {k} is {x[k]} in hatchet, "
                    f"{y[k]} in profile.json"
                )
    # Hatchet's own views work on it: the tree text names the roots.
    text = gf.tree(metric_column="time (inc)")
    for root in profile["tree"]:
        assert root["name"][:20] in text, f"{root['name']!r} not in gf.tree()"
    total_self = sum(float(v) for v in df["time"])
    print(f"hatchet: {rows} nodes match profile.json; exclusive time {total_self:.0f} ns")


def want_keys(merged, teams):
    if merged:
        return list(expected_keys_merged)
    return expected_keys_single + (["threads"] if teams else [])


expected_keys_single = ["count", "time (inc)", "time", "max (inc)"]
expected_keys_merged = [
    "count",
    "time (inc)",
    "time",
    "min time/rank (inc)",
    "max time/rank (inc)",
    "ranks",
]

if __name__ == "__main__":
    main()
