#!/usr/bin/env python3
"""A cold one-shot `owt --json guard --cold` next to clash (`clash status
--json`, crate clash-sh) on the same real worktrees, in the same minutes
(issue 37, target 2: owt ≤ 1/3 of clash).

Sessions are real git/git topic branches (the corpus spec's topics,
bench/corpus/git-topics.json.gz, in a clone of git/git given as --repo:
its objects are borrowed through `objects/info/alternates`, nothing is
written there), each an owt session (`owt new --branch`, a real `git
worktree` of a local repository whose `main` is the spec's base), every
other one with its last change not committed (`git reset HEAD^`: modified
files unstaged, new files untracked). Two shapes:

- replayed: every topic whose change applies to the base, its squashed
  change as one commit on `main` (the normal agent case);
- real: the 12 topics with the most changed paths against the base, on
  their real branches (forks with history shared beyond the base).

The agent is one that exits at once, so every checkout is walked (no
session host's journal answers for it): the guard's most expensive cold
case. Each run sets the sessions up afresh and times the repository's
first `owt --json guard --cold`, right after the sessions' `owt new`
(each `owt new` brings owt's commit-graph of the repository up to date
with its session's commits in the background; the symbol cache is
empty). Then each round
runs, as new processes, `owt --json guard --cold` with owt's caches
warm (what every run after the first does: the symbol cache and the
commit-graph owt keeps of a repository that has none), `clash status
--json`, and `owt --json guard --cold` with both caches emptied first
(as if owt had never seen the repository), in turn. Each run's figure
is the median of its rounds; the files are in the page cache (the
checkouts were just written; one warm-up of clash): "cold" means a
fresh process, not a cold disk. clash's output is checked to list every
session's worktree and to report no error, so its time is not an
error's.

    python3 bench/clash_guard.py --repo GITDIR --clash BIN [--shapes replayed,real] [--runs 3] [--rounds 5] [--json]
"""

import argparse
import gzip
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SPEC = common.ROOT / "bench" / "corpus" / "git-topics.json.gz"
REAL_TOPICS = 12


def git(cwd, *args, env):
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {cwd}: {out.stderr.strip()}")
    return out.stdout.strip()


def local_repo(source, base, dest, env):
    """A repository at `dest` whose objects are `source`'s, `main` at `base`."""
    objects = pathlib.Path(source) / ".git" / "objects"
    if not objects.is_dir():
        objects = pathlib.Path(source) / "objects"
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main", env=env)
    (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
    git(dest, "update-ref", "refs/heads/main", base, env=env)
    git(dest, "reset", "-q", "--hard", "main", env=env)
    (dest / ".owt.toml").write_text('[agent]\ndefault_tool = "quit"\nmax_running = 1000\n'
                                    '[tools.quit]\nbinary = "/bin/true"\n')
    (dest / ".git" / "info" / "exclude").write_text("/.owt.toml\n")


def branches(shape, repo, base, topics, env):
    """(session name, branch tip) for each session of `shape`."""
    out = []
    if shape == "replayed":
        for i, (name, tip) in enumerate(topics):
            fork = git(repo, "merge-base", base, tip, env=env)
            merged = subprocess.run(["git", "merge-tree", "--write-tree", f"--merge-base={fork}", base, tip],
                                    cwd=repo, env=env, capture_output=True, text=True)
            if merged.returncode != 0:
                continue  # does not apply to the base (left out, as bench/corpus does)
            tree = merged.stdout.split()[0]
            out.append((f"t{i:02d}", git(repo, "commit-tree", tree, "-p", base, "-m", f"replayed {name}", env=env)))
    else:
        size = lambda tip: len(git(repo, "diff", "--name-only", base, tip, env=env).splitlines())  # noqa: E731
        sized = sorted(((size(tip), i, tip) for i, (_, tip) in enumerate(topics)), reverse=True)[:REAL_TOPICS]
        out = [(f"t{i:02d}", tip) for _, i, tip in sorted(sized, key=lambda s: s[1])]
    return out


def setup(owt, shape, source, spec, tmp):
    env = common.hermetic_env(tmp)
    repo = tmp / "repo"
    base = spec["base"]
    local_repo(source, base, repo, env)
    subprocess.run([owt, "trust"], cwd=repo, env=env, check=True, capture_output=True)
    topics = [(t["name"], t["tip"]) for t in spec["topics"]]
    sessions = []
    for k, (name, tip) in enumerate(branches(shape, repo, base, topics, env)):
        git(repo, "branch", f"{shape}/{name}", tip, env=env)
        out = subprocess.run([owt, "--json", "new", f"clash bench {name}", "--name", name, "--branch",
                              f"{shape}/{name}", "--base", "main"], cwd=repo, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"owt new {name}: {out.stderr.strip()[-400:]}")
        wt = pathlib.Path(json.loads(out.stdout)["session"]["worktree"])
        if k % 2 == 1:
            git(wt, "reset", "-q", "HEAD^", env=env)  # the last change uncommitted
        sessions.append((name, wt, k % 2 == 1))
    return env, repo, sessions


def run_timed(argv, cwd, env):
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({out.returncode}): {out.stderr.strip()[-600:]}")
    return took, json.loads(out.stdout)


def checked_clash(report, sessions):
    """clash's conflicting pairs of sessions; fails unless it listed every
    session's worktree and reported no error."""
    listed = {os.path.realpath(w["path"]): w["id"] for w in report["worktrees"]}
    ids = {}
    for name, wt, _ in sessions:
        if os.path.realpath(wt) not in listed:
            raise SystemExit(f"clash did not list {wt}: {sorted(listed)}")
        ids[listed[os.path.realpath(wt)]] = name
    errors = [c for c in report["conflicts"] if c.get("error")]
    if errors:
        raise SystemExit(f"clash reported errors: {errors[:3]}")
    return {tuple(sorted((ids[c["wt1_id"]], ids[c["wt2_id"]]))) for c in report["conflicts"]
            if c["conflicting_files"] and c["wt1_id"] in ids and c["wt2_id"] in ids}


def owt_conflicts(report, sessions):
    names = {name for name, _, _ in sessions}
    seen = {p["name"] for p in report["participants"]} if report["participants"] and "name" in report["participants"][0] else names
    if not names <= seen:
        raise SystemExit(f"owt guard left out sessions: {sorted(names - seen)}")
    return {tuple(sorted((p["a"], p["b"]))) for p in report["pairs"]
            if p["level"] == "conflict" and p["a"] in names and p["b"] in names}


def measure(owt, clash, shape, source, spec, runs, rounds):
    result = {"shape": shape, "owt_first_ms": [], "owt_warm_ms": [], "owt_empty_ms": [], "clash_ms": []}
    guard = [owt, "--json", "guard", "--cold"]
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix=f"owt-bench-clash-{shape}-") as tmpdir:
            tmp = pathlib.Path(tmpdir)
            try:
                env, repo, sessions = setup(owt, shape, source, spec, tmp)
                # The repository's first `owt guard`, right after its
                # sessions' `owt new` (each brings owt's commit-graph up
                # to date with its commits in the background): nothing
                # cached by an earlier guard.
                took, report = run_timed(guard, repo, env)
                result["owt_first_ms"].append(took * 1000)
                # A first run of each otherwise: owt's caches emptied.
                caches = [pathlib.Path(env["OWT_HOME"]) / "cache" / name
                          for name in ("symbols", "commit-graphs")]
                _, clash_report = run_timed([clash, "status", "--json"], repo, env)  # warm-up
                clash_pairs = checked_clash(clash_report, sessions)
                warm, empty, theirs = [], [], []
                for _ in range(rounds):
                    took, report = run_timed(guard, repo, env)
                    warm.append(took)
                    took, clash_report = run_timed([clash, "status", "--json"], repo, env)
                    theirs.append(took)
                    for cache in caches:
                        shutil.rmtree(cache, ignore_errors=True)
                    took, _ = run_timed(guard, repo, env)
                    empty.append(took)
                checked_clash(clash_report, sessions)
                result["owt_warm_ms"].append(statistics.median(warm) * 1000)
                result["owt_empty_ms"].append(statistics.median(empty) * 1000)
                result["clash_ms"].append(statistics.median(theirs) * 1000)
                owt_pairs = owt_conflicts(report, sessions)
                result.update(
                    sessions=len(sessions), uncommitted=sum(1 for s in sessions if s[2]),
                    pairs=len(sessions) * (len(sessions) - 1) // 2,
                    scans=sorted({str(p.get("scan")) for p in report["participants"]}),
                    owt_conflicts=len(owt_pairs), clash_conflicts=len(clash_pairs),
                    clash_of_owt=len(owt_pairs & clash_pairs), clash_only=len(clash_pairs - owt_pairs),
                    clash_worktrees=len(clash_report["worktrees"]),
                )
            finally:
                common.kill_by_owt_home(str(tmp / "owt"))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--clash", required=True, help="the clash binary (crate clash-sh)")
    ap.add_argument("--repo", required=True, help="a clone of git/git (bare, or its checkout)")
    ap.add_argument("--shapes", default="replayed,real")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = json.loads(gzip.open(SPEC).read())["source"]
    owt = str(pathlib.Path(args.owt).resolve())
    clash = str(pathlib.Path(args.clash).resolve())
    results = [measure(owt, clash, shape, args.repo, spec, args.runs, args.rounds)
               for shape in args.shapes.split(",")]
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        f, w, e, c = (statistics.median(r[k]) for k in ("owt_first_ms", "owt_warm_ms", "owt_empty_ms", "clash_ms"))
        print(f"{r['shape']}: {r['sessions']} sessions ({r['uncommitted']} uncommitted): owt guard --cold "
              f"{f:.0f} ms (the first, after owt new), {w:.0f} ms (owt's caches warm), {e:.0f} ms (emptied); "
              f"clash status {c:.0f} ms; owt/clash {f / c:.2f} / {w / c:.2f} / {e / c:.2f}; "
              f"conflicting pairs: owt {r['owt_conflicts']}, "
              f"clash {r['clash_conflicts']} ({r['clash_of_owt']} of owt's)")


if __name__ == "__main__":
    os.umask(0o022)
    main()
