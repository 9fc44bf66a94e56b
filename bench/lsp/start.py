#!/usr/bin/env python3
"""`owt lsp`'s start on sessions kept by `bench/lsp/bench.py --keep STATE`:
seconds from `initialize` to the answer to `owt/board` (the guard computed
and published) and to the watcher's line saying every worktree is
watched, with the server's own debug lines on its phases (checkouts
opened, scanned, verdicts, watches made, caught up).

Usage: bench/lsp/start.py STATE OWT_BINARY [--runs 3] [--rss-at 2,10,25] [--open-at 1.5]

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


def rss_kib(pid):
    """The server's `VmRSS`, `RssAnon` (heap, stacks) and `RssFile` (the binary's and
    libraries' pages) in KiB, from /proc."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return {k: int(re.search(rf"{k}:\s+(\d+)", status).group(1)) for k in ("VmRSS", "RssAnon", "RssFile")}


def open_and_change(client, repo):
    """What an editor does first: opens the file bench.py's writes go to
    and changes it, unsaved (the guard's buffer overrides)."""
    path = repo / B.common.file_path(B.TARGET_FILE)
    base = path.read_text()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": B.uri(path), "languageId": "rust", "version": 1, "text": base}})
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": B.uri(path), "version": 2},
        "contentChanges": [{"text": B.human_text(base)}]})


def one(state, owt, rss_at, open_at):
    env = dict(state["env"], RUST_LOG="warn,owt_guard=debug,owt_lsp::guard_live=debug")
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
        rss = []
        steps = [(at, "rss") for at in rss_at] + ([(open_at, "open")] if open_at is not None else [])
        for at, what in sorted(steps):
            time.sleep(max(0.0, started + watched + at - time.perf_counter()))
            if what == "open":
                open_and_change(client, repo)
            else:
                rss.append(dict(rss_kib(client.proc.pid), after_watched_s=at))
    finally:
        client.shutdown()
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", pathlib.Path(path).read_bytes())
    os.unlink(path)
    phases = [m.group(0).decode() for m in PHASES.finditer(text)]
    return {"ready_s": round(ready, 3), "watched_s": round(watched, 3), "rss_kib": rss,
            "phases": phases}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("state", help="the file bench/lsp/bench.py --keep wrote")
    ap.add_argument("owt", help="the owt binary to start as `owt lsp`")
    ap.add_argument("--runs", type=int, default=3, help="starts, one after another (default 3)")
    ap.add_argument("--rss-at", default="", metavar="S,S,...",
                    help="also read the idle server's VmRSS, RssAnon and RssFile these many seconds after "
                         "every worktree is watched (e.g. 2,10,25)")
    ap.add_argument("--open-at", type=float, metavar="S",
                    help="open and change (unsaved) the file bench.py writes to, S seconds after "
                         "every worktree is watched, as an editor would")
    args = ap.parse_args()
    state = B.read_state(args.state)
    if not os.access(args.owt, os.X_OK):
        raise SystemExit(f"{args.owt}: not an executable owt binary")
    try:
        rss_at = sorted(float(x) for x in args.rss_at.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"--rss-at {args.rss_at!r}: seconds separated by commas, e.g. 2,10,25")
    for _ in range(args.runs):
        print(json.dumps(one(state, os.path.abspath(args.owt), rss_at, args.open_at)), flush=True)


if __name__ == "__main__":
    main()
