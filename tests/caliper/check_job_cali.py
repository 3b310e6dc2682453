"""Loads the profile.cali of a job's profile reduced inside the job (the MPI
plugin's `kprof-merged/1` directory) as a Caliper user would load a `spot`
profile of an MPI job: caliper-reader, Hatchet (`GraphFrame.from_caliperreader`)
and Thicket (`Thicket.from_caliperreader`). Asserts that each call path's record
holds the statistics over the ranks of the profile.json beside it: Min, Max and
Avg time/rank (`total_ns` min, max, mean), Total time (`total_ns` sum), the
exclusive time summed (`self_ns` sum) and the count summed, and that the
metadata name the job's size.

    python3 check_job_cali.py JOB_DIR RANKS

Prints one line per loader; exits non-zero on a difference. Run by
tests/tests/mpi.rs.
"""

import json
import os
import sys

import caliperreader
import hatchet as ht
import thicket as th

from check_cali import profile_nodes


def merged_nodes(job_dir):
    """{names from the root: merged profile.json node}."""
    with open(os.path.join(job_dir, "profile.json")) as f:
        schema = json.load(f)["schema"]
    assert schema == "kprof-merged/1", schema
    return profile_nodes(job_dir)


def close(seconds, ns):
    """Seconds (nine decimals) equal to ns of profile.json, rounded."""
    # A mean of whole ns over ranks may end in .5: written rounded to the ns.
    return abs(seconds * 1e9 - ns) <= 0.5 + 1e-6


# Caliper's attribute, Hatchet's column (the alias) and the profile.json value.
COLUMNS = [
    ("min#inclusive#sum#time.duration", "Min time/rank", lambda n: n["total_ns"]["min"]),
    ("max#inclusive#sum#time.duration", "Max time/rank", lambda n: n["total_ns"]["max"]),
    ("avg#inclusive#sum#time.duration", "Avg time/rank", lambda n: n["total_ns"]["mean"]),
    ("sum#inclusive#sum#time.duration", "Total time", lambda n: n["total_ns"]["sum"]),
    ("sum#sum#time.duration", "time", lambda n: n["self_ns"]["sum"]),
]


def check(where, get, n):
    for _, alias, want in COLUMNS:
        assert close(float(get(alias)), want(n)), (where, alias, get(alias), want(n))
    assert int(get("count")) == n["count"]["sum"], (where, get("count"), n["count"])


def main():
    job_dir, ranks = sys.argv[1], int(sys.argv[2])
    f = os.path.join(job_dir, "profile.cali")
    want = merged_nodes(job_dir)

    r = caliperreader.CaliperReader()
    r.read(f)
    seen = set()
    for rec in r.records:
        path = tuple(rec["path"])
        n = want[path]
        assert rec["kprof.kind"] == n["kind"], (rec, n)
        assert "mpi.rank" not in rec, rec
        by_alias = {alias: rec[name] for name, alias, _ in COLUMNS}
        by_alias["count"] = rec["sum#region.count"]
        check(path, by_alias.__getitem__, n)
        seen.add(path)
    assert seen == set(want), (sorted(set(want) - seen), sorted(seen - set(want)))
    g = r.globals
    assert g["jobsize"] == str(ranks) and g["mpi.world.size"] == str(ranks), g
    assert "MPI rank" not in g, g
    for k in ["user", "cmdline", "executable", "hostname", "kprof.version"]:
        assert k in g, (k, g)
    print(f"caliper-reader: {len(seen)} records match profile.json's statistics over {ranks} ranks")

    gf = ht.GraphFrame.from_caliperreader(f, string_attributes=["kprof.kind"])
    # Caliper's spot aliases, which Hatchet files as exclusive metrics (no
    # "(inc)" in them), as it does for Caliper's own files; the first is the
    # default metric.
    for col in ["Min time/rank", "Max time/rank", "Avg time/rank", "Total time", "time"]:
        assert col in gf.exc_metrics, (col, gf.exc_metrics)
    assert gf.default_metric == "Avg time/rank", gf.default_metric
    df = gf.dataframe.reset_index()
    rows = 0
    for _, row in df.iterrows():
        path = tuple(x.frame["name"] for x in row["node"].path())
        check(path, row.__getitem__, want[path])
        rows += 1
    assert rows == len(want), (rows, len(want))
    print(f"hatchet: {rows} rows match, default metric {gf.default_metric}")

    tk = th.Thicket.from_caliperreader([f], disable_tqdm=True)
    tdf = tk.dataframe.reset_index()
    trows = 0
    for _, row in tdf.iterrows():
        path = tuple(x.frame["name"] for x in row["node"].path())
        check(path, row.__getitem__, want[path])
        trows += 1
    assert trows == len(want), (trows, len(want))
    md = tk.metadata.iloc[0]
    assert str(md["jobsize"]) == str(ranks), md["jobsize"]
    print(f"thicket: {trows} rows, jobsize {md['jobsize']}")


if __name__ == "__main__":
    main()
