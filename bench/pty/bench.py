#!/usr/bin/env python3
"""owt session host vs tmux: throughput, keystroke echo, host memory.

Usage: bench/pty/bench.py [--owt PATH] [--mb 100] [--echo-rounds 1000] [--json] [--smaps FILE] [--echo-dump FILE]
                          [--no-detached]

Pushes N MB of text through (a) an owt session host to an attached
`owt attach` client and (b) a tmux server to an attached tmux client, both
in real PTYs of 50x200, in one run; prints both times and the ratio. Then
measures keystroke echo round trips (type one byte into the attached
client, wait until the agent's echo comes back out of it; owt's and tmux's
in alternating blocks of 20 keys, both attached at once) and the host's
resident memory (and the tmux server's, at the same point; both split into
anonymous memory and mapped files). The host keeps as much scrollback as
tmux's default (2000 lines). Needs python3, tmux, git and a release owt
(`cargo build --release --bin owt`).

The floor: the same N MB read straight from the agent's PTY by this
script (`cat` on a PTY with the default, cooked, modes, as the agents
above have; nothing between it and the reader), what neither a session
host nor tmux can beat: the kernel's terminal line discipline sets it.

Then (unless --no-detached) the detached flood: the same N MB printed by
an agent with no client attached, timed from the agent's start (a line
written to a FIFO it waits on) to the end marker on the screen model (`owt
peek` of the host; `tmux capture-pane` of the tmux server; both polled
every 5 ms once the agent's `cat` has returned): owt's and tmux's in turns,
each best of `--detached-rounds` (default 1).
"""
import argparse
import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROWS, COLS = 50, 200
MARK = b"BENCH" + b"-DONE"
# Echo rounds per block; owt's and tmux's blocks alternate.
ECHO_BLOCK = 20


def spawn_in_pty(argv, env):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.clear()
        os.environ.update(env)
        os.execvp(argv[0], argv)
    import fcntl, struct, termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    os.kill(pid, 28)  # SIGWINCH
    return pid, fd


def read_until(fd, needle, timeout, total=None):
    """Reads fd until `needle` appears; returns bytes read."""
    deadline = time.time() + timeout
    tail = b""
    n = 0
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            break
        if not data:
            break
        n += len(data)
        tail = (tail + data)[-4096:]
        if needle in tail:
            return n
    raise SystemExit(f"timed out waiting for {needle!r} (read {n} bytes; tail {tail[-200:]!r})")


def pty_floor(data, env):
    """MB/s of `cat data` on a PTY (cooked, as an agent's) read straight
    by this process: the rate no host reading an agent's PTY can beat."""
    pid, fd = spawn_in_pty(["cat", data], env)
    t0 = time.perf_counter()
    n = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the agent's side closed
            break
        if not chunk:
            break
        n += len(chunk)
    seconds = time.perf_counter() - t0
    os.close(fd)
    kill(pid)
    return n / 1e6 / seconds


def drain(fd, quiet=0.3):
    while True:
        r, _, _ = select.select([fd], [], [], quiet)
        if not r:
            return
        try:
            if not os.read(fd, 1 << 16):
                return
        except OSError:
            return


def kill(pid):
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def echo_rtts(fd, rounds):
    out = []
    for i in range(rounds):
        ch = bytes([ord("a") + i % 26])
        t0 = time.perf_counter()
        os.write(fd, ch)
        got = b""
        while ch not in got:
            r, _, _ = select.select([fd], [], [], 5)
            if not r:
                raise SystemExit("echo timed out")
            got += os.read(fd, 4096)
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.005)
    return out


def rss_kb(pid):
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile")):
                k, v = line.split(":")
                vals[k] = int(v.split()[0])
    return vals


def write_smaps(pid, path):
    """The resident KiB of each mapping of `pid`, largest first, with what
    it maps (the binary, a library, [heap], anonymous: thread stacks and
    malloc arenas)."""
    rows, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                cur = {"range": head[0], "perms": head[1], "what": head[5] if len(head) > 5 else "[anon]"}
                rows.append(cur)
            elif head[0] in ("Rss:", "Anonymous:") and cur is not None:
                cur[head[0][:-1]] = int(head[1])
    by_what = {}
    for r in rows:
        key = r["what"]
        total = by_what.setdefault(key, [0, 0, 0])
        total[0] += r.get("Rss", 0)
        total[1] += r.get("Anonymous", 0)
        total[2] += 1
    with open(path, "w") as out:
        out.write("rss_kib anon_kib mappings what\n")
        for what, (rss, anon, n) in sorted(by_what.items(), key=lambda kv: -kv[1][0]):
            out.write(f"{rss} {anon} {n} {what}\n")
        out.write("\nlargest single mappings (rss_kib anon_kib perms range what):\n")
        for r in sorted(rows, key=lambda r: -r.get("Rss", 0))[:12]:
            out.write(f"{r.get('Rss', 0)} {r.get('Anonymous', 0)} {r['perms']} {r['range']} {r['what']}\n")


def flood_script(data, fifo, done):
    """An agent that waits for a line on `fifo`, prints `data` and the
    marker, and then makes `done`."""
    return f"read x < {fifo}; cat {data}; printf 'BENCH''-DONE\\n'; : > {done}; exec sleep 600"


def wait_for_screen(start, done, peek_argv, env, timeout=600):
    """Seconds from `start` until the marker is on the screen `peek_argv`
    prints, polled every 5 ms once `done` exists (the agent's output is
    all written; the screen model may still be behind)."""
    deadline = time.time() + timeout
    while not os.path.exists(done):
        if time.time() > deadline:
            raise SystemExit("the detached agent never finished")
        time.sleep(0.002)
    while time.time() < deadline:
        out = subprocess.run(peek_argv, env=env, capture_output=True).stdout
        if MARK in out:
            return time.perf_counter() - start
        time.sleep(0.005)
    raise SystemExit(f"timed out waiting for the marker on the screen of {peek_argv!r}")


def start_agent(fifo):
    """Starts the agent waiting on `fifo` (opening it waits for the agent
    to open its end); the time it was started at."""
    fd = os.open(fifo, os.O_WRONLY)
    t0 = time.perf_counter()
    os.write(fd, b"go\n")
    os.close(fd)
    return t0


def detached_flood(owt, env, repo, data, tmp):
    """Seconds for an agent printing `data` with no client attached,
    through an owt session host and through a tmux server."""
    fifo, done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
    for path in (fifo, done):
        if os.path.exists(path):
            os.remove(path)
    os.mkfifo(fifo)
    script = flood_script(data, fifo, done)
    subprocess.run(
        [owt, "-C", repo, "__host", "spawn", "--name", "flood", "--rows", str(ROWS), "--cols", str(COLS),
         "--", "bash", "--norc", "-c", script], env=env, check=True, capture_output=True)
    owt_s = wait_for_screen(start_agent(fifo), done, [owt, "-C", repo, "peek", "flood"], env)
    subprocess.run([owt, "-C", repo, "__host", "stop", "flood"], env=env, capture_output=True)
    os.remove(done)
    sock = "owt-flood-%d" % os.getpid()
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run(tmux + ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "bash", "--norc", "-c", script],
                   env=env, check=True)
    tmux_s = wait_for_screen(start_agent(fifo), done, tmux + ["capture-pane", "-p"], env)
    subprocess.run(tmux + ["kill-server"], env=env, capture_output=True)
    os.remove(done)
    os.remove(fifo)
    return owt_s, tmux_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--owt", default=os.path.join(os.path.dirname(__file__), "../../target/release/owt"))
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--echo-rounds", type=int, default=1000)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--smaps", metavar="FILE",
                    help="also write where the session host's resident memory is, per mapping (from "
                         "/proc/PID/smaps at the RSS reading), to FILE")
    ap.add_argument("--echo-dump", metavar="FILE",
                    help="also write every echo round trip (ms, in the order measured) as JSON "
                         '{"owt": [...], "tmux": [...]} to FILE, for the whole distribution')
    ap.add_argument("--no-detached", action="store_true", help="skip the detached flood")
    ap.add_argument("--detached-only", action="store_true", help="only the detached flood")
    ap.add_argument("--detached-rounds", type=int, default=1,
                    help="detached floods of each (owt's and tmux's in turns); the best of each is reported")
    args = ap.parse_args()
    owt = os.path.abspath(args.owt)
    if not os.access(owt, os.X_OK):
        raise SystemExit(f"{owt} not found: cargo build --release --bin owt")
    if not shutil.which("tmux"):
        raise SystemExit("tmux is not installed")

    tmp = tempfile.mkdtemp(prefix="owt-bench")
    env = {
        "PATH": os.environ["PATH"], "HOME": tmp, "TERM": "xterm-256color",
        "OWT_HOME": os.path.join(tmp, "home"), "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null", "LANG": "C.UTF-8",
    }
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    data = os.path.join(tmp, "data.txt")
    line = (b"the quick brown fox jumps over the lazy dog 0123456789 " * 3)[:150] + b"\n"
    with open(data, "wb") as f:
        block = line * 1000
        for _ in range(args.mb * 1024 * 1024 // len(block)):
            f.write(block)
    size = os.path.getsize(data)
    mb = size / 1e6
    detached = None
    if not args.no_detached:
        runs = [detached_flood(owt, env, repo, data, tmp) for _ in range(max(1, args.detached_rounds))]
        detached = (min(r[0] for r in runs), min(r[1] for r in runs))
    if args.detached_only:
        shutil.rmtree(tmp, ignore_errors=True)
        if args.json:
            print(json.dumps({"mb": mb, "owt_detached_s": detached[0], "tmux_detached_s": detached[1]}))
        else:
            print_detached(mb, detached)
        return
    # The agent waits for a line, then writes the file and a marker.
    script = f"read x; cat {data}; printf 'BENCH''-DONE\\n'; exec cat"

    # --- owt ---
    out = subprocess.run(
        [owt, "-C", repo, "__host", "spawn", "--name", "bench", "--rows", str(ROWS), "--cols", str(COLS),
         "--", "bash", "--norc", "-c", script],
        env=env, check=True, capture_output=True, text=True).stdout
    owt_host = json.loads(out)["host_pid"]
    apid, afd = spawn_in_pty([owt, "-C", repo, "attach", "bench"], env)
    drain(afd)
    t0 = time.perf_counter()
    os.write(afd, b"\r")
    read_until(afd, MARK, 600)
    owt_s = time.perf_counter() - t0
    # Memory is read once the output has been quiet for a second (both).
    drain(afd, quiet=1.0)
    if os.environ.get("BENCH_CPU"):
        for name, pid in (("host", owt_host), ("attach", apid)):
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            print(f"cpu {name}: user {int(f[11]) / 100:.2f}s sys {int(f[12]) / 100:.2f}s")
    rss = rss_kb(owt_host)
    # What the host wrote (to the client's terminal, nearly all of it): less
    # than the data when the client fell behind and got redraws instead.
    with open(f"/proc/{owt_host}/io") as f:
        host_written_mb = int(next(l for l in f if l.startswith("wchar:")).split()[1]) / 1e6
    if args.smaps:
        write_smaps(owt_host, args.smaps)
    # Echo comes after both throughput runs (see below): the owt attach stays.

    # --- tmux ---
    sock = "owt-bench-%d" % os.getpid()
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run(tmux + ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "bash", "--norc", "-c", script],
                   env=env, check=True)
    subprocess.run(tmux + ["set", "-g", "status", "off"], env=env, check=True)
    tpid, tfd = spawn_in_pty(tmux + ["attach"], env)
    drain(tfd)
    t0 = time.perf_counter()
    os.write(tfd, b"\r")
    read_until(tfd, MARK, 600)
    tmux_s = time.perf_counter() - t0
    drain(tfd, quiet=1.0)
    tmux_pid = int(subprocess.run(tmux + ["display-message", "-p", "#{pid}"], env=env, check=True,
                                  capture_output=True, text=True).stdout.strip())
    tmux_rss = rss_kb(tmux_pid)
    floor_mb_s = pty_floor(data, env)
    # Echo: each agent is now `cat` on a cooked tty; the tty echoes each
    # key. Both attached at once, measured in alternating blocks, so that
    # what the machine does meanwhile (other work, which CPU sleeps) falls
    # on both alike rather than on whichever went first.
    owt_echo, tmux_echo = [], []
    block = max(1, min(ECHO_BLOCK, args.echo_rounds))
    while len(owt_echo) < args.echo_rounds:
        n = min(block, args.echo_rounds - len(owt_echo))
        owt_echo += echo_rtts(afd, n)
        tmux_echo += echo_rtts(tfd, n)
    if args.echo_dump:
        with open(args.echo_dump, "w") as f:
            json.dump({"owt": owt_echo, "tmux": tmux_echo}, f)
    kill(apid)
    subprocess.run([owt, "-C", repo, "__host", "stop", "bench"], env=env, capture_output=True)
    kill(tpid)
    subprocess.run(tmux + ["kill-server"], env=env, capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        import json as _json
        print(_json.dumps({
            "owt_detached_s": detached[0] if detached else None,
            "tmux_detached_s": detached[1] if detached else None,
            "mb": mb, "owt_s": owt_s, "tmux_s": tmux_s,
            "owt_mb_s": mb / owt_s, "tmux_mb_s": mb / tmux_s, "floor_mb_s": floor_mb_s,
            "host_written_mb": host_written_mb,
            "owt_echo_median_ms": statistics.median(owt_echo),
            "tmux_echo_median_ms": statistics.median(tmux_echo),
            "owt_echo_p99_ms": sorted(owt_echo)[int(len(owt_echo) * 0.99) - 1],
            "tmux_echo_p99_ms": sorted(tmux_echo)[int(len(tmux_echo) * 0.99) - 1],
            "host_rss_mib": rss.get("VmRSS", 0) / 1024, "host_peak_mib": rss.get("VmHWM", 0) / 1024,
            "tmux_rss_mib": tmux_rss.get("VmRSS", 0) / 1024, "tmux_peak_mib": tmux_rss.get("VmHWM", 0) / 1024,
            # Heap and stacks vs mapped files (the binary, libraries).
            "host_anon_mib": rss.get("RssAnon", 0) / 1024, "host_file_mib": rss.get("RssFile", 0) / 1024,
            "tmux_anon_mib": tmux_rss.get("RssAnon", 0) / 1024, "tmux_file_mib": tmux_rss.get("RssFile", 0) / 1024,
        }))
        return
    print(f"throughput ({mb:.0f} MB, {COLS}x{ROWS}):")
    print(f"  owt host -> owt attach : {owt_s:7.2f} s  {mb / owt_s:8.1f} MB/s")
    print(f"  tmux     -> tmux attach: {tmux_s:7.2f} s  {mb / tmux_s:8.1f} MB/s")
    print(f"  ratio owt/tmux         : {tmux_s / owt_s:7.2f}x")
    print(f"  floor (the agent's PTY read straight): {floor_mb_s:8.1f} MB/s")
    print(f"  the host wrote {host_written_mb:.1f} MB (less than {mb:.0f}: the client fell behind, got redraws)")
    for name, rtts in (("owt attach", owt_echo), ("tmux attach", tmux_echo)):
        rtts.sort()
        print(f"echo round trip via {name:11}: median {statistics.median(rtts):.3f} ms"
              f"  p99 {rtts[int(len(rtts) * 0.99) - 1]:.3f} ms  ({len(rtts)} keys)")
    print(f"owt host memory: RSS {rss.get('VmRSS', 0) / 1024:.1f} MiB (anonymous {rss.get('RssAnon', 0) / 1024:.1f}, "
          f"files {rss.get('RssFile', 0) / 1024:.1f}), peak {rss.get('VmHWM', 0) / 1024:.1f} MiB")
    print(f"tmux server memory: RSS {tmux_rss.get('VmRSS', 0) / 1024:.1f} MiB (anonymous "
          f"{tmux_rss.get('RssAnon', 0) / 1024:.1f}, files {tmux_rss.get('RssFile', 0) / 1024:.1f}), "
          f"peak {tmux_rss.get('VmHWM', 0) / 1024:.1f} MiB (same point: after the throughput run)")
    if detached:
        print_detached(mb, detached)


def print_detached(mb, detached):
    owt_s, tmux_s = detached
    print(f"detached flood ({mb:.0f} MB, no client attached):")
    print(f"  owt host   : {owt_s:7.2f} s")
    print(f"  tmux server: {tmux_s:7.2f} s")
    print(f"  ratio owt/tmux (seconds): {owt_s / tmux_s:5.2f}")


if __name__ == "__main__":
    main()
