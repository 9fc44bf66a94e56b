#!/usr/bin/env python3
"""`owt guard` answered by a running `owt lsp` (its live guard, over
`$OWT_HOME/run/lsp-<pid>.sock`) next to a cold `owt guard --cold` (an
engine built from scratch in the process) on the same repository, in the
same run.

Hermetic (temp HOME and OWT_HOME). A generated repository of --files
files (cached under /tmp/owt-bench-cache) and --sessions sessions of the
fake agent (`owt new`): each changes a line of one shared file (every
other line, so neighbours meet) and a file of its own. A real `owt lsp`
runs in the main checkout; once it answers, each round runs `owt --json
guard` and `owt --json guard --cold` once each (new processes, as a person
or a script runs them). The two reports are checked equal (but for
`computed_at`). Prints the medians.

    python3 bench/warm_guard.py [--files 10000] [--sessions 16] [--rounds 20] [--json]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

WARM = "answered by the live guard of owt lsp"


def start_lsp(owt, repo, env, tmpdir):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "lsp"))
    from bench import Client  # bench/lsp/bench.py

    stderr = open(pathlib.Path(tmpdir) / "lsp-stderr.log", "wb")
    client = Client(owt, repo, env, stderr)
    root_uri = f"file://{repo}"
    client.request("initialize", {
        "processId": os.getpid(), "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": "root"}],
        "capabilities": {}, "initializationOptions": {},
    })
    client.notify("initialized", {})
    return client


def guard(owt, repo, env, *extra):
    """`owt -v --json guard EXTRA`: seconds, the report, the log."""
    t0 = time.perf_counter()
    out = subprocess.run([owt, "-v", "--json", "guard", *extra], cwd=repo, env=env, capture_output=True,
                         text=True, check=True)
    took = time.perf_counter() - t0
    report = json.loads(out.stdout)
    report.pop("computed_at", None)
    return took, report, out.stderr


def make_sessions(owt, repo, env, n, shared):
    for i in range(n):
        out = subprocess.run([owt, "--json", "new", f"warm guard bench {i}", "--name", f"wg-{i:02d}"],
                             cwd=repo, env=env, check=True, capture_output=True, text=True)
        wt = pathlib.Path(json.loads(out.stdout)["session"]["worktree"])
        lines = (wt / shared).read_text().splitlines(keepends=True)
        lines[(2 * i) % len(lines)] = f"// changed by wg-{i:02d}\n"
        (wt / shared).write_text("".join(lines))
        own = wt / common.file_path(1 + i)
        own.write_text(own.read_text() + f"// wg-{i:02d}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    owt = str(pathlib.Path(args.owt).resolve())
    repo = common.generated_repo(args.files, log=lambda m: print(m, file=sys.stderr))
    warm_s, cold_s = [], []
    with tempfile.TemporaryDirectory(prefix="owt-bench-warm-guard-") as tmpdir:
        env = common.hermetic_env(pathlib.Path(tmpdir))
        try:
            subprocess.run([owt, "trust"], cwd=repo, env=env, capture_output=True)
            make_sessions(owt, repo, env, args.sessions, common.file_path(0))
            lsp = start_lsp(owt, repo, env, tmpdir)
            deadline = time.monotonic() + 120
            while WARM not in guard(owt, repo, env)[2]:
                if time.monotonic() > deadline:
                    raise SystemExit("owt lsp never answered owt guard")
                time.sleep(0.05)
            for _ in range(args.rounds):
                took, warm, log = guard(owt, repo, env)
                if WARM not in log:
                    raise SystemExit(f"a round was not answered by owt lsp: {log[-400:]}")
                warm_s.append(took)
                took, cold, _ = guard(owt, repo, env, "--cold")
                cold_s.append(took)
                if warm != cold:
                    raise SystemExit("the warm and cold reports differ")
            pairs = len(warm["pairs"])
            lsp.proc.kill()
            lsp.proc.wait()
        finally:
            common.release_repo(repo, env, args.files)
    result = {
        "files": args.files,
        "sessions": args.sessions,
        "rounds": args.rounds,
        "pairs": pairs,
        "warm_ms": statistics.median(warm_s) * 1000,
        "cold_ms": statistics.median(cold_s) * 1000,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"owt guard ({args.sessions} sessions, {args.files} files, {pairs} pairs): answered by owt lsp "
              f"median {result['warm_ms']:.1f} ms; cold median {result['cold_ms']:.1f} ms")


if __name__ == "__main__":
    os.umask(0o022)
    main()
