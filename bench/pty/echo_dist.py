#!/usr/bin/env python3
"""The whole echo distribution of `bench/pty/bench.py --echo-dump FILE` runs.

Usage: bench/pty/echo_dist.py DUMP [DUMP ...] [--slow MS] [--first N]

For each dump (JSON {"owt": [...], "tmux": [...]}, round trips in ms, in
the order measured) prints owt / tmux at p50, p90, p95 and p99 with their
ratios, the share of round trips slower than --slow (default 0.12 ms),
and with --first N the first N round trips of each (the ones right after
the throughput burst).
"""
import argparse
import json
import sys


def quantile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dumps", nargs="+", metavar="DUMP")
    ap.add_argument("--slow", type=float, default=0.12, metavar="MS",
                    help="count round trips slower than this (default 0.12 ms)")
    ap.add_argument("--first", type=int, default=0, metavar="N",
                    help="also print the first N round trips of each")
    args = ap.parse_args()
    print("| dump | p50 | p90 | p95 | p99 | over %g ms |" % args.slow)
    print("|---|---|---|---|---|---|")
    for path in args.dumps:
        try:
            with open(path) as f:
                dump = json.load(f)
            owt, tmux = dump["owt"], dump["tmux"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"{path}: not an --echo-dump file ({e})")
        if not owt or not tmux:
            sys.exit(f"{path}: no round trips in it")
        cells = []
        for p in (0.5, 0.9, 0.95, 0.99):
            o, t = quantile(owt, p), quantile(tmux, p)
            cells.append(f"{o:.3f} / {t:.3f} ({o / t:.2f}×)")
        share = [100 * sum(1 for x in v if x > args.slow) / len(v) for v in (owt, tmux)]
        cells.append("%.1f %% / %.1f %%" % tuple(share))
        print(f"| {path} | " + " | ".join(cells) + " |")
        if args.first:
            for name, values in (("owt", owt), ("tmux", tmux)):
                first = ", ".join(f"{x:.2f}" for x in values[:args.first])
                print(f"  first {args.first} {name}: {first}")


if __name__ == "__main__":
    main()
