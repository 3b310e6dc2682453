"""Loads kprof's profile.cali files as a Caliper user would: caliper-reader
(`caliperreader.CaliperReader`), Hatchet (`GraphFrame.from_caliperreader`) and
Thicket (`Thicket.from_caliperreader([...])`, all the runs in one), and asserts
that they hold the profile.json beside each file: per node (matched by call
path) the inclusive and exclusive time, the count, min and max, the kind, and
the metadata given as `KEY=VALUE` arguments per run.

    python3 check_cali.py DIR1 DIR2 ... [--meta DIR:KEY=VALUE ...] [--ranks R0,R1,... | --ranks-of N]

`--ranks-of N`: each DIR is the directory of rank N of a job, whose records
carry `mpi.rank` N.
`--ranks R0,R1,...`: each DIR is a job's (`kprof merge` of the rank directories
R0, R1, ... of ranks 0, 1, ...), whose file holds one record per rank and call
path (`mpi.rank`), each rank's values those of its own profile.json.
Prints one line per loader with what it checked; exits non-zero on a difference.
Run by tests/tests/caliper.rs.
"""

import json
import math
import os
import sys

import caliperreader
import hatchet as ht
import thicket as th


def profile_nodes(profile_dir):
    """{names from the root: profile.json node} of one process."""
    with open(os.path.join(profile_dir, "profile.json")) as f:
        profile = json.load(f)
    out = {}

    def walk(nodes, path):
        for n in nodes:
            p = path + (n["name"],)
            assert p not in out, f"two nodes at {p}"
            out[p] = n
            walk(n["children"], p)

    walk(profile["tree"], ())
    return out


def seconds(ns):
    return ns / 1e9


def close(a, b):
    """Seconds equal to the ns of profile.json (written with nine decimals)."""
    return round(a * 1e9) == b


def expected_rows(d, ranks):
    """{(path, rank or None): profile.json node} for run directory d."""
    if ranks is None:
        return {(p, None): n for p, n in profile_nodes(d).items()}
    if isinstance(ranks, int):
        return {(p, ranks): n for p, n in profile_nodes(d).items()}
    rows = {}
    for r, rank_dir in enumerate(ranks):
        for p, n in profile_nodes(rank_dir).items():
            rows[(p, r)] = n
    return rows


def check_row(where, got, n):
    assert close(got["time (inc)"], n["total_ns"]), (where, got["time (inc)"], n)
    assert close(got["time"], n["self_ns"]), (where, got["time"], n)
    assert int(got["count"]) == n["count"], (where, got["count"], n)
    assert close(got["min (inc)"], n["min_ns"]), (where, got["min (inc)"], n)
    assert close(got["max (inc)"], n["max_ns"]), (where, got["max (inc)"], n)


def main():
    args = sys.argv[1:]
    dirs, meta, ranks = [], {}, None
    i = 0
    while i < len(args):
        if args[i] == "--meta":
            d, kv = args[i + 1].split(":", 1)
            k, v = kv.split("=", 1)
            meta.setdefault(d, {})[k] = v
            i += 2
        elif args[i] == "--ranks":
            ranks = args[i + 1].split(",")
            i += 2
        elif args[i] == "--ranks-of":
            ranks = int(args[i + 1])
            i += 2
        else:
            dirs.append(args[i])
            i += 1
    files = [os.path.join(d, "profile.cali") for d in dirs]

    # caliper-reader: the records and the globals as written.
    records = 0
    for d, f in zip(dirs, files):
        r = caliperreader.CaliperReader()
        r.read(f)
        want = expected_rows(d, ranks)
        seen = set()
        for rec in r.records:
            path = tuple(rec["path"])
            rank = int(rec["mpi.rank"]) if ranks is not None else None
            assert "mpi.rank" in rec or ranks is None, rec
            n = want[(path, rank)]
            assert rec["kprof.kind"] == n["kind"], (rec, n)
            assert int(rec["sum#region.count"]) == n["count"], (rec, n)
            assert close(float(rec["inclusive#sum#time.duration"]), n["total_ns"]), (rec, n)
            assert r.attribute("inclusive#sum#time.duration").get("attribute.alias") == "time (inc)"
            seen.add((path, rank))
            records += 1
        assert seen == set(want), (sorted(set(want) - seen), sorted(seen - set(want)))
        g = r.globals
        for k, v in meta.get(d, {}).items():
            assert g.get(k) == v, (k, g.get(k), v)
        for k in ["executable", "hostname", "jobsize", "kprof.version"]:
            assert k in g, (k, g)
        if ranks is None:
            for k in ["user", "launchdate", "cmdline", "executablepath"]:
                assert k in g, (k, g)
            assert r.attribute("launchdate").attribute_type() == "int"
        elif isinstance(ranks, list):
            # The job's size; no rank's own rank.
            assert g["mpi.world.size"] == str(len(ranks)), g
            assert g["jobsize"] == str(len(ranks)), g
            assert "MPI rank" not in g, g
    print(f"caliper-reader: {records} records of {len(files)} files match profile.json")

    # Hatchet, one file at a time, the kind as a string attribute.
    nodes = 0
    for d, f in zip(dirs, files):
        gf = ht.GraphFrame.from_caliperreader(f, string_attributes=["kprof.kind"])
        assert "time (inc)" in gf.inc_metrics and "time" in gf.exc_metrics, (gf.inc_metrics, gf.exc_metrics)
        assert gf.default_metric == "time", gf.default_metric
        want = expected_rows(d, ranks)
        df = gf.dataframe.reset_index()
        if ranks is not None:
            # Hatchet's reader gives each root of a file with ranks a second
            # row per rank, all zeros (a Caliper file's roots alike): left out.
            df = df[df["count"] > 0]
        for _, row in df.iterrows():
            path = tuple(x.frame["name"] for x in row["node"].path())
            rank = int(row["rank"]) if ranks is not None else None
            n = want[(path, rank)]
            check_row((f, path, rank), row, n)
            kind = row["kprof.kind"]
            kind = kind[0] if isinstance(kind, tuple) else kind
            assert kind == n["kind"], (kind, n["kind"])
            nodes += 1
        assert nodes > 0 and len(df) == len(want), (len(df), len(want))
        for k, v in meta.get(d, {}).items():
            assert str(gf.metadata[k]) == v, (k, gf.metadata[k], v)
    print(f"hatchet: {nodes} rows match profile.json")

    # Thicket: every run in one, its metadata one row per run.
    tk = th.Thicket.from_caliperreader(files, disable_tqdm=True)
    assert len(tk.profile) == len(files), tk.profile
    by_file = {v: k for k, v in tk.profile_mapping.items()}
    rows = 0
    df = tk.dataframe.reset_index()
    for d, f in zip(dirs, files):
        prof = by_file[f]
        want = expected_rows(d, ranks)
        mine = df[df["profile"] == prof]
        # Rows of nodes this run has not (NaN) and Hatchet's zero rows of roots.
        mine = mine[mine["count"] > 0]
        assert len(mine) == len(want), (f, len(mine), len(want))
        for _, row in mine.iterrows():
            path = tuple(x.frame["name"] for x in row["node"].path())
            rank = int(row["rank"]) if ranks is not None else None
            check_row((f, path, rank), row, want[(path, rank)])
            rows += 1
        md = tk.metadata.loc[prof]
        for k, v in meta.get(d, {}).items():
            assert str(md[k]) == v, (k, md[k], v)
        assert md["executable"] == "runs" or ranks is not None, md["executable"]
    print(f"thicket: {len(files)} profiles, {rows} rows, metadata {sorted(meta.get(dirs[0], {}))} match profile.json")


if __name__ == "__main__":
    main()
