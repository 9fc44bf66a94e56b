#!/usr/bin/env python3
"""owt lsp: agent write -> publishDiagnostics latency, over stdio like an editor.

Setup (hermetic: temp HOME and OWT_HOME, GIT_CONFIG_GLOBAL=/dev/null): a
generated repository of --files files (cached under /tmp/owt-bench-cache,
keyed by size), the fake agent tests/data/idle-agent.sh declared in the
repository's .owt.toml, and --sessions sessions made with `owt new` (each a
worktree of the whole repository, a session host and an idle agent). The
`owt new` times and `git worktree add` on the same repository are reported
too (the spawn row on a large repository).

Each run starts the release `owt lsp` in the main checkout, initializes it
(a Neovim-like client), waits until the Conflict Guard is up (the answer to
`owt/board`), opens a file and changes lines 10-12 in the buffer without
saving (the human's overlap), lets the server idle and reads its RSS. Then
--writes agent writes, round-robin over the sessions, each into that
session's copy of the file: an edit of line 11 (overlaps the human's
change), then the revert, alternately. Latency: from just before the
write to the first publishDiagnostics for the file that shows it (a
diagnostic from that session appears; it disappears for the revert).
Baseline, same run, same change: `git status --porcelain` in that worktree
(the time git takes to notice it). After the writes the server idles again
and its RSS is read (the idle RSS reported).

    python3 bench/lsp/bench.py [--files 50000] [--sessions 16] [--writes 40]
                               [--runs 3] [--list-calls N] [--json]

With --list-calls N, each run also times N `owt list` against N
`git worktree list` in the main checkout (alternating, every session idle).
The idle hosts' memory is read once per run (the median reading reported).
"""

import argparse
import fcntl
import json
import os
import pathlib
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import common  # noqa: E402

TARGET_FILE = 7  # src/m000/d00/f00007.rs
HUMAN_LINES = (9, 10, 11)  # 0-based: lines 10-12
AGENT_LINE = 10  # 0-based: line 11


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Client:
    """A minimal LSP client: a reader thread timestamps every message on
    arrival and answers the server's requests the way Neovim would."""

    def __init__(self, owt, root, env, stderr):
        self.proc = subprocess.Popen([str(owt), "lsp"], cwd=root, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr)
        self.lock = threading.Lock()
        self.messages = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _send(self, obj):
        body = json.dumps(obj).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put((time.perf_counter(), None))
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            now = time.perf_counter()
            msg = json.loads(body)
            if "method" in msg and "id" in msg:
                result = {"success": True} if msg["method"] == "window/showDocument" else None
                if msg["method"] in ("window/workDoneProgress/create", "window/showDocument",
                                     "client/registerCapability"):
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                else:
                    self._send({"jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": "method not found"}})
            self.messages.put((now, msg))

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=600):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout, f"response to {method}")[1]
        if "error" in msg:
            raise SystemExit(f"{method} failed: {msg['error']}")
        return msg.get("result")

    def wait(self, pred, timeout, what):
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None if what is None else self._timeout(what)
            try:
                at, msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise SystemExit(f"owt lsp closed its output while waiting for {what}")
            if pred(msg):
                return at, msg

    def _timeout(self, what):
        raise SystemExit(f"timed out waiting for {what}")

    def drain(self):
        while True:
            try:
                self.messages.get_nowait()
            except queue.Empty:
                return

    def shutdown(self):
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def uri(path):
    return "file://" + str(path)


def human_text(base):
    lines = base.splitlines(keepends=True)
    for i in HUMAN_LINES:
        lines[i] = f"// the human's unsaved edit of line {i + 1}\n"
    return "".join(lines)


def agent_text(base, session, n):
    lines = base.splitlines(keepends=True)
    lines[AGENT_LINE] = f"// {session} write {n}\n"
    return "".join(lines)


def write_in_place(path, text):
    # As an agent's file tool does: truncate and write the same inode.
    with open(path, "w") as f:
        f.write(text)


def session_diags(msg, file_uri, session):
    if msg.get("method") != "textDocument/publishDiagnostics" or msg["params"]["uri"] != file_uri:
        return None
    return [d for d in msg["params"]["diagnostics"]
            if d.get("source") == "owt" and (d.get("data") or {}).get("session") == session]


WATCHED_LOG = "warn,owt_guard::watch=debug"
WATCHED_LINE = b"conflict guard: watches made in"


def wait_watched(stderr_path, started, deadline_s=900):
    """Seconds from `started` until `owt lsp`'s watcher logged that its
    watches are made and every checkout read again (polled every 10 ms)."""
    deadline = time.perf_counter() + deadline_s
    while WATCHED_LINE not in pathlib.Path(stderr_path).read_bytes():
        if time.perf_counter() > deadline:
            raise SystemExit(f"owt lsp did not watch the worktrees within {deadline_s} s (see {stderr_path})")
        time.sleep(0.01)
    return time.perf_counter() - started


def one_run(owt, repo, env, sessions, rel, writes, tmp, run_no, hold=0):
    file_path = repo / rel
    file_uri = uri(file_path)
    base = file_path.read_text()
    stderr_path = tmp / f"lsp-stderr-{run_no}.log"
    stderr = open(stderr_path, "wb")
    # The watcher says (debug) when its watches are made and caught up.
    client = Client(owt, repo, dict(env, RUST_LOG=WATCHED_LOG), stderr)
    try:
        started = time.perf_counter()
        client.request("initialize", {
            "processId": os.getpid(),
            "rootUri": uri(repo),
            "workspaceFolders": [{"uri": uri(repo), "name": "repo"}],
            "capabilities": {
                "window": {"workDoneProgress": True, "showDocument": {"support": True}},
                "textDocument": {"publishDiagnostics": {"relatedInformation": True},
                                 "synchronization": {"didSave": True}},
            },
            "initializationOptions": {},
        })
        client.notify("initialized", {})
        # Handled after `initialized` on the server's owner thread: answered
        # once the Conflict Guard has computed (its diagnostics published);
        # its watcher makes the watches after, on its own thread.
        board = client.request("owt/board", None)
        ready_s = time.perf_counter() - started
        # The writes are timed once every worktree is watched (one written
        # before is caught up only then).
        watched_s = wait_watched(stderr_path, started)
        live = [s for lane in board.get("lanes", []) for s in lane.get("sessions", [])] \
            if isinstance(board, dict) else []
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": file_uri, "languageId": "rust", "version": 1, "text": base}})
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": file_uri, "version": 2},
            "contentChanges": [{"text": human_text(base)}]})
        time.sleep(2.0)
        rss_before = common.rss_kib(client.proc.pid)
        client.drain()

        lat, git_lat, misses = [], [], 0
        rng = random.Random(run_no)
        warmup = min(4, writes)
        for n in range(warmup + writes):
            s = sessions[(n // 2) % len(sessions)]
            overlap = n % 2 == 0
            wt_file = pathlib.Path(s["worktree"]) / rel
            text = agent_text(base, s["name"], n) if overlap else base
            client.drain()
            t0 = time.perf_counter()
            write_in_place(wt_file, text)

            def shows_it(msg, name=s["name"], overlap=overlap):
                d = session_diags(msg, file_uri, name)
                if d is None:
                    return False
                if overlap:
                    return any(x["range"]["start"]["line"] <= AGENT_LINE <= x["range"]["end"]["line"]
                               for x in d)
                return not d

            got = client.wait(shows_it, 10.0, None)
            latency = (got[0] - t0) * 1000 if got else 10_000.0
            g0 = time.perf_counter()
            status = subprocess.run(["git", "status", "--porcelain"], cwd=s["worktree"], env=env,
                                    capture_output=True, text=True, check=True).stdout
            git_ms = (time.perf_counter() - g0) * 1000
            if overlap and rel not in status:
                raise SystemExit(f"git status did not see the write: {status!r}")
            if n >= warmup:
                lat.append(latency)
                git_lat.append(git_ms)
                misses += got is None
            time.sleep(rng.uniform(0.05, 0.25))
        time.sleep(2.0)
        rss_after = common.rss_kib(client.proc.pid)
        breakdown = common.rss_breakdown(client.proc.pid)
        log(f"  idle RSS breakdown (KiB): {breakdown}")
        if hold:
            log(f"  holding owt lsp (pid {client.proc.pid}) idle for {hold} s")
            time.sleep(hold)
        return {
            "ready_s": ready_s,
            "watched_s": watched_s,
            "sessions_on_board": len(live),
            "rss_before_kib": rss_before,
            "rss_after_kib": rss_after,
            "rss_groups_after_kib": breakdown["groups"],
            "threads_after": breakdown.get("Threads"),
            "latencies_ms": lat,
            "git_status_ms": git_lat,
            "misses": misses,
        }
    finally:
        client.shutdown()
        stderr.close()


def setup(owt, repo, env, args):
    """Spawn on a large repository: git worktree add (baseline), then the
    sessions with owt new."""
    git_add_s = []
    for i in range(args.spawn_baseline):
        wt = pathlib.Path(f"{repo}.worktrees") / f"git-baseline-{i}"
        t0 = time.perf_counter()
        common.git(repo, "worktree", "add", "-q", "-b", f"baseline-{i}", str(wt), "main", env=env)
        git_add_s.append(time.perf_counter() - t0)
        common.git(repo, "worktree", "remove", "--force", str(wt), env=env)
        common.git(repo, "branch", "-q", "-D", f"baseline-{i}", env=env)
    sessions, new_s = [], []
    common.trust(owt, repo, env)
    log(f"creating {args.sessions} sessions with owt new on {args.files} files")
    for i in range(args.sessions):
        t0 = time.perf_counter()
        out = subprocess.run([str(owt), "--json", "new", f"bench agent {i}", "--name", f"agent-{i:02d}"],
                             cwd=repo, env=env, capture_output=True, text=True)
        new_s.append(time.perf_counter() - t0)
        if out.returncode != 0:
            raise SystemExit(f"owt new failed: {out.stderr}")
        view = json.loads(out.stdout)["session"]
        sessions.append({"name": view["name"], "worktree": view["worktree"]})
    return git_add_s, new_s, sessions


def idle_hosts(env, n, samples=1):
    """`samples` readings of the idle hosts' memory (each against a new
    tmux server), a second apart."""
    time.sleep(2.0)
    out = []
    for i in range(samples):
        if i:
            time.sleep(1.0)
        out.append(hosts_memory(env, n))
    return out


def list_vs_git(owt, repo, env, calls):
    """`owt list` and `git worktree list` in the main checkout, alternating,
    `calls` of each: their medians in ms."""
    owt_ms, git_ms = [], []
    for _ in range(calls):
        for argv, out in (([str(owt), "list"], owt_ms), (["git", "worktree", "list"], git_ms)):
            t0 = time.perf_counter()
            subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
            out.append((time.perf_counter() - t0) * 1000)
    return common.median(owt_ms), common.median(git_ms)


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def private_kib(pid):
    """A process's memory beyond its share of its own executable's pages:
    its PSS less, over the mappings of the file /proc/PID/exe names, their
    file pages' share (Pss - Anonymous; the anonymous pages of a file
    mapping, relocated data, are the process's own and stay in). What one
    more idle session host costs when the owt binary's pages are already
    in memory for the others: heap, stacks, relocated data, and its share
    of libraries and the store's shared memory."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        pss = binary_file = 0
        in_exe = False
        current = {}
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                fields = line.split()
                if not fields:
                    continue
                if not fields[0].endswith(":"):
                    if in_exe:
                        binary_file += current.get("Pss", 0) - current.get("Anonymous", 0)
                    in_exe = len(fields) >= 6 and fields[5] == exe
                    current = {}
                elif len(fields) >= 2 and fields[1].isdigit():
                    current[fields[0][:-1]] = int(fields[1])
                    if fields[0] == "Pss:":
                        pss += int(fields[1])
        if in_exe:
            binary_file += current.get("Pss", 0) - current.get("Anonymous", 0)
        return pss - binary_file
    except OSError:
        return 0


def hosts_memory(env, n):
    """Memory to keep the sessions' idle agents in terminals: the owt
    session hosts (one process per session) vs one tmux server with as many
    windows running the same agent. PSS, so shared pages count once."""
    needle = f"OWT_HOME={env['OWT_HOME']}".encode()
    hosts = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"__host" in argv and needle in (entry / "environ").read_bytes().split(b"\0"):
                hosts.append(int(entry.name))
        except OSError:
            pass
    hosts = [pid for pid in hosts if not any(
        str(other) == open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] for other in hosts)]
    rss = sorted(common.rss_kib(pid) for pid in hosts)
    private = sorted(private_kib(pid) for pid in hosts)
    owt_pss = sum(pss_kib(pid) for pid in hosts)
    sock = f"owt-bench-lsp-{os.getpid()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    try:
        subprocess.run(tmux + ["new-session", "-d", "-x", "120", "-y", "40", str(common.IDLE_AGENT)],
                       env=env, check=True)
        for _ in range(n - 1):
            subprocess.run(tmux + ["new-window", "-d", str(common.IDLE_AGENT)], env=env, check=True)
        time.sleep(1.0)
        pid = int(subprocess.run(tmux + ["display-message", "-p", "#{pid}"], env=env, check=True,
                                 capture_output=True, text=True).stdout.strip())
        tmux_pss, tmux_rss = pss_kib(pid), common.rss_kib(pid)
    finally:
        subprocess.run(tmux + ["kill-server"], env=env, capture_output=True)
    return {
        "hosts": len(hosts),
        "host_rss_median_mib": common.median(rss) / 1024 if rss else float("nan"),
        "host_private_median_mib": common.median(private) / 1024 if private else float("nan"),
        "host_private_mib": [p / 1024 for p in private],
        "hosts_pss_total_mib": owt_pss / 1024,
        "tmux_server_pss_mib": tmux_pss / 1024,
        "tmux_server_rss_mib": tmux_rss / 1024,
    }


def teardown(repo, env, files, trash):
    """Stops the hosts and agents; the session worktrees (files x sessions
    files) go to `trash` when given (deleted later, out of the measured
    time), else are deleted now; the repository is cleaned for reuse."""
    common.kill_by_owt_home(env["OWT_HOME"])
    with open(common.CACHE / f"repo-{files}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        worktrees = pathlib.Path(f"{repo}.worktrees")
        if worktrees.exists():
            if trash:
                pathlib.Path(trash).mkdir(parents=True, exist_ok=True)
                worktrees.rename(pathlib.Path(trash) / f"lsp-{os.getpid()}-{time.time_ns()}")
            else:
                subprocess.run(["rm", "-rf", str(worktrees)], check=False)
        common.clean_repo(repo, env)


STATE_KEYS = ("repo", "files", "env", "sessions", "tmp", "owt_new_s", "git_worktree_add_s")


def read_state(path):
    """The sessions an earlier `--keep STATE` left running, as it wrote
    them; a clear error (and nothing touched) for any other file."""
    try:
        state = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: not a state file of bench/lsp/bench.py --keep ({e})")
    if not isinstance(state, dict) or any(k not in state for k in STATE_KEYS):
        raise SystemExit(f"{path}: not a state file of bench/lsp/bench.py --keep "
                         f"(it needs {', '.join(STATE_KEYS)})")
    return state


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--writes", type=int, default=40, help="measured writes per run (half edits, half reverts)")
    ap.add_argument("--runs", type=int, default=3, help="owt lsp server starts, each with --writes writes")
    ap.add_argument("--spawn-baseline", type=int, default=2, help="git worktree add rounds on the same repo")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--hold", type=float, default=0,
                    help="keep the idle server running this many seconds after the last run (to inspect it)")
    ap.add_argument("--trash", help="move the session worktrees here instead of deleting them")
    ap.add_argument("--keep", metavar="STATE", help="leave the sessions running; write their description here")
    ap.add_argument("--reuse", metavar="STATE", help="measure with the sessions of an earlier --keep")
    ap.add_argument("--teardown", metavar="STATE", help="stop and remove the sessions of an earlier --keep")
    ap.add_argument("--verbose", action="store_true", help="print every latency")
    ap.add_argument("--list-calls", type=int, default=0,
                    help="per run, this many `owt list` and `git worktree list` in the main checkout, alternating, "
                         "with every session idle (before the LSP starts)")
    args = ap.parse_args()
    owt = pathlib.Path(args.owt).resolve()
    if not os.access(owt, os.X_OK):
        raise SystemExit(f"{owt} not found: cargo build --release --bin owt")

    rel = common.file_path(TARGET_FILE)
    if args.teardown:
        state = read_state(args.teardown)
        teardown(pathlib.Path(state["repo"]), state["env"], state["files"], args.trash)
        shutil.rmtree(state["tmp"], ignore_errors=True)
        pathlib.Path(args.teardown).unlink()
        return
    if args.reuse:
        state = read_state(args.reuse)
        repo, env, sessions = pathlib.Path(state["repo"]), state["env"], state["sessions"]
        new_s, git_add_s = state["owt_new_s"], state["git_worktree_add_s"]
        hosts_runs = idle_hosts(env, len(sessions), args.runs)
        lists = [list_vs_git(owt, repo, env, args.list_calls) for _ in range(args.runs if args.list_calls else 0)]
        runs = [one_run(owt, repo, env, sessions, rel, args.writes, pathlib.Path(state["tmp"]), r,
                        args.hold if r == args.runs - 1 else 0)
                for r in range(args.runs)]
    else:
        repo = common.generated_repo(args.files, log=log)
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="owt-bench-lsp-"))
        env = common.hermetic_env(tmp)
        keep = False
        try:
            git_add_s, new_s, sessions = setup(owt, repo, env, args)
            hosts_runs = idle_hosts(env, args.sessions, args.runs)
            lists = []
            for r in range(args.runs if args.list_calls else 0):
                log(f"run {r + 1}/{args.runs}: {args.list_calls} x owt list, git worktree list")
                lists.append(list_vs_git(owt, repo, env, args.list_calls))
            if args.keep:
                pathlib.Path(args.keep).write_text(json.dumps({
                    "repo": str(repo), "files": args.files, "env": env, "sessions": sessions, "tmp": str(tmp),
                    "owt_new_s": new_s, "git_worktree_add_s": git_add_s}))
                keep = True
            runs = []
            for r in range(args.runs):
                log(f"run {r + 1}/{args.runs}: owt lsp, {args.writes} writes")
                runs.append(one_run(owt, repo, env, sessions, rel, args.writes, tmp, r,
                                    args.hold if r == args.runs - 1 else 0))
        finally:
            if not keep:
                teardown(repo, env, args.files, args.trash)
                shutil.rmtree(tmp, ignore_errors=True)
        if not runs:
            return
    p50s = [common.percentile(r["latencies_ms"], 50) for r in runs]
    p95s = [common.percentile(r["latencies_ms"], 95) for r in runs]
    g50s = [common.percentile(r["git_status_ms"], 50) for r in runs]
    g95s = [common.percentile(r["git_status_ms"], 95) for r in runs]
    rss = [r["rss_after_kib"] / 1024 for r in runs]
    hosts = sorted(hosts_runs, key=lambda h: h["hosts_pss_total_mib"])[len(hosts_runs) // 2]
    result = {
        "files": args.files,
        "sessions": args.sessions,
        "writes_per_run": args.writes,
        "runs": args.runs,
        "p50_ms": common.median(p50s), "p50_runs": p50s,
        "p95_ms": common.median(p95s), "p95_runs": p95s,
        "git_status_p50_ms": common.median(g50s), "git_status_p50_runs": g50s,
        "git_status_p95_ms": common.median(g95s), "git_status_p95_runs": g95s,
        "idle_rss_mib": common.median(rss), "idle_rss_runs_mib": rss,
        "idle_rss_before_writes_mib": [r["rss_before_kib"] / 1024 for r in runs],
        "idle_rss_groups_runs_kib": [r["rss_groups_after_kib"] for r in runs],
        "idle_threads_runs": [r["threads_after"] for r in runs],
        "misses": sum(r["misses"] for r in runs),
        "ready_s": [r["ready_s"] for r in runs],
        "watched_s": [r["watched_s"] for r in runs],
        "sessions_on_board": [r["sessions_on_board"] for r in runs],
        "owt_new_s": new_s, "owt_new_median_s": common.median(new_s),
        "git_worktree_add_s": git_add_s, "hosts": hosts, "git_worktree_add_median_s": common.median(git_add_s),
        "hosts_pss_runs_mib": [h["hosts_pss_total_mib"] for h in hosts_runs],
        "tmux_pss_runs_mib": [h["tmux_server_pss_mib"] for h in hosts_runs],
        "host_private_runs_mib": [h["host_private_median_mib"] for h in hosts_runs],
        "owt_list_runs_ms": [o for o, _ in lists], "git_worktree_list_runs_ms": [g for _, g in lists],
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"owt lsp, {args.files} files, {args.sessions} sessions, {args.runs} runs x {args.writes} writes")
    print(f"  write -> publishDiagnostics: p50 {result['p50_ms']:.1f} ms  p95 {result['p95_ms']:.1f} ms"
          f"   (per run p50 {[round(x, 1) for x in p50s]}, p95 {[round(x, 1) for x in p95s]}; "
          f"{result['misses']} missed in 10 s)")
    print(f"  git status --porcelain (same change): p50 {result['git_status_p50_ms']:.1f} ms"
          f"  p95 {result['git_status_p95_ms']:.1f} ms")
    print(f"  idle RSS after the writes: {result['idle_rss_mib']:.1f} MiB (runs {[round(x, 1) for x in rss]});"
          f" before: {[round(x, 1) for x in result['idle_rss_before_writes_mib']]}")
    print(f"  of it (KiB, per run): {result['idle_rss_groups_runs_kib']}; threads {result['idle_threads_runs']}")
    print(f"  guard ready after initialize: {[round(x, 2) for x in result['ready_s']]} s;"
          f" every worktree watched: {[round(x, 2) for x in result['watched_s']]} s")
    print(f"  owt new (median of {len(new_s)}): {result['owt_new_median_s']:.2f} s;"
          f" git worktree add: {result['git_worktree_add_median_s']:.2f} s")
    print(f"  {hosts['hosts']} idle session hosts: RSS median {hosts['host_rss_median_mib']:.1f} MiB each,"
          f" PSS total {hosts['hosts_pss_total_mib']:.1f} MiB; tmux server with {args.sessions} windows of the"
          f" same agent: PSS {hosts['tmux_server_pss_mib']:.1f} MiB (RSS {hosts['tmux_server_rss_mib']:.1f})")
    print(f"  idle session host, private memory beyond the binary's pages: median"
          f" {hosts['host_private_median_mib']:.2f} MiB (each: {[round(x, 2) for x in hosts['host_private_mib']]})")
    if lists:
        print(f"  owt list: {[round(o, 1) for o, _ in lists]} ms; git worktree list: "
              f"{[round(g, 1) for _, g in lists]} ms (medians of {args.list_calls} per run)")
    print("  targets: p95 <= 100 ms, idle RSS <= 20 MiB, idle host private memory <= 1 MiB")
    if args.verbose:
        for i, r in enumerate(runs):
            print(f"  run {i + 1} latencies (ms): {[round(x) for x in r['latencies_ms']]}")
            print(f"  run {i + 1} git status (ms): {[round(x) for x in r['git_status_ms']]}")


if __name__ == "__main__":
    main()
