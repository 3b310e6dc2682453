"""Asserts what kprof's profile of tests/gpu/streams.cu must hold (check.sh runs it
on each profile): every kernel counted as the program launches it, every device
activity matched to its launch (no unknown correlation), the device leak found.

    python3 tests/gpu/expect.py PROFILE_DIR LAUNCHES [STDERR_FILE]

LAUNCHES is the program's argument (its number of empty launches). With
STDERR_FILE, the run's stderr must hold kprof's CUPTI line. Prints one line per
check; exits 1 when any failed."""
import json
import sys


def nodes(tree):
    for n in tree:
        yield n
        yield from nodes(n.get("children", []))


def kernel_counts(profile):
    """Instances of each GPU kernel by its name's head (`axpy`, `scale<float>`)."""
    counts = {}
    for n in nodes(profile.get("tree", [])):
        if n.get("kind") == "gpu_kernel":
            head = n["name"].split("(")[0]
            counts[head] = counts.get(head, 0) + n.get("count", 0)
    return counts


def main():
    out, launches = sys.argv[1], int(sys.argv[2])
    stderr = sys.argv[3] if len(sys.argv) > 3 else None
    with open(f"{out}/profile.json") as f:
        p = json.load(f)
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok   " if ok else "FAIL ") + what)
        failed += not ok

    want = {"axpy": 3, "scale<float>": 3, "empty": launches}
    got = kernel_counts(p)
    check(got == want, f"kernels {got} == {want}")
    anomalies = p.get("anomalies", {})
    check(anomalies.get("device_unknown_correlation", 0) == 0,
          f"unknown correlations: {anomalies.get('device_unknown_correlation', 0)} == 0")
    check(anomalies.get("device_time_invalid", 0) == 0,
          f"invalid device times: {anomalies.get('device_time_invalid', 0)} == 0")
    leaks = [(m.get("space"), l.get("label"), l.get("bytes"))
             for m in p.get("memory", []) for l in m.get("leaks", [])]
    check(leaks == [("CUDA:0", "device", 1 << 20)],
          f"leaks {leaks} == the 1 MiB cudaMalloc never freed")
    if stderr:
        with open(stderr) as f:
            text = f.read()
        line = [l for l in text.splitlines() if l.startswith("kprof: GPU activity: CUPTI")]
        check(bool(line) and line[0].endswith(" active"),
              f"stderr names CUPTI active: {line[:1]}")
    print(f"expect.py {out}: {'FAILED' if failed else 'all checks passed'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
