#!/usr/bin/env python3
"""`owt lsp`'s start on sessions kept by `bench/lsp/bench.py --keep STATE`:
seconds from `initialize` to the answer to `owt/board` (the guard computed
and published) and to the watcher's line saying every worktree is
watched, with the server's own debug lines on its phases (checkouts
opened, scanned, verdicts, watches made, caught up).

Usage: bench/lsp/start.py STATE OWT_BINARY [--runs 3]

Not a `bench/run` row: what the rows "LSP start → guard ready" and
"every worktree watched" are made of (docs/benchmarks.md).
"""
import argparse
import os
import pathlib
import re
import sys
import tempfile
import time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

PHASES = re.compile(rb"conflict guard(?: computed)?: .*")


def one(state, owt):
    env = dict(state["env"], RUST_LOG="warn,owt_core::guard=debug,owt_lsp::guard_live=debug")
    repo = pathlib.Path(state["repo"])
    with tempfile.NamedTemporaryFile(prefix="owt-lsp-start-", suffix=".log", delete=False) as log:
        path = log.name
    client = B.Client(owt, repo, env, open(path, "wb"))
    try:
        started = time.perf_counter()
        client.request("initialize", {
            "processId": os.getpid(), "rootUri": B.uri(repo),
            "workspaceFolders": [{"uri": B.uri(repo), "name": "repo"}],
            "capabilities": {"window": {"workDoneProgress": True}}, "initializationOptions": {}})
        client.notify("initialized", {})
        client.request("owt/board", None)
        ready = time.perf_counter() - started
        watched = B.wait_watched(path, started, 900)
    finally:
        client.shutdown()
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", pathlib.Path(path).read_bytes())
    os.unlink(path)
    phases = [m.group(0).decode() for m in PHASES.finditer(text)]
    return {"ready_s": round(ready, 3), "watched_s": round(watched, 3), "phases": phases}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("state", help="the file bench/lsp/bench.py --keep wrote")
    ap.add_argument("owt", help="the owt binary to start as `owt lsp`")
    ap.add_argument("--runs", type=int, default=3, help="starts, one after another (default 3)")
    args = ap.parse_args()
    try:
        state = json.loads(pathlib.Path(args.state).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{args.state}: not a state file of bench/lsp/bench.py --keep ({e})")
    if not os.access(args.owt, os.X_OK):
        raise SystemExit(f"{args.owt}: not an executable owt binary")
    for _ in range(args.runs):
        print(json.dumps(one(state, os.path.abspath(args.owt))), flush=True)


if __name__ == "__main__":
    main()
