#!/usr/bin/env python3
"""bench/corpus/extract.py: the Conflict Guard corpus's topologies, taken
from a real repository's merged topic branches.

    bench/corpus/extract.py --repo PATH [--topics 16] [--skip 0] [--branch master]
                            [--max-bytes 100000] [--out bench/corpus/git-topics.json]

Takes the last `--topics` topic branches merged into `--branch` (skipping
the `--skip` most recent merges) and the base they were merged into (the
first parent of the earliest of those merges: every topic is still
unmerged there). It keeps, for every commit of the topics that the base
does not have, for the commits they fork from and for the base, the
commit graph (ancestry among them, reduced, with their merge bases added
until merge bases of any of them are in the set), and every file a
topic's own commit changed, at each of those commits, as a sequence of line
numbers: each distinct line of the real repository is one number, so two
lines are equal in the corpus exactly when they are equal in the real
repository, and nothing of the real content is kept. `owt::guard::corpus::build`
(core/src/guard/corpus.rs) makes a repository from it whose merges behave as the real ones (line
equality is all git's merge looks at; rename detection by similarity may
differ a little).

The committed git-topics.json.gz: git/git, `--topics 16 --skip 304` (a
window with topics that build on one another and one forked from a
maintenance line), then `gzip -9`.

The source repository is only read (`git --git-dir PATH`). Needs git.
"""

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile


def git(repo, *args, input=None):
    out = subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, input=input,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout


def lines(repo, *args):
    return git(repo, *args).decode().splitlines()


def is_ancestor(repo, a, b):
    return subprocess.run(["git", "--git-dir", repo, "merge-base", "--is-ancestor", a, b]).returncode == 0


def apply(old, ops):
    """A delta's lines: `[start, count]` copies lines of `old`; `["+", n…]`
    is new lines."""
    out = []
    for op in ops:
        if op and op[0] == "+":
            out.extend(op[1:])
        else:
            out.extend(old[op[0]:op[0] + op[1]])
    return out


def with_commit_graph(repo):
    """The repository, or a scratch clone sharing its objects with a
    commit-graph written (thousands of ancestry questions are asked: without
    one each costs a walk). The source is never written."""
    info = pathlib.Path(repo) / "objects" / "info"
    if (info / "commit-graph").exists() or (info / "commit-graphs").exists():
        return repo
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="owt-corpus-extract-")) / "repo.git"
    print(f"writing a commit-graph in a scratch clone ({scratch})", file=sys.stderr)
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", repo, str(scratch)], check=True)
    subprocess.run(["git", "--git-dir", str(scratch), "commit-graph", "write", "--reachable"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return str(scratch)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="the real repository (a git dir or a checkout)")
    ap.add_argument("--branch", default="master")
    ap.add_argument("--topics", type=int, default=16)
    ap.add_argument("--skip", type=int, default=0, help="most recent first-parent merges to skip")
    ap.add_argument("--max-bytes", type=int, default=100_000, help="files larger than this are left out")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).with_name("git-topics.json")))
    cfg = ap.parse_args()
    repo = cfg.repo
    if (pathlib.Path(repo) / ".git").exists():
        repo = str(pathlib.Path(repo) / ".git")
    repo = with_commit_graph(repo)

    merges = []
    for line in lines(repo, "log", "--first-parent", "--merges", "--format=%H %P%x09%s", cfg.branch):
        ids, subject = line.split("\t", 1)
        ids = ids.split()
        # Topic branches only (`ab/topic-name`), not merges of other
        # repositories' branches (translations, subtrees).
        m = re.match(r"Merge branch '([a-z]+/[^']+)'$", subject)
        if m and len(ids) == 3:
            merges.append((ids[0], ids[1], ids[2], m.group(1)))
    window = merges[cfg.skip:cfg.skip + cfg.topics]
    if len(window) < cfg.topics:
        raise SystemExit(f"only {len(window)} topic merges after skipping {cfg.skip}")
    window.reverse()
    base = window[0][1]
    topics = [(name, tip) for (_, _, tip, name) in window if not is_ancestor(repo, tip, base)]
    print(f"base {base[:12]}, {len(topics)} topics", file=sys.stderr)

    # The topics' own commits (not in the base), with their parents.
    tips = [tip for _, tip in topics]
    own = collections.OrderedDict()
    boundary = set()
    for line in lines(repo, "rev-list", "--topo-order", "--reverse", "--parents", "--boundary", *tips,
                      "^" + base):
        parts = line.split()
        if parts[0].startswith("-"):
            boundary.add(parts[0][1:])
        else:
            own[parts[0]] = parts[1:]
    # The history they stand on: the commits they fork from, the base, and
    # the merge bases of any two of them, until closed.
    history = set(boundary) | {base}
    while True:
        found = set()
        items = sorted(history)
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                if is_ancestor(repo, a, b) or is_ancestor(repo, b, a):
                    continue
                out = subprocess.run(["git", "--git-dir", repo, "merge-base", "--all", a, b],
                                     capture_output=True, text=True)
                for mb in out.stdout.split():
                    if mb not in history:
                        found.add(mb)
        if not found:
            break
        history |= found
    print(f"{len(own)} own commits, {len(history)} history commits", file=sys.stderr)
    # Ancestry among history commits, reduced: each one's parents are its
    # nearest history ancestors.
    hist = sorted(history)
    anc = {h: {g for g in hist if g != h and is_ancestor(repo, g, h)} for h in hist}
    hist_parents = {}
    for h in hist:
        candidates = anc[h]
        hist_parents[h] = sorted(g for g in candidates if not any(g in anc[k] for k in candidates if k != g))
    order = sorted(hist, key=lambda h: len(anc[h]))
    roots = [h for h in order if not hist_parents[h]]
    if len(roots) > 1:
        print(f"note: {len(roots)} history roots", file=sys.stderr)

    # Files: every path a topic's own commit changed (against any of its
    # parents). Paths only the base's history changed cannot be a topic's
    # change, an overlap or a conflict between topics, and are left out.
    commits = order + list(own)
    paths = set()
    for c in own:
        for p in lines(repo, "diff-tree", "-r", "-m", "--no-commit-id", "--name-only", "--no-renames", c):
            paths.add(p)
    # Files longer than --max-lines at any of the commits (translations,
    # generated tables) are left out: the corpus would be mostly them.
    sizes = collections.defaultdict(int)
    for c in commits:
        for entry in git(repo, "ls-tree", "-r", "-l", "-z", c).split(b"\0"):
            if not entry:
                continue
            meta, path = entry.split(b"\t", 1)
            size = meta.split()[3]
            if size != b"-":
                sizes[path.decode()] = max(sizes[path.decode()], int(size))
    long = {p for p in paths if sizes.get(p, 0) > cfg.max_bytes}
    paths = sorted(paths - long)
    print(f"{len(paths)} paths ({len(long)} longer than {cfg.max_bytes} bytes left out)", file=sys.stderr)

    # Contents, as line numbers; blobs stored once, each as a delta against
    # the previous blob of the same path (from git's own diff of the two).
    line_ids = {}
    blob_index = {}
    blobs = []
    last_of_path = {}
    reader = subprocess.Popen(["git", "--git-dir", repo, "cat-file", "--batch"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)

    def read_blob(sha):
        reader.stdin.write(sha.encode() + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        size = int(header[2])
        data = reader.stdout.read(size)
        reader.stdout.read(1)
        return data

    def delta(old_sha, old, new_sha, new):
        """Copy ranges of `old` and runs of new line numbers making `new`,
        from the hunks of `git diff -U0`; None when that does not rebuild it."""
        out = subprocess.run(["git", "--git-dir", repo, "diff", "-U0", "--no-color", "--no-ext-diff",
                              old_sha, new_sha], capture_output=True).stdout
        ops, at = [], 0
        for line in out.split(b"\n"):
            m = re.match(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            if not m:
                continue
            o_start, o_len = int(m.group(1)), int(m.group(2) or 1)
            n_start, n_len = int(m.group(3)), int(m.group(4) or 1)
            o_from = o_start - 1 if o_len else o_start
            n_from = n_start - 1 if n_len else n_start
            if o_from > at:
                ops.append([at, o_from - at])
            if n_len:
                ops.append(["+"] + new[n_from:n_from + n_len])
            at = o_from + o_len
        if at < len(old):
            ops.append([at, len(old) - at])
        rebuilt = apply(old, ops)
        return ops if rebuilt == new else None

    def add_blob(sha, path):
        if sha in blob_index:
            return blob_index[sha]
        data = read_blob(sha)
        if b"\0" in data[:8000]:
            entry = {"binary": len(data), "seed": len(blobs)}
        else:
            ids = [line_ids.setdefault(l, len(line_ids)) for l in data.split(b"\n")]
            entry = {"lines": ids}
            ref = last_of_path.get(path)
            if ref is not None:
                ops = delta(blobs[ref]["sha"], blobs[ref]["lines"], sha, ids)
                if ops is not None:
                    entry = {"lines": ids, "ref": ref, "ops": ops}
            last_of_path[path] = len(blobs)
        entry["sha"] = sha
        blob_index[sha] = len(blobs)
        blobs.append(entry)
        return blob_index[sha]

    out_commits = []
    index = {}
    for c in commits:
        files = {}
        for entry in git(repo, "ls-tree", "-r", "-z", c, "--", *paths).split(b"\0"):
            if not entry:
                continue
            meta, path = entry.split(b"\t", 1)
            mode, kind, sha = meta.decode().split()
            path = path.decode()
            if kind != "blob":
                continue
            files[path] = [add_blob(sha, path), mode]
        parents = hist_parents[c] if c in history else own[c]
        index[c] = len(out_commits)
        out_commits.append({"parents": [index[p] for p in parents], "files": files,
                            "history": c in history})
    reader.stdin.close()
    reader.wait()
    for b in blobs:
        del b["sha"]
        if "ref" in b:
            del b["lines"]
    spec = {
        "about": "generated by bench/corpus/extract.py: commit graph and line-equality structure of "
                 "topic branches of a public repository; no content (each line is a number)",
        "source": {"repository": "https://github.com/git/git", "branch": cfg.branch,
                   "base": base, "topics": [{"name": name, "tip": tip} for name, tip in topics]},
        "base": index[base],
        "topics": [{"name": name, "tip": index[tip]} for name, tip in topics],
        "commits": out_commits,
        "blobs": blobs,
        "distinct_lines": len(line_ids),
        # The number of the empty line (blank lines stay blank).
        "empty_line": line_ids.get(b""),
    }
    text = json.dumps(spec, separators=(",", ":"))
    pathlib.Path(cfg.out).write_text(text)
    print(f"wrote {cfg.out}: {len(out_commits)} commits, {len(blobs)} blobs, {len(line_ids)} distinct lines, "
          f"{len(text) / 1e6:.2f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
