#!/usr/bin/env python3
"""A cold `owt guard` with a 1 GiB untracked file in a session's worktree
next to the same guard without it (issue 37, target 3): the peak RSS and
the wall time of the real `owt --json guard --cold`, a new process each
time, read from the child's own rusage (`os.wait4`: `ru_maxrss`, so no
sampling can miss the peak).

Hermetic (temp HOME and OWT_HOME). A generated repository of --files
files (cached under /tmp/owt-bench-cache) and --sessions sessions of the
fake agent (`owt new`), each changing a line of a shared file and a file
of its own (as bench/warm_guard.py makes them). Then `huge.bin` (1 GiB,
sparse: no disk) is created in the first session's worktree and, once its
mtime is a second old (the guard remembers a big file's id by its stat only
then, git's racy-clean rule), a first guard hashes all of it ("first
sight"). Each round then runs the guard with the file and without it
(`/huge.bin` in the repository's `info/exclude`, so the file stays as it
is on disk), the order alternating between rounds. A run with the file
counts only if the report lists `huge.bin` among that session's changed
paths and its snapshot holds it as git's blob of 1 GiB of zero bytes (it
cannot pass by skipping the file); a run without it must not list it.
Prints the medians, or with --json every figure.

    python3 bench/big_file.py [--files 10000] [--sessions 16] [--rounds 3] [--json]
"""

import argparse
import hashlib
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
from warm_guard import make_sessions  # noqa: E402

BIG = 1 << 30
NAME = "huge.bin"


def zero_blob_id(size):
    """git's blob id of `size` zero bytes (what the guard must write)."""
    h = hashlib.sha1(b"blob %d\0" % size)
    chunk = bytes(1 << 20)
    for _ in range(size // len(chunk)):
        h.update(chunk)
    h.update(bytes(size % len(chunk)))
    return h.hexdigest()


def cold_guard(owt, repo, env):
    """`owt --json guard --cold` in a new process: (seconds, peak RSS in
    KiB, the report)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        child = subprocess.Popen([owt, "--json", "guard", "--cold"], cwd=repo, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        took = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"owt guard --cold failed ({child.returncode}): {err.read().decode()[-600:]}")
        return took, usage.ru_maxrss, json.loads(out.read())


def check(report, session, repo, env, want):
    """That the report lists (or not) the big file in `session`'s changes,
    and with it, that its snapshot holds the file's whole blob."""
    me = next((p for p in report["participants"] if p["name"] == session), None)
    if me is None:
        raise SystemExit(f"the report has no participant at {session}")
    listed = NAME in me["changed_paths"]
    if listed != (want is not None):
        raise SystemExit(f"{NAME} {'missing from' if want else 'listed in'} the session's changed paths")
    if want:
        line = common.git(repo, "ls-tree", me["snapshot"], NAME, env=env).split()
        if len(line) < 3 or line[2] != want:
            raise SystemExit(f"the snapshot's {NAME} is {line!r}, not the blob {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    owt = str(pathlib.Path(args.owt).resolve())
    want = zero_blob_id(BIG)
    repo = common.generated_repo(args.files, log=lambda m: print(m, file=sys.stderr))
    rounds = []
    with tempfile.TemporaryDirectory(prefix="owt-bench-big-file-") as tmpdir:
        env = common.hermetic_env(pathlib.Path(tmpdir))
        try:
            common.trust(owt, repo, env)
            make_sessions(owt, repo, env, args.sessions, common.file_path(0))
            out = subprocess.run([owt, "--json", "list"], cwd=repo, env=env, check=True, capture_output=True,
                                 text=True)
            session = next(s for s in json.loads(out.stdout)["sessions"] if s["name"] == "wg-00")
            big = pathlib.Path(session["worktree"]) / NAME
            exclude = repo / ".git" / "info" / "exclude"
            kept_exclude = exclude.read_text()
            with open(big, "wb") as f:
                f.truncate(BIG)
            # Its id is remembered once its mtime and ctime are 1 s old.
            settled = big.stat().st_ctime + 1.1
            time.sleep(max(0.0, settled - time.time()))
            took, rss, report = cold_guard(owt, repo, env)
            check(report, "wg-00", repo, env, want)
            first = {"first_s": took, "first_rss_kib": rss}
            for i in range(args.rounds):
                figures = {}
                for with_file in ([False, True] if i % 2 == 0 else [True, False]):
                    exclude.write_text(kept_exclude + ("" if with_file else f"/{NAME}\n"))
                    took, rss, report = cold_guard(owt, repo, env)
                    check(report, "wg-00", repo, env, want if with_file else None)
                    figures["with" if with_file else "without"] = (took, rss)
                rounds.append({
                    "with_s": figures["with"][0], "with_rss_kib": figures["with"][1],
                    "without_s": figures["without"][0], "without_rss_kib": figures["without"][1],
                })
            exclude.write_text(kept_exclude)
            big.unlink()
        finally:
            common.release_repo(repo, env, args.files)
    result = {"files": args.files, "sessions": args.sessions, "size": BIG, **first, "rounds": rounds}
    if args.json:
        print(json.dumps(result))
        return
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"cold owt guard ({args.sessions} sessions, {args.files} files), median of {args.rounds}: "
          f"first sight of a 1 GiB untracked file {result['first_s'] * 1000:.0f} ms, peak RSS "
          f"{result['first_rss_kib'] / 1024:.1f} MiB; then with it {med['with_s'] * 1000:.0f} ms, peak RSS {med['with_rss_kib'] / 1024:.1f} MiB; "
          f"without it {med['without_s'] * 1000:.0f} ms, {med['without_rss_kib'] / 1024:.1f} MiB")


if __name__ == "__main__":
    os.umask(0o022)
    main()
