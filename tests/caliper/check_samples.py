"""Loads the call-stack samples of kprof's profile.cali as a Caliper user would:
caliper-reader (`caliperreader.CaliperReader`), Hatchet
(`GraphFrame.from_caliperreader`) and Thicket (`Thicket.from_caliperreader`),
and asserts that they hold the self samples by function of the profile.json
beside the file: per call path and sampled function one record (path: the call
path, then the function; `source.function#cali.sampler.pc`: the function;
`sum#count`: its samples), and in Hatchet and Thicket a node of the function
under its construct's, whose `samples` are those of profile.json.

    python3 check_samples.py DIR [--ranks R0,R1,... | --job R0,R1,...]

`--ranks R0,R1,...`: DIR is a job's (`kprof merge` of the rank directories R0,
R1, ... of ranks 0, 1, ...), whose records carry `mpi.rank`, each rank's
samples those of its own profile.json (caliper-reader and Hatchet).
`--job R0,R1,...`: DIR is a job's profile reduced inside the job (the MPI
plugin's), whose records carry no rank: each function's samples are those of
the ranks' own profile.json in R0, R1, ... summed (all three loaders).
Prints one line per loader with what it checked, then one line per sampled
function as Hatchet shows it (`hatchet: A/B/function N`); exits non-zero on a
difference. Run by tests/tests/caliper.rs.
"""

import json
import math
import os
import sys

import caliperreader
import hatchet as ht
import thicket as th

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_cali import profile_nodes  # noqa: E402

SAMPLED_KIND = "function"


def expected(profile_dir):
    """{(call path names..., function): self samples} of profile.json."""
    return {
        p + (fn["name"],): fn["samples"]
        for p, n in profile_nodes(profile_dir).items()
        for fn in (n.get("stack_samples") or {}).get("functions", [])
    }


def main():
    d = sys.argv[1]
    ranks = sys.argv[3].split(",") if sys.argv[2:3] == ["--ranks"] else None
    job = sys.argv[3].split(",") if sys.argv[2:3] == ["--job"] else None
    f = os.path.join(d, "profile.cali")
    if ranks is not None:
        want = {
            k + (r,): n for r, rd in enumerate(ranks) for k, n in expected(rd).items()
        }
    elif job is not None:
        want = {}
        for rd in job:
            for k, n in expected(rd).items():
                want[k] = want.get(k, 0) + n
    else:
        want = expected(d)
    assert want, "no call-stack samples in profile.json"

    # caliper-reader: one record per call path and sampled function.
    r = caliperreader.CaliperReader()
    r.read(f)
    got = {}
    for rec in r.records:
        if "source.function#cali.sampler.pc" not in rec:
            assert "sum#count" not in rec, rec
            continue
        fn = rec["source.function#cali.sampler.pc"]
        path = tuple(rec["path"])
        # The path's last entry is the function (`[function]` added where a
        # region under the same node has its name).
        assert path[-1] in (fn, f"{fn} [{SAMPLED_KIND}]"), rec
        assert rec["kprof.kind"] == SAMPLED_KIND, rec
        key = path[:-1] + (fn,)
        if ranks is not None:
            key += (int(rec["mpi.rank"]),)
        assert key not in got, ("two records", key)
        got[key] = int(rec["sum#count"])
    assert got == want, (got, want)
    assert r.attribute("sum#count").get("attribute.alias") == "samples"
    print(f"caliper-reader: {len(got)} sampled functions match profile.json")

    # Hatchet: each function a node under its construct's, its samples a column.
    gf = ht.GraphFrame.from_caliperreader(f, string_attributes=["kprof.kind"])
    assert "samples" in gf.exc_metrics, gf.exc_metrics
    # A job's file leads with Caliper's `Avg time/rank`, as its spot profiles.
    default = "Avg time/rank" if job is not None else "time"
    assert gf.default_metric == default, gf.default_metric
    df = gf.dataframe.reset_index()
    shown = {}
    for _, row in df.iterrows():
        kind = row["kprof.kind"]
        kind = kind[0] if isinstance(kind, tuple) else kind
        path = tuple(x.frame["name"] for x in row["node"].path())
        if kind != SAMPLED_KIND:
            assert math.isnan(row["samples"]) or row["samples"] == 0, (path, row["samples"])
            continue
        if ranks is not None and row["samples"] == 0:
            # Hatchet's row of a rank that has no record of the node.
            continue
        assert row["node"].frame["name"] == row["name"], row
        parent = row["node"].parents[0].frame["name"]
        assert parent == path[-2], (path, parent)
        key = path[:-2] + (parent, path[-1].removesuffix(f" [{SAMPLED_KIND}]"))
        if ranks is not None:
            key += (int(row["rank"]),)
        shown[key] = int(row["samples"])
    assert shown == want, (shown, want)
    print(f"hatchet: {len(shown)} sampled functions match profile.json")
    if ranks is not None:
        for key, n in sorted(shown.items()):
            print(f"hatchet: rank {key[-1]}: {'/'.join(key[:-1])} {n}")
        return

    # Thicket: the same values in its performance data.
    tk = th.Thicket.from_caliperreader([f], string_attributes=["kprof.kind"])
    perf = tk.dataframe.reset_index()
    seen = 0
    for _, row in perf.iterrows():
        path = tuple(x.frame["name"] for x in row["node"].path())
        kind = row["kprof.kind"]
        kind = kind[0] if isinstance(kind, tuple) else kind
        if kind != SAMPLED_KIND:
            continue
        key = path[:-1] + (path[-1].removesuffix(f" [{SAMPLED_KIND}]"),)
        assert int(row["samples"]) == want[key], (key, row["samples"], want[key])
        seen += 1
    assert seen == len(want), (seen, len(want))
    print(f"thicket: {seen} sampled functions match profile.json")

    for key, n in sorted(shown.items()):
        print(f"hatchet: {'/'.join(key)} {n}")


if __name__ == "__main__":
    main()
