#!/usr/bin/env python3
"""Two owt release binaries side by side on one bench script, alternating:
what a before/after of a change quotes (issue 38's whole-run comparison
was made with two checkouts' bench/run; this is for one row at a time).

    python3 bench/ab.py --before OLD_OWT --after NEW_OWT --runs 3 \
        --keys owt_mb_s,tmux_mb_s -- bench/pty/bench.py --json --mb 100

Each run calls `python3 SCRIPT ARGS --owt BINARY` (the script must take
--owt and print one JSON object with --json), before then after, and
prints every run's values of --keys and their medians. The keys may name
nested values with dots (`scale.new_on_ms`, a list's item by its index:
`0.owt_first_ms`); a list's median is taken.
"""

import argparse
import json
import statistics
import subprocess
import sys


def pick(doc, key):
    for part in key.split("."):
        # A list's item by its index (`0.owt_first_ms`).
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    # A list (one value per run of the script): its median.
    return statistics.median(doc) if isinstance(doc, list) else doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the owt binary before the change")
    ap.add_argument("--after", required=True, help="the owt binary after it")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keys", required=True, help="comma-separated JSON keys to report")
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS…")
    args = ap.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        ap.error("give the bench script after --")
    keys = args.keys.split(",")
    got = {"before": {k: [] for k in keys}, "after": {k: [] for k in keys}}
    for i in range(args.runs):
        for side in ("before", "after"):
            binary = getattr(args, side)
            run = subprocess.run([sys.executable, *script, "--owt", binary], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"{' '.join(script)} --owt {binary} failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
            try:
                doc = json.loads(run.stdout)
                for k in keys:
                    got[side][k].append(pick(doc, k))
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{' '.join(script)} printed no JSON with the keys {keys} ({e!r}); run it with --json")
            print(f"run {i + 1} {side}: " + ", ".join(f"{k}={pick(doc, k):.4g}" for k in keys), flush=True)
    for k in keys:
        b, a = got["before"][k], got["after"][k]
        print(f"{k}: before median {statistics.median(b):.4g} {[round(x, 4) for x in b]}, "
              f"after median {statistics.median(a):.4g} {[round(x, 4) for x in a]}")


if __name__ == "__main__":
    main()
