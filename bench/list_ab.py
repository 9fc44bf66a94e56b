#!/usr/bin/env python3
"""`owt list` of two owt binaries and `git worktree list`, called in turn
on sessions kept by bench/lsp/bench.py (`--keep STATE`), for a before/after
comparison of a listing change on the same live sessions.

    OWT_BENCH_CACHE=DIR python3 bench/lsp/bench.py --owt BIN --files 1000 \\
        --sessions 64 --writes 4 --runs 1 --keep STATE
    python3 bench/list_ab.py STATE BEFORE_BIN AFTER_BIN [--calls 15] [--blocks 3]

Prints, per block, the median of --calls calls of each (before, after,
git, alternating call by call) and each binary's ratio to git; the
listings' JSON is compared too (RSS and status text left out). Tear the
sessions down after with `bench/lsp/bench.py --teardown STATE`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsp"))
import bench as B  # noqa: E402


def timed(cmd, repo, env):
    start = time.perf_counter()
    subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def listing(binary, repo, env):
    out = subprocess.run([binary, "--json", "list"], cwd=repo, env=env,
                         capture_output=True, check=True, text=True).stdout
    doc = json.loads(out)
    sessions = doc.get("sessions", doc) if isinstance(doc, dict) else doc
    return [{k: v for k, v in s.items() if k not in ("rss_bytes", "status_text")}
            for s in sessions]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("state")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--blocks", type=int, default=3)
    args = ap.parse_args()
    state = B.read_state(args.state)
    env, repo = state["env"], state["repo"]
    cmds = {"before": [args.before, "list"], "after": [args.after, "list"],
            "git": ["git", "worktree", "list"]}
    for block in range(args.blocks):
        times = {k: [] for k in cmds}
        for _ in range(args.calls):
            for k, cmd in cmds.items():
                times[k].append(timed(cmd, repo, env))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"block {block + 1}: before {med['before']:.2f} ms, after {med['after']:.2f} ms, "
              f"git {med['git']:.2f} ms; ratio before {med['before'] / med['git']:.2f}, "
              f"after {med['after'] / med['git']:.2f}")
    same = listing(args.before, repo, env) == listing(args.after, repo, env)
    print("same listing JSON" if same else "THE LISTINGS DIFFER")


if __name__ == "__main__":
    main()
