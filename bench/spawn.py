#!/usr/bin/env python3
"""Spawn: `owt new` (fake agent) vs `git worktree add` on the same repository.

Hermetic (temp HOME and OWT_HOME, no global git config). A generated
repository of --files files (cached under /tmp/owt-bench-cache); the fake
agent tests/data/idle-agent.sh is declared in its .owt.toml. Rounds
alternate the two commands; each makes a new worktree on a new branch from
main. `owt new` also records the session, starts its session host and the
agent, and returns when the agent runs. Prints medians and the ratio.

    python3 bench/spawn.py [--files 2000] [--rounds 8] [--json]
"""

import argparse
import fcntl
import json
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    owt = str(pathlib.Path(args.owt).resolve())
    repo = common.generated_repo(args.files, log=lambda m: print(m, file=sys.stderr))
    owt_s, git_s = [], []
    with tempfile.TemporaryDirectory(prefix="owt-bench-spawn-") as tmpdir:
        env = common.hermetic_env(pathlib.Path(tmpdir))
        common.trust(owt, repo, env)
        try:
            for i in range(args.rounds):
                t0 = time.perf_counter()
                common.git(repo, "worktree", "add", "-q", "-b", f"plain-{i}",
                           f"{repo}.worktrees/plain-{i}", "main", env=env)
                git_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                subprocess.run([owt, "new", f"spawn bench {i}", "--name", f"spawn-{i}"], cwd=repo, env=env,
                               check=True, capture_output=True)
                owt_s.append(time.perf_counter() - t0)
        finally:
            common.kill_by_owt_home(env["OWT_HOME"])
            with open(common.CACHE / f"repo-{args.files}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                common.clean_repo(repo, env)
    result = {
        "files": args.files,
        "rounds": args.rounds,
        "owt_ms": common.median(owt_s) * 1000,
        "git_ms": common.median(git_s) * 1000,
        "owt_spread": common.spread(owt_s),
        "git_spread": common.spread(git_s),
        "owt_runs_ms": [x * 1000 for x in owt_s],
        "git_runs_ms": [x * 1000 for x in git_s],
    }
    result["ratio"] = result["owt_ms"] / result["git_ms"]
    if args.json:
        print(json.dumps(result))
    else:
        print(f"spawn on {args.files} files: owt new {result['owt_ms']:.1f} ms, git worktree add "
              f"{result['git_ms']:.1f} ms (medians of {args.rounds}); ratio {result['ratio']:.2f}")


if __name__ == "__main__":
    main()
