"""Shared helpers for the benchmarks: hermetic environments, process cleanup,
generated repositories cached under /tmp, statistics.

Imported by bench/run, bench/spawn.py and bench/lsp/bench.py (stdlib only).
"""

import fcntl
import math
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = pathlib.Path(os.environ.get("OWT_BENCH_CACHE", "/tmp/owt-bench-cache"))
IDLE_AGENT = ROOT / "tests" / "data" / "idle-agent.sh"


def owt_binary():
    return ROOT / "target" / "release" / "owt"


def build_release():
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "owt"], cwd=ROOT, check=True)
    return owt_binary()


def hermetic_env(tmp):
    """Temp HOME and OWT_HOME, no global or system git config."""
    tmp = pathlib.Path(tmp)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp / "home"),
        "OWT_HOME": str(tmp / "owt"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    return env


def git(cwd, *args, env=None, check=True):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check,
                          capture_output=True, text=True).stdout


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


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss_breakdown(pid):
    """VmRSS split (RssAnon, RssFile, RssShmem, in KiB) and the largest
    resident mappings (KiB, name), for telling heap from mapped files."""
    parts = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"):
                parts[key] = int(line.split()[1])
    maps, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                current = fields[5] if len(fields) > 5 else "[anon]"
            elif fields and fields[0] == "Rss:" and int(fields[1]) > 0:
                maps.append((int(fields[1]), current))
    maps.sort(reverse=True)
    parts["top"] = maps[:8]
    parts["groups"] = rss_groups(pid)
    return parts


def rss_groups(pid):
    """Resident KiB by kind: the process's executable ("binary"), shared
    libraries ("libraries"), other mapped files ("other files", e.g. git
    packs), thread stacks ("stacks": the main one and each 8 MiB-ish
    writable anonymous mapping right after a one-page guard), and the rest
    of the anonymous memory ("heap": malloc's arenas and mmaps). A
    file mapping's copied-on-write pages (relocated data) count as heap."""
    exe = os.readlink(f"/proc/{pid}/exe")
    groups = {"binary": 0, "libraries": 0, "other files": 0, "stacks": 0, "heap": 0}
    prev_guard = False
    current = None

    def flush():
        if current is None:
            return
        path, perms, size, guarded, rss, anon = current
        file_kib = rss - anon
        if path == "[stack]" or (not path and guarded and "w" in perms and size > 1024):
            groups["stacks"] += rss
            return
        groups["heap"] += anon
        if not path or path.startswith("["):
            groups["heap"] += file_kib
        elif path == exe:
            groups["binary"] += file_kib
        elif re.search(r"\.so(\.[0-9.]+)?$", path):
            groups["libraries"] += file_kib
        else:
            groups["other files"] += file_kib

    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                flush()
                size = (int(m.group(2), 16) - int(m.group(1), 16)) // 1024
                path = " ".join(fields[5:]) if len(fields) > 5 else ""
                current = [path, fields[1], size, prev_guard, 0, 0]
                prev_guard = fields[1] == "---p" and not path and size == 4
            elif current is not None and fields and fields[0] == "Rss:":
                current[4] = int(fields[1])
            elif current is not None and fields and fields[0] == "Anonymous:":
                current[5] = int(fields[1])
    flush()
    return groups


def file_path(i):
    # 100 files per folder, 100 folders per top folder (as bench/guard does).
    return f"src/m{i // 10000:03d}/d{(i // 100) % 100:02d}/f{i:05d}.rs"


def file_text(i, lines=30):
    return "".join(f"fn item_{i}_{n}() -> u32 {{ {n} }}\n" for n in range(lines))


def agent_config():
    # An explicit limit on running agents: that every session of a benchmark
    # runs must not depend on how much memory a shared machine has left
    # (unset, the limit is what memory holds and later sessions queue).
    return (f'[agent]\ndefault_tool = "fake"\nmax_running = 1000\n'
            f'[tools.fake]\nbinary = "{IDLE_AGENT}"\n')


def trust(owt, repo, env):
    """`owt trust` in `repo`: its `.owt.toml` declares the fake agent, which
    owt runs only from a file the user trusts (in this env's store)."""
    subprocess.run([str(owt), "trust"], cwd=repo, env=env, check=True, capture_output=True)


def generated_repo(n_files, log=print):
    """A repository of `n_files` committed files (one commit, one pack),
    checked out, cached under CACHE keyed by size. The fake agent is
    declared in an untracked, git-excluded `.owt.toml`. Returns the main
    checkout, cleaned (no worktrees, no owt branches, no changes)."""
    base = CACHE / f"repo-{n_files}"
    repo = base / "main"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"repo-{n_files}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = hermetic_env(CACHE / "gen-home")
        if not (base / "ready").exists():
            shutil.rmtree(base, ignore_errors=True)
            repo.mkdir(parents=True)
            started = time.time()
            log(f"generating a {n_files}-file repository in {repo} (cached for later runs)")
            git(repo, "init", "-q", "-b", "main", env=env)
            stream = bytearray()
            for i in range(n_files):
                data = file_text(i).encode()
                stream += b"blob\nmark :%d\ndata %d\n" % (i + 1, len(data)) + data + b"\n"
            stream += b"commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\n"
            msg = b"generated"
            stream += b"data %d\n%s\n" % (len(msg), msg)
            for i in range(n_files):
                stream += b"M 100644 :%d %s\n" % (i + 1, file_path(i).encode())
            gi = b".owt-bench-tmp\n"
            stream += b"M 100644 inline .gitignore\ndata %d\n%s\n\n" % (len(gi), gi)
            subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, env=env, input=bytes(stream), check=True)
            git(repo, "reset", "-q", "--hard", "main", env=env)
            (base / "ready").write_text("")
            log(f"  generated in {time.time() - started:.1f} s")
        clean_repo(repo, env)
    return repo


def release_repo(repo, env, files):
    """After a run: kills what it started with its OWT_HOME and puts the
    generated repository of `files` files back (under its lock: another
    benchmark may share it)."""
    kill_by_owt_home(env["OWT_HOME"])
    with open(CACHE / f"repo-{files}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        clean_repo(repo, env)


def clean_repo(repo, env):
    """Back to the generated state: no worktrees, no owt branches, no changes."""
    worktrees = pathlib.Path(str(repo) + ".worktrees")
    shutil.rmtree(worktrees, ignore_errors=True)
    for line in git(repo, "worktree", "list", "--porcelain", env=env).splitlines():
        if line.startswith("worktree ") and pathlib.Path(line[9:]) != repo:
            shutil.rmtree(line[9:], ignore_errors=True)
    git(repo, "worktree", "prune", env=env)
    for branch in git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads", env=env).split():
        if branch != "main":
            git(repo, "branch", "-q", "-D", branch, env=env)
    git(repo, "checkout", "-q", "main", env=env)
    git(repo, "reset", "-q", "--hard", "main", env=env)
    git(repo, "clean", "-qfdx", "-e", ".owt.toml", env=env)
    (repo / ".owt.toml").write_text(agent_config())
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("/.owt.toml\n")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def percentile(xs, p):
    """Nearest-rank percentile (p in 0..100)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, math.ceil(p / 100 * len(xs)) - 1))
    return xs[k]


def spread(xs):
    """(max - min) / median: how much the runs disagree."""
    if len(xs) < 2:
        return 0.0
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m else 0.0
