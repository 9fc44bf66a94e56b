#!/usr/bin/env python3
"""Benchmark: `owt/diff` (the LSP request the review views ask) on a
10k-file worktree with 200 changed files, vs `git diff` of the same state.

The agent's state mixes every kind of change `owt/diff` covers: 100 files
edited and committed on its branch, 50 staged, 40 unstaged and 10
untracked. The baseline shows the same diff with git: `git diff
<merge-base>` (committed + staged + unstaged; untracked files are not in
it, so git does less). Both print their whole output (hunks included); the
session's agent is live, so owt reads its host's journal as the guard does.

    python3 bench/review.py [--files N] [--changed N] [--runs N] [--json]
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "lsp"))
import common  # noqa: E402
from bench import Client  # noqa: E402  (bench/lsp/bench.py's LSP client)


def change(worktree, n_changed, env):
    """Changes `n_changed` files: 1/2 committed, 1/4 staged, 1/5 unstaged,
    the rest new untracked files."""
    committed = n_changed // 2
    staged = n_changed // 4
    unstaged = n_changed // 5
    untracked = n_changed - committed - staged - unstaged
    step = 37  # spread over the folders
    paths = [common.file_path((i * step) % 10_000) for i in range(committed + staged + unstaged)]
    for n, rel in enumerate(paths):
        path = worktree / rel
        lines = path.read_text().splitlines(keepends=True)
        lines[10] = f"fn changed_{n}() -> u32 {{ {n} }}\n"
        path.write_text("".join(lines))
        if n == committed - 1:
            common.git(worktree, "commit", "-q", "-am", "agent work", env=env)
        elif committed <= n < committed + staged:
            common.git(worktree, "add", rel, env=env)
    for n in range(untracked):
        (worktree / "src" / f"new_{n}.rs").write_text(f"fn new_{n}() {{}}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--changed", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    owt = common.owt_binary()
    if not owt.exists():
        common.build_release()
    repo = common.generated_repo(args.files, log=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="owt-review-bench-") as tmp:
        env = common.hermetic_env(tmp)
        client = None
        try:
            subprocess.run([str(owt), "trust"], cwd=repo, env=env, check=True, capture_output=True)
            out = subprocess.run([str(owt), "--json", "new", "review bench", "--name", "rev"], cwd=repo, env=env,
                                 check=True, capture_output=True, text=True)
            worktree = pathlib.Path(json.loads(out.stdout)["session"]["worktree"])
            change(worktree, args.changed, env)
            base = common.git(worktree, "merge-base", "HEAD", "main", env=env).strip()
            client = Client(owt, repo, env, subprocess.DEVNULL)
            client.request("initialize", {"processId": None, "rootUri": "file://" + str(repo),
                                          "capabilities": {}})
            client.notify("initialized", {})
            first = client.request("owt/diff", {"session": "rev"})
            n_files = len(first["files"])
            if n_files != args.changed:
                raise SystemExit(f"owt/diff saw {n_files} changed files, expected {args.changed}")
            owt_ms, git_ms = [], []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                client.request("owt/diff", {"session": "rev"})
                owt_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                subprocess.run(["git", "diff", base], cwd=worktree, env=env, check=True,
                               stdout=subprocess.DEVNULL)
                git_ms.append((time.perf_counter() - t0) * 1000)
            client.shutdown()
            client = None
        finally:
            if client:
                client.proc.kill()
            common.kill_by_owt_home(env["OWT_HOME"])
            common.clean_repo(repo, common.hermetic_env(common.CACHE / "gen-home"))
    result = {
        "files": args.files,
        "changed": n_files,
        "owt_ms": statistics.median(owt_ms),
        "owt_p95_ms": common.percentile(owt_ms, 95),
        "git_ms": statistics.median(git_ms),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"owt/diff {result['owt_ms']:.1f} ms (p95 {result['owt_p95_ms']:.1f}), "
              f"git diff {result['git_ms']:.1f} ms, ratio {result['owt_ms'] / result['git_ms']:.2f}")


if __name__ == "__main__":
    main()
