#!/usr/bin/env python3
"""bench/control_plane.py: the control plane (`owt` in a terminal) with N
sessions of the idle agent, in a real tmux pane.

- status change → screen: an agent is told `exit` (`owt send`); from the
  moment that command returned, how long until the pane shows the row
  `exited` (tmux capture-pane polled every 5 ms), next to how long a loop
  of `owt --json list` (as fast as it answers, started at the same moment)
  takes to say it. One change per trial, a different session each time.
- redraw: each redraw's time as the control plane logs it (`-v`: debug
  lines in $OWT_HOME/logs/control-plane.log), median and max over the run.
- idle CPU: the control plane's user + system CPU over `--idle` seconds
  with nothing happening, in percent of one core.

    bench/control_plane.py [--sessions 64] [--trials 5] [--idle 10] [--json] [--owt PATH]
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, check=True).stdout


def cpu_ticks(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def row_says(screen, name, word):
    for line in screen.splitlines():
        left = line.split("│")[0]
        if name in left.split() and word in left:
            return True
    return False


def list_says(owt, repo, env, name, status, stop):
    """Polls `owt --json list` until `name` is `status`; when, or None."""
    while not stop.is_set():
        out = subprocess.run([str(owt), "--json", "list"], cwd=repo, env=env, capture_output=True, text=True)
        try:
            for s in json.loads(out.stdout)["sessions"]:
                if s["name"] == name and s["status"] == status:
                    return time.monotonic()
        except (ValueError, KeyError):
            pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--idle", type=float, default=10.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--owt", help="the owt binary (default: target/release/owt)")
    args = ap.parse_args()
    owt = pathlib.Path(args.owt).resolve() if args.owt else common.owt_binary()
    with tempfile.TemporaryDirectory(prefix="owt-bench-cp-") as tmp:
        env = common.hermetic_env(tmp)
        repo = pathlib.Path(tmp) / "repo"
        repo.mkdir()
        common.git(repo, "init", "-q", "-b", "main", env=env)
        (repo / "README.md").write_text("# bench\n")
        common.git(repo, "add", ".", env=env)
        common.git(repo, "commit", "-qm", "init", env=env)
        (repo / ".owt.toml").write_text(common.agent_config().replace(
            "max_running = 1000\n", "max_running = 1000\nmin_free_memory = \"0 B\"\n"))
        (repo / ".git" / "info" / "exclude").write_text("/.owt.toml\n")
        common.trust(owt, repo, env)
        sock = str(pathlib.Path(tmp) / "tmux.sock")
        try:
            names = []
            for i in range(args.sessions):
                out = subprocess.run([str(owt), "--json", "new", f"task number {i}"], cwd=repo, env=env,
                                     capture_output=True, text=True, check=True)
                names.append(json.loads(out.stdout)["session"]["name"])
            result = measure(owt, repo, env, sock, names, args)
        finally:
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
            common.kill_by_owt_home(env["OWT_HOME"])
    if args.json:
        print(json.dumps(result))
    else:
        print(result)


def measure(owt, repo, env, sock, names, args):
    launch = " ".join([f"{k}='{v}'" for k, v in env.items()])
    tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "cp", "-x", "200", "-y", "80",
         "-c", str(repo), f"exec env {launch} '{owt}' -v")
    pid = int(tmux(sock, "list-panes", "-t", "cp", "-F", "#{pane_pid}").strip())
    deadline = time.monotonic() + 60
    while not all(row_says(tmux(sock, "capture-pane", "-p", "-t", "cp"), n, "") for n in names[:3]):
        if time.monotonic() > deadline:
            raise SystemExit("the control plane never showed the sessions")
        time.sleep(0.1)
    time.sleep(3)
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    time.sleep(args.idle)
    idle_pct = 100.0 * (cpu_ticks(pid) - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)
    screen_ms, list_ms = [], []
    for name in names[:args.trials]:
        stop = threading.Event()
        seen_by_list = {}
        subprocess.run([str(owt), "send", name, "exit"], cwd=repo, env=env, capture_output=True, check=True)
        sent = time.monotonic()
        poller = threading.Thread(target=lambda: seen_by_list.setdefault(
            "at", list_says(owt, repo, env, name, "exited", stop)))
        poller.start()
        deadline = sent + 30
        while not row_says(tmux(sock, "capture-pane", "-p", "-t", "cp"), name, "exited"):
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} never showed exited")
            time.sleep(0.005)
        screen_ms.append((time.monotonic() - sent) * 1000)
        poller.join(30)
        stop.set()
        if seen_by_list.get("at"):
            list_ms.append((seen_by_list["at"] - sent) * 1000)
    log = pathlib.Path(env["OWT_HOME"]) / "logs" / "control-plane.log"
    # The log's fields may be coloured (stderr was a terminal when logging began).
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text())
    draws = [int(m) / 1000 for m in re.findall(r"micros=(\d+)", text)]
    tmux(sock, "send-keys", "-t", "cp", "q")
    return {
        "sessions": len(names),
        "screen_ms": screen_ms,
        "list_ms": list_ms,
        "screen_median_ms": statistics.median(screen_ms),
        "list_median_ms": statistics.median(list_ms) if list_ms else None,
        "redraw_median_ms": statistics.median(draws) if draws else None,
        "redraw_max_ms": max(draws) if draws else None,
        "redraws": len(draws),
        "idle_cpu_pct": idle_pct,
    }


if __name__ == "__main__":
    main()
