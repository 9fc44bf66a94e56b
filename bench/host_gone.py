#!/usr/bin/env python3
"""A session host whose worktree is deleted under it: the host's
`RssAnon` (heap, stacks) before the delete and every 2 s after it, and
the journal's log lines, for sessions kept by
`bench/lsp/bench.py --keep STATE` (idle agents in live hosts).

Usage: bench/host_gone.py STATE [--session agent-00] [--seconds 16]

Deletes that session's worktree (`rm -rf`, as a user or a tool outside
owt would): use a STATE made for this, and `bench/lsp/bench.py
--teardown STATE` after. Not a `bench/run` row (bench/results.md, "A
session host whose checkout is deleted under it").
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsp"))
import bench as B  # noqa: E402


def host_of(state, name):
    """The pid and log of `name`'s session host, from its spec file."""
    logs = pathlib.Path(state["env"]["OWT_HOME"]) / "logs"
    for spec in logs.glob("*.spec.json"):
        if json.loads(spec.read_text()).get("session_name") != name:
            continue
        needle = str(spec).encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"__host" in cmdline and needle in cmdline:
                return int(pid), spec.with_name(spec.name.replace(".spec.json", ".log"))
    raise SystemExit(f"no live session host for {name}")


def rss_anon_kib(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"RssAnon:\s+(\d+)", status).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("state", help="the file bench/lsp/bench.py --keep wrote")
    ap.add_argument("--session", default="agent-00",
                    help="the session whose worktree is deleted (default agent-00)")
    ap.add_argument("--seconds", type=int, default=16,
                    help="how long to sample after the delete, every 2 s (default 16)")
    args = ap.parse_args()
    state = B.read_state(args.state)
    names = [s["name"] for s in state["sessions"]]
    if args.session not in names:
        raise SystemExit(f"no session {args.session} in {args.state} (it has {', '.join(names)})")
    worktree = next(s["worktree"] for s in state["sessions"] if s["name"] == args.session)
    pid, log = host_of(state, args.session)
    before = rss_anon_kib(pid)
    lines_before = len(log.read_text().splitlines())
    shutil.rmtree(worktree)
    samples = []
    for _ in range(args.seconds // 2):
        time.sleep(2)
        samples.append(rss_anon_kib(pid))
    journal = [line for line in log.read_text().splitlines()[lines_before:] if "journal" in line]
    print(json.dumps({"session": args.session, "host_pid": pid, "rss_anon_before_kib": before,
                      "rss_anon_after_kib_every_2s": samples, "journal_log_lines": len(journal),
                      "journal_log": journal[:3]}))


if __name__ == "__main__":
    main()
