#!/usr/bin/env python3
"""A session host's CPU time per N MB of output to an attached client.

Usage: bench/pty/cpu.py OWT_BINARY [--mb 50] [--kind plain|colour]
                        [--runs 1] [--perf-record FILE] [--syscalls]

The same stream as bench/pty/bench.py's throughput row (150-character
lines on a 200x50 screen, `cat` in the agent's PTY, `owt attach` in a
PTY of its own, read by this script), but what it reports is the host's
user+sys CPU seconds while the output went through (from /proc, whole
process and per thread: `pty-reader`, `parser`, `client-writer`, ...),
which a busy machine changes far less than the wall-clock MB/s it also
prints; "client_mb" is what reached the client (less than "mb" when the
host dropped output for a client too far behind and sent a redraw). `--kind colour` adds colour escapes to every line.
`--perf-record FILE` records the host meanwhile (`perf record -e
cpu-clock --call-graph dwarf`; read it with `perf report -i FILE
--sort comm,sym`). `--syscalls` counts the host's system calls (all,
and read / write / writev / poll / ppoll / futex / sendto / sendmsg /
ioctl) and context switches per
thread meanwhile (`perf stat --per-thread`), added to the JSON as
"syscalls": {thread: {event: count}}. One JSON object per run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

PLAIN = (b"the quick brown fox jumps over the lazy dog 0123456789 " * 3)[:150] + b"\n"
COLOUR = (b"\x1b[32m+ the quick brown\x1b[m fox \x1b[1;31mjumps\x1b[0m over the lazy dog 0123456789 "
          * 2)[:150] + b"\n"


def thread_ticks(pid):
    """user+sys clock ticks of each of pid's threads, summed by name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


SYSCALL_EVENTS = ["raw_syscalls:sys_enter", "context-switches"] + [
    f"syscalls:sys_enter_{call}"
    for call in ["read", "write", "writev", "poll", "ppoll", "futex", "sendto", "sendmsg", "ioctl"]]


def perf_stat_counts(path):
    """{thread name: {event: count}} from `perf stat -x, --per-thread`."""
    out = {}
    for row in open(path).read().splitlines():
        fields = row.split(",")
        if len(fields) < 4 or not fields[1].isdigit() or int(fields[1]) == 0:
            continue
        thread = fields[0].rsplit("-", 1)[0]
        event = fields[3].split(":")[-1].replace("sys_enter_", "").replace("sys_enter", "all")
        per = out.setdefault(thread, {})
        per[event] = per.get(event, 0) + int(fields[1])
    return out


def run(owt, mb, line, perf_file, syscalls):
    tmp = tempfile.mkdtemp(prefix="owt-cpu")
    env = {"PATH": os.environ["PATH"], "HOME": tmp, "TERM": "xterm-256color",
           "OWT_HOME": os.path.join(tmp, "home"), "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_SYSTEM": "/dev/null", "LANG": "C.UTF-8"}
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    data = os.path.join(tmp, "data.txt")
    with open(data, "wb") as f:
        block = line * 1000
        for _ in range(mb * 1024 * 1024 // len(block)):
            f.write(block)
    size = os.path.getsize(data)
    script = f"read x; cat {data}; printf 'BENCH''-DONE\\n'; exec cat"
    out = subprocess.run([owt, "-C", repo, "__host", "spawn", "--name", "bench", "--rows", str(B.ROWS),
                          "--cols", str(B.COLS), "--", "bash", "--norc", "-c", script],
                         env=env, check=True, capture_output=True, text=True).stdout
    host = json.loads(out)["host_pid"]
    apid, afd = B.spawn_in_pty([owt, "-C", repo, "attach", "bench"], env)
    B.drain(afd)
    perf = None
    if perf_file:
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "--call-graph",
                                 "dwarf,16384", "-o", perf_file, "-p", str(host)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
    stat_file = os.path.join(tmp, "perf-stat.csv")
    if syscalls:
        perf = subprocess.Popen(["perf", "stat", "-x,", "--per-thread", "-o", stat_file, "-e",
                                 ",".join(SYSCALL_EVENTS), "-p", str(host)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    before = thread_ticks(host)
    t0 = time.perf_counter()
    os.write(afd, b"\r")
    got = B.read_until(afd, B.MARK, 600)
    seconds = time.perf_counter() - t0
    B.drain(afd, quiet=0.5)
    after = thread_ticks(host)
    if perf:
        perf.send_signal(2)
        perf.wait()
    counts = perf_stat_counts(stat_file) if syscalls else None
    B.kill(apid)
    subprocess.run([owt, "-C", repo, "__host", "stop", "bench"], env=env, capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
    hz = os.sysconf("SC_CLK_TCK")
    threads = {k: (v - before.get(k, 0)) / hz for k, v in after.items() if v - before.get(k, 0) > 0}
    result = {"mb": round(size / 1e6, 1), "mb_s": round(size / 1e6 / seconds, 1),
              "client_mb": round(got / 1e6, 1),
              "host_cpu_s": round(sum(threads.values()), 2), "threads": threads}
    if counts is not None:
        result["syscalls"] = counts
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("owt")
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--kind", choices=["plain", "colour"], default="plain")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--perf-record", metavar="FILE")
    ap.add_argument("--syscalls", action="store_true")
    args = ap.parse_args()
    if args.syscalls and args.perf_record:
        raise SystemExit("--syscalls and --perf-record: one at a time")
    owt = os.path.abspath(args.owt)
    if not os.access(owt, os.X_OK):
        raise SystemExit(f"{owt} not found: cargo build --release --bin owt")
    line = PLAIN if args.kind == "plain" else COLOUR
    for _ in range(args.runs):
        print(json.dumps(run(owt, args.mb, line, args.perf_record, args.syscalls)), flush=True)


if __name__ == "__main__":
    main()
