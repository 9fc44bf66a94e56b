#!/usr/bin/env python3
"""Agents on remotes at scale: 4 remotes × 16 agents over SSH on loopback.

Needs root (as CI and tests/tests/remote.rs): it creates four local accounts
`owt-bench-r1` … `owt-bench-r4` (idempotently; their homes are emptied at
start) as four "remotes", and runs one Debian sshd on a loopback port for
them (generated host and user keys, public keys only). owt reaches them as
`[remotes.rN]` through `OWT_SSH_COMMAND="ssh -F <generated ssh_config>"`;
the release owt is linked into each account as `~/.local/bin/owt`; each
agent is the scripted `tests/data/remote-agent.sh`.

Phase 1, 4 × 16 agents on a 1k-file repository (`owt remote setup`, then
64 × `owt new --on`):
- board refresh: `owt --json` (the board, 64 remote sessions) — baseline:
  asking each remote for its sessions over a shared SSH connection (`ssh
  rN owt --json list`, the four in turn), what a tool that polls would pay
  per refresh;
- remote write → diagnostic: `owt lsp` in the local checkout with an
  unsaved change of lines 10-12 of one file; each write changes line 11 of
  that file in one remote agent's worktree (round robin over the 64), then
  puts it back; latency from just before the write to the
  `publishDiagnostics` that shows (or clears) that agent's diagnostic —
  baseline: one SSH round trip over a shared connection (`ssh rN true`);
- bridges: CPU time of the four keepers here and the four `owt __bridge
  serve` there, idle (30 s) and during the writes, and their RSS — beside
  the ssh ControlMaster processes of the same connections.

Phase 2, one remote and one agent on a 100k-file repository: 1-line
changes in the agent's worktree; the bytes git moves per snapshot fetch
(counted by bench/remote/count_ssh.py in front of ssh) — baseline: the
bytes of the push that put the repository there (the whole tree).

    sudo python3 bench/remote/bench.py [--agents 16] [--remotes 4] [--writes 40]
                                       [--big-files 100000] [--fetches 10] [--json]
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "lsp"))
import common  # noqa: E402
from bench import Client, agent_text, human_text, session_diags, uri  # noqa: E402

ROOT = common.ROOT
AGENT = ROOT / "tests" / "data" / "remote-agent.sh"
TARGET_REL = common.file_path(7)


def log(msg):
    print(f"[remote {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    out = subprocess.run(argv, **kw)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({out.returncode}): {out.stderr[-2000:]}")
    return out.stdout


# ---------------------------------------------------------------- accounts


def uid_of(name):
    out = subprocess.run(["id", "-u", name], capture_output=True, text=True)
    return int(out.stdout) if out.returncode == 0 else None


def processes_of(uid):
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def account(name):
    """The account `name`, created when missing, with an empty home."""
    if uid_of(name) is None:
        run(["useradd", "-m", "-s", "/bin/sh", "-p", "*", name])
    uid = uid_of(name)
    for pid in processes_of(uid):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    home = pathlib.Path(run(["sh", "-c", f"getent passwd {name} | cut -d: -f6"]).strip())
    for child in home.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    gid = int(run(["id", "-g", name]))

    def put(rel, text, mode=0o644):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        p = path.parent
        while p != home:
            os.chown(p, uid, gid)
            p = p.parent
        path.write_text(text)
        os.chmod(path, mode)
        os.chown(path, uid, gid)
        return path

    put(".gitconfig", "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    agent = put("agents/remote-agent.sh", AGENT.read_text(), 0o755)
    put(".config/owt/config.toml",
        f'[agent]\ndefault_tool = "scripted"\n[tools.scripted]\nbinary = "{agent}"\nprompt_mode = "none"\n')
    put(".local/bin/.keep", "")
    target = home / ".local" / "bin" / "owt"
    try:
        os.link(common.owt_binary(), target)
    except OSError:
        shutil.copy(common.owt_binary(), target)
        os.chown(target, uid, gid)
    return {"name": name, "uid": uid, "gid": gid, "home": home, "put": put}


# ---------------------------------------------------------------- sshd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sshd(tmp, users):
    """One sshd for every account; returns (process, ssh_config path)."""
    d = tmp / "sshd"
    d.mkdir()
    os.makedirs("/run/sshd", exist_ok=True)
    for key in ("host", "user"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)])
    public = (d / "user.pub").read_text()
    for u in users.values():
        u["put"](".ssh/authorized_keys", public, 0o600)
    port = free_port()
    names = " ".join(u["name"] for u in users.values())
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
        "AuthorizedKeysFile .ssh/authorized_keys\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin no\n"
        f"AllowUsers {names}\nPrintMotd no\nMaxStartups 200:30:400\nMaxSessions 400\nLogLevel ERROR\n")
    host_pub = " ".join((d / "host.pub").read_text().split()[:2])
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    config = "".join(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {u['name']}\n  IdentityFile {d / 'user'}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {d / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
        "  LogLevel ERROR\n\n" for alias, u in users.items())
    (d / "ssh_config").write_text(config)
    proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "w"))
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline:
                raise SystemExit("sshd did not start: " + (d / "sshd.log").read_text())
            time.sleep(0.05)
    return proc, d / "ssh_config"


# ---------------------------------------------------------------- owt


def owt(env, cwd, *args, json_out=True, timeout=600):
    argv = [str(common.owt_binary())] + (["--json"] if json_out else []) + list(args)
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"owt {' '.join(args)} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout) if json_out else out.stdout


def cpu_seconds(pid):
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0


def pids_with(words, uid=None):
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if uid is not None and entry.stat().st_uid != uid:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if all(any(w == a for a in argv) for w in words):
            found.append(int(entry.name))
    return found


def bridge_processes(env, users):
    """(keepers here, serves there, ssh masters here)."""
    keepers = [p for p in pids_with(["__bridge", "keep"]) if env_has(p, env["OWT_HOME"])]
    serves = [p for u in users.values() for p in pids_with(["__bridge", "serve"], u["uid"])]
    masters = [p for p in pids_with(["-M", "-N", "-f"]) if env_has(p, env["OWT_HOME"])]
    return keepers, serves, masters


def env_has(pid, owt_home):
    try:
        return f"OWT_HOME={owt_home}".encode() in pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def cpu_of(pids):
    return sum(cpu_seconds(p) for p in pids)


def rss_mib(pids):
    return [common.rss_kib(p) / 1024 for p in pids]


# ---------------------------------------------------------------- phase 1


def phase_scale(args, tmp):
    users = {f"r{i + 1}": account(f"owt-bench-r{i + 1}") for i in range(args.remotes)}
    sshd, ssh_config = start_sshd(tmp, users)
    env = common.hermetic_env(tmp)
    env["OWT_SSH_COMMAND"] = f"ssh -F {ssh_config}"
    result = {}
    try:
        source = common.generated_repo(args.files, log=log)
        repo = tmp / "app"
        run(["git", "clone", "-q", str(source), str(repo)], env=env)
        (repo / ".owt.toml").unlink(missing_ok=True)
        config = pathlib.Path(env["HOME"]) / ".config" / "owt" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text("".join(f'[remotes.{r}]\nhost = "{r}"\npath = "~/src/app"\n\n' for r in users))
        for r in users:
            log(f"owt remote setup {r}")
            owt(env, repo, "remote", "setup", r)
        spawn = []
        for r in users:
            for k in range(args.agents):
                t0 = time.perf_counter()
                owt(env, repo, "new", "--on", r, f"bench agent {k}", "--name", f"a{k}")
                spawn.append((time.perf_counter() - t0) * 1000)
        log(f"{len(spawn)} sessions started (owt new --on median {statistics.median(spawn):.0f} ms)")
        names = [f"{r}:a{k}" for r in users for k in range(args.agents)]
        deadline = time.time() + 300
        while True:
            views = owt(env, repo, "list")["sessions"]
            ready = [v for v in views if v["status"] not in ("starting", "unreachable")]
            if len(ready) == len(names):
                break
            if time.time() > deadline:
                raise SystemExit(f"only {len(ready)} of {len(names)} remote sessions came up")
            time.sleep(0.5)
        result["sessions"] = len(names)
        result["new_on_ms"] = statistics.median(spawn)

        # Board refresh vs asking every remote.
        board, poll = [], []
        for _ in range(args.board_runs):
            t0 = time.perf_counter()
            owt(env, repo)
            board.append((time.perf_counter() - t0) * 1000)
        # The baselines ride a shared connection too (opened first).
        mux = ["ssh", "-F", str(ssh_config), "-o", "ControlMaster=auto", "-o",
               f"ControlPath={tmp}/bench-%C", "-o", "ControlPersist=120"]
        for r in users:
            run(mux + [r, "true"])
        for _ in range(max(3, args.board_runs // 4)):
            t0 = time.perf_counter()
            for r in users:
                run(mux + [r, "~/.local/bin/owt -C ~/src/app --json list"])
            poll.append((time.perf_counter() - t0) * 1000)
        rtt = []
        for _ in range(10):
            for r in users:
                t0 = time.perf_counter()
                run(mux + [r, "true"])
                rtt.append((time.perf_counter() - t0) * 1000)
        result.update(board_ms=statistics.median(board), poll_ms=statistics.median(poll),
                      ssh_rtt_ms=statistics.median(rtt))
        log(f"board {result['board_ms']:.1f} ms, polling the remotes {result['poll_ms']:.1f} ms, "
            f"ssh round trip {result['ssh_rtt_ms']:.1f} ms")

        keepers, serves, masters = bridge_processes(env, users)
        log(f"bridges: {len(keepers)} keepers, {len(serves)} serves, {len(masters)} ssh masters")
        idle_start = (cpu_of(keepers), cpu_of(serves), cpu_of(masters), time.perf_counter())
        time.sleep(args.idle)
        idle_end = (cpu_of(keepers), cpu_of(serves), cpu_of(masters), time.perf_counter())
        wall = idle_end[3] - idle_start[3]
        result["idle_cpu_pct"] = {k: (idle_end[i] - idle_start[i]) / wall * 100
                                  for i, k in enumerate(["keepers", "serves", "masters"])}

        # Remote write → diagnostic.
        file_path = repo / TARGET_REL
        base = file_path.read_text()
        lsp_err = open(tmp / "lsp.stderr", "w")
        client = Client(common.owt_binary(), repo, env, lsp_err)
        client.request("initialize", {
            "processId": os.getpid(), "rootUri": uri(repo),
            "workspaceFolders": [{"uri": uri(repo), "name": "app"}],
            "capabilities": {"window": {"workDoneProgress": True},
                             "textDocument": {"publishDiagnostics": {"relatedInformation": True}}},
            "initializationOptions": {}})
        client.notify("initialized", {})
        client.request("owt/board", None, timeout=120)
        file_uri = uri(file_path)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": file_uri, "languageId": "rust", "version": 1, "text": base}})
        client.notify("textDocument/didChange", {"textDocument": {"uri": file_uri, "version": 2},
                                                  "contentChanges": [{"text": human_text(base)}]})
        time.sleep(3)
        client.drain()
        busy_start = (cpu_of(keepers), cpu_of(serves), cpu_of(masters), time.perf_counter())
        latencies, misses = [], 0
        for n in range(args.writes):
            name = names[(n // 2) % len(names)]
            r, a = name.split(":")
            target = users[r]["home"] / "src" / "app.worktrees" / a / TARGET_REL
            edit = n % 2 == 0
            text = agent_text(base, name, n) if edit else base
            client.drain()
            t0 = time.perf_counter()
            with open(target, "w") as f:
                f.write(text)
            got = client.wait(
                lambda m: (d := session_diags(m, file_uri, name)) is not None and (bool(d) == edit),
                args.deadline, None)
            if got is None:
                misses += 1
                log(f"write {n} ({name}, {'edit' if edit else 'revert'}) not seen within {args.deadline} s")
                continue
            latencies.append((got[0] - t0) * 1000)
        busy_end = (cpu_of(keepers), cpu_of(serves), cpu_of(masters), time.perf_counter())
        wall = busy_end[3] - busy_start[3]
        result["busy_cpu_pct"] = {k: (busy_end[i] - busy_start[i]) / wall * 100
                                  for i, k in enumerate(["keepers", "serves", "masters"])}
        client.shutdown()
        result.update(
            write_p50_ms=common.percentile(latencies, 50), write_p95_ms=common.percentile(latencies, 95),
            write_max_ms=max(latencies) if latencies else None, writes=len(latencies), misses=misses,
            keeper_rss_mib=rss_mib(keepers), serve_rss_mib=rss_mib(serves), master_rss_mib=rss_mib(masters))
        log(f"write → diagnostic p50 {result['write_p50_ms']:.0f} ms, p95 {result['write_p95_ms']:.0f} ms "
            f"({misses} missed); keeper RSS {result['keeper_rss_mib']}, serve RSS {result['serve_rss_mib']}")
    finally:
        common.kill_by_owt_home(env["OWT_HOME"])
        for u in users.values():
            for pid in processes_of(u["uid"]):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        sshd.kill()
        sshd.wait()
    return result


# ---------------------------------------------------------------- phase 2


def phase_fetch(args, tmp):
    users = {"big": account("owt-bench-r1")}
    sshd, ssh_config = start_sshd(tmp, users)
    env = common.hermetic_env(tmp)
    counts = tmp / "ssh-counts.jsonl"
    env["OWT_SSH_COMMAND"] = f"{sys.executable} {HERE / 'count_ssh.py'} {counts} ssh -F {ssh_config}"
    result = {}
    try:
        source = common.generated_repo(args.big_files, log=log)
        repo = tmp / "big"
        log(f"cloning the {args.big_files}-file repository")
        run(["git", "clone", "-q", str(source), str(repo)], env=env)
        (repo / ".owt.toml").unlink(missing_ok=True)
        config = pathlib.Path(env["HOME"]) / ".config" / "owt" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text('[remotes.big]\nhost = "big"\npath = "~/src/big"\n')
        log("owt remote setup big (the whole tree goes there)")
        owt(env, repo, "remote", "setup", "big", timeout=3600)
        pushes = [json.loads(line) for line in counts.read_text().splitlines() if "receive-pack" in line]
        result["tree_bytes"] = sum(p["sent"] + p["received"] for p in pushes)
        owt(env, repo, "new", "--on", "big", "big work", "--name", "w")
        home = users["big"]["home"]
        target = home / "src" / "big.worktrees" / "w" / TARGET_REL

        def fetches():
            files = list(pathlib.Path(env["OWT_HOME"], "run").glob("remote-*-big.json"))
            if not files:
                return 0, None
            s = json.loads(files[0].read_text())
            return s.get("fetches", 0), s

        deadline = time.time() + 600
        while fetches()[0] < 1 or not target.exists():
            if time.time() > deadline:
                raise SystemExit("the first snapshot of the big session was never fetched")
            time.sleep(0.5)
        time.sleep(3)
        base = target.read_text()
        per_fetch, lag = [], []
        for n in range(args.fetches):
            before_fetches = fetches()[0]
            before_lines = len(counts.read_text().splitlines())
            lines = base.splitlines(keepends=True)
            lines[3] = f"fn changed_{n}() -> u32 {{ {n} }}\n"
            t0 = time.time()
            target.write_text("".join(lines))
            deadline = time.time() + 60
            while True:
                count, state = fetches()
                new = [json.loads(line) for line in counts.read_text().splitlines()[before_lines:]
                       if "upload-pack" in line]
                if count > before_fetches and new:
                    break
                if time.time() > deadline:
                    raise SystemExit(f"change {n} was not fetched within 60 s")
                time.sleep(0.05)
            time.sleep(0.3)
            new = [json.loads(line) for line in counts.read_text().splitlines()[before_lines:]
                   if "upload-pack" in line]
            per_fetch.extend(p["sent"] + p["received"] for p in new)
            lag.append((state["last_snapshot_fetched_at"] / 1000) - t0)
        result.update(fetch_bytes=per_fetch, fetch_bytes_median=statistics.median(per_fetch),
                      write_to_fetched_ms=statistics.median(lag) * 1000)
        log(f"bytes per snapshot fetch: median {result['fetch_bytes_median']:.0f} "
            f"(of {per_fetch}); the tree: {result['tree_bytes']} bytes")
    finally:
        common.kill_by_owt_home(env["OWT_HOME"])
        for u in users.values():
            for pid in processes_of(u["uid"]):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        sshd.kill()
        sshd.wait()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remotes", type=int, default=4)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=40)
    ap.add_argument("--board-runs", type=int, default=20)
    ap.add_argument("--idle", type=float, default=30)
    ap.add_argument("--deadline", type=float, default=10)
    ap.add_argument("--big-files", type=int, default=100_000)
    ap.add_argument("--fetches", type=int, default=10)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/remote/bench.py creates local accounts and runs sshd: run it as root")
    if not common.owt_binary().exists():
        common.build_release()
    result = {}
    with tempfile.TemporaryDirectory(prefix="owt-remote-bench-") as tmp:
        (pathlib.Path(tmp) / "scale").mkdir()
        result["scale"] = phase_scale(args, pathlib.Path(tmp) / "scale")
    if not args.skip_big:
        with tempfile.TemporaryDirectory(prefix="owt-remote-bench-") as tmp:
            (pathlib.Path(tmp) / "fetch").mkdir()
            result["fetch"] = phase_fetch(args, pathlib.Path(tmp) / "fetch")
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
