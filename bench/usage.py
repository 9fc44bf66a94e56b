#!/usr/bin/env python3
"""Benchmark: `owt list` when every session's agent has a big token record.

10 sessions whose agent is named `claude` (the idle test agent under that
name), each with a Claude Code transcript of --mb MB in Claude Code's
folder (real lines of a Claude Code 2.1.197 transcript, distinct message
ids). Times, alternating with `git worktree list` on the same repository:

- `owt list` once every transcript has been read (nothing new: one stat
  per transcript), the figure that matters for every listing;
- `owt list` after one message was appended to every transcript;
- the first `owt list` after the transcripts appeared (reads them, at most
  16 MiB per file per listing), once.

    python3 bench/usage.py [--runs N] [--mb MB] [--json] [--owt BINARY]
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
from list_vs_git import ROOT, build_release, hermetic_env, kill_by_owt_home, time_cmd  # noqa: E402

FIXTURE = ROOT / "core" / "src" / "usage" / "testdata" / "claude-2.1.197.jsonl"


def mangle(path):
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in str(path))


def assistant_lines():
    return [json.loads(l) for l in FIXTURE.read_text().splitlines() if '"type":"assistant"' in l]


def transcript_chunk(n_start, count, now_iso):
    out = []
    lines = assistant_lines()
    for i in range(count):
        d = json.loads(json.dumps(lines[i % len(lines)]))
        d["timestamp"] = now_iso
        d["message"]["id"] = f"msg_{n_start + i}"
        d["uuid"] = f"u{n_start + i}"
        out.append(json.dumps(d, separators=(",", ":")))
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--mb", type=int, default=20, help="size of each transcript")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--owt", help="the owt binary (default: target/release/owt, built when missing)")
    args = parser.parse_args()

    owt = pathlib.Path(args.owt) if args.owt else build_release()
    with tempfile.TemporaryDirectory(prefix="owt-bench-usage-") as tmpdir:
        tmp = pathlib.Path(tmpdir)
        env = hermetic_env(tmp)
        repo = tmp / "repo"
        repo.mkdir()
        git = lambda *a: subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True)
        git("init", "-q", "-b", "main")
        # The idle test agent as `claude` on PATH: a repository's own
        # `.owt.toml` may not point a built-in agent at another program.
        agents = tmp / "bin"
        agents.mkdir()
        (agents / "claude").symlink_to(ROOT / "tests" / "data" / "idle-agent.sh")
        env["PATH"] = f"{agents}:{env['PATH']}"
        (repo / "README.md").write_text("bench\n")
        git("add", ".")
        git("commit", "-q", "-m", "initial")
        try:  # the hosts started so far go too if setting up fails
            worktrees = []
            for i in range(args.sessions):
                out = subprocess.run([str(owt), "--json", "new", f"bench task {i}"], cwd=repo, env=env,
                                     check=True, capture_output=True, text=True).stdout
                worktrees.append(json.loads(out)["session"]["worktree"])
            now_iso = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 5))
            line_len = len(transcript_chunk(0, 1, now_iso))
            per_file = max(1, args.mb * 1024 * 1024 // line_len)
            transcripts = []
            for wt in worktrees:
                folder = tmp / "home" / ".claude" / "projects" / mangle(wt)
                folder.mkdir(parents=True)
                path = folder / "conversation.jsonl"
                path.write_text(transcript_chunk(0, per_file, now_iso))
                transcripts.append(path)
        except BaseException:
            kill_by_owt_home(env["OWT_HOME"])
            raise
        try:
            first = time_cmd([str(owt), "list"], repo, env)
            for _ in range(3):  # the rest of each file, and warm caches
                time_cmd([str(owt), "list"], repo, env)
                time_cmd(["git", "worktree", "list"], repo, env)
            tokens = json.loads(subprocess.run([str(owt), "--json", "list"], cwd=repo, env=env, check=True,
                                               capture_output=True, text=True).stdout)
            counted = sum((s["usage"] or {}).get("output_tokens", 0) for s in tokens["sessions"])
            owt_times, git_times, append_times = [], [], []
            for r in range(args.runs):
                owt_times.append(time_cmd([str(owt), "list"], repo, env))
                git_times.append(time_cmd(["git", "worktree", "list"], repo, env))
                for path in transcripts:
                    with open(path, "a") as f:
                        f.write(transcript_chunk(per_file + r, 1, now_iso))
                append_times.append(time_cmd([str(owt), "list"], repo, env))
        finally:
            kill_by_owt_home(env["OWT_HOME"])
        med = lambda xs: statistics.median(xs) * 1000
        spread = lambda xs: (max(xs) - min(xs)) / statistics.median(xs)
        result = {
            "metric": f"owt list ({args.sessions} sessions, {args.mb} MB transcript each, read) vs git worktree list",
            "owt_ms": round(med(owt_times), 2),
            "git_ms": round(med(git_times), 2),
            "ratio": round(med(owt_times) / med(git_times), 2),
            "append_ms": round(med(append_times), 2),
            "first_list_ms": round(first * 1000, 1),
            "output_tokens_counted": counted,
            "runs": args.runs,
            "noisy": spread(owt_times) > 1.0 or spread(git_times) > 1.0,
        }
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{result['metric']}: owt {result['owt_ms']} ms, git {result['git_ms']} ms "
                  f"(medians of {args.runs}; ratio {result['ratio']}); after one appended message per "
                  f"transcript: {result['append_ms']} ms; first listing (reading them): "
                  f"{result['first_list_ms']} ms" + (" (noisy)" if result["noisy"] else ""))


if __name__ == "__main__":
    sys.exit(main())
