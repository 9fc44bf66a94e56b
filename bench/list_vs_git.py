#!/usr/bin/env python3
"""Benchmark: `owt list` with 10 sessions vs `git worktree list` on the same repository.

Builds owt in release mode, makes a hermetic temp repository with 10 owt
sessions (fake agent from tests/data), then times both commands in the same
run, alternating, and prints the medians and the ratio. Also the start-up
floor of each program: `owt --version` vs `git --version`, alternating
(a process started, its binary mapped and relocated, nothing read).

    python3 bench/list_vs_git.py [--runs N] [--json]
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

ROOT = pathlib.Path(__file__).resolve().parent.parent


def build_release():
    """target/release/owt, built when missing: bench/run builds it before
    its rows (unless --no-build, which measures it as it is), and so must
    its steps leave it alone."""
    owt = ROOT / "target" / "release" / "owt"
    if not owt.exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "owt"], cwd=ROOT, check=True)
    return owt


def hermetic_env(tmp):
    env = dict(os.environ)
    env.update(
        HOME=str(tmp / "home"),
        OWT_HOME=str(tmp / "owt"),
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_SYSTEM="/dev/null",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
    )
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("XDG_STATE_HOME", None)
    (tmp / "home").mkdir()
    return env


def kill_by_owt_home(owt_home):
    """Kills the session hosts and agents started with this OWT_HOME."""
    needle = f"OWT_HOME={owt_home}".encode()
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), 9)
        except (OSError, ProcessLookupError):
            pass


def time_cmd(argv, cwd, env):
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    owt = build_release()
    with tempfile.TemporaryDirectory(prefix="owt-bench-list-") as tmpdir:
        tmp = pathlib.Path(tmpdir)
        env = hermetic_env(tmp)
        repo = tmp / "repo"
        repo.mkdir()
        git = lambda *a: subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True)
        git("init", "-q", "-b", "main")
        for i in range(50):
            (repo / f"file{i}.txt").write_text(f"line {i}\n" * 20)
        agent = ROOT / "tests" / "data" / "idle-agent.sh"
        (repo / ".owt.toml").write_text(f'[agent]\ndefault_tool = "fake"\n[tools.fake]\nbinary = "{agent}"\n')
        git("add", ".")
        git("commit", "-q", "-m", "initial")
        # The fake agent runs only from a configuration the user trusts.
        subprocess.run([str(owt), "trust"], cwd=repo, env=env, check=True, capture_output=True)
        for i in range(args.sessions):
            subprocess.run([str(owt), "new", f"bench task {i}"], cwd=repo, env=env, check=True, capture_output=True)
        try:
            owt_times, git_times = [], []
            owt_start, git_start = [], []
            for _ in range(3):  # warm caches
                time_cmd([str(owt), "list"], repo, env)
                time_cmd(["git", "worktree", "list"], repo, env)
                time_cmd([str(owt), "--version"], repo, env)
                time_cmd(["git", "--version"], repo, env)
            for _ in range(args.runs):
                owt_times.append(time_cmd([str(owt), "list"], repo, env))
                git_times.append(time_cmd(["git", "worktree", "list"], repo, env))
                owt_start.append(time_cmd([str(owt), "--version"], repo, env))
                git_start.append(time_cmd(["git", "--version"], repo, env))
        finally:
            kill_by_owt_home(env["OWT_HOME"])
        owt_ms = statistics.median(owt_times) * 1000
        git_ms = statistics.median(git_times) * 1000
        spread = lambda xs: (max(xs) - min(xs)) / statistics.median(xs)
        result = {
            "metric": f"owt list ({args.sessions} sessions) vs git worktree list",
            "owt_ms": round(owt_ms, 2),
            "git_ms": round(git_ms, 2),
            "ratio": round(owt_ms / git_ms, 2),
            "owt_start_ms": round(statistics.median(owt_start) * 1000, 2),
            "git_start_ms": round(statistics.median(git_start) * 1000, 2),
            "runs": args.runs,
            "noisy": spread(owt_times) > 1.0 or spread(git_times) > 1.0,
        }
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{result['metric']}: owt {owt_ms:.2f} ms, git {git_ms:.2f} ms (medians of {args.runs}); "
                  f"ratio owt/git = {result['ratio']}" + (" (noisy)" if result["noisy"] else ""))
            print(f"start-up: owt --version {result['owt_start_ms']:.2f} ms, "
                  f"git --version {result['git_start_ms']:.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
