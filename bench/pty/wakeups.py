#!/usr/bin/env python3
"""Which threads wake per keystroke: `perf stat --per-thread` (task-clock,
context switches, migrations) of the session host and the attach client
(owt) or the tmux server and client, during 400 echoes.

Usage: bench/pty/wakeups.py OWT_BINARY perf|strace owt|tmux   (PIN=CPU to
pin the host's threads). Writes perf-owt.txt / perf-tmux.txt (or
strace-*.txt) in the current folder and prints the echo median.
"""
import sys, os, json, subprocess, tempfile, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B
owt = sys.argv[1]; mode = sys.argv[2]  # perf or strace
tmp = tempfile.mkdtemp(prefix="owt-probe")
env = {"PATH": os.environ["PATH"], "HOME": tmp, "TERM": "xterm-256color", "OWT_HOME": os.path.join(tmp, "home"),
       "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", "LANG": "C.UTF-8"}
repo = os.path.join(tmp, "repo"); os.makedirs(repo)
subprocess.run(["git", "init", "-q", repo], check=True, env=env)
script = "read x; exec cat"
if sys.argv[3] == "owt":
    out = subprocess.run([owt, "-C", repo, "__host", "spawn", "--name", "bench", "--rows", "50", "--cols", "200", "--", "bash", "--norc", "-c", script], env=env, check=True, capture_output=True, text=True).stdout
    host = json.loads(out)["host_pid"]
    apid, afd = B.spawn_in_pty([owt, "-C", repo, "attach", "bench"], env)
else:
    sock = "probe-%d" % os.getpid(); tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run(tmux + ["new-session", "-d", "-x", "200", "-y", "50", "bash", "--norc", "-c", script], env=env, check=True)
    subprocess.run(tmux + ["set", "-g", "status", "off"], env=env, check=True)
    apid, afd = B.spawn_in_pty(tmux + ["attach"], env)
    host = int(subprocess.run(tmux + ["display-message", "-p", "#{pid}"], env=env, capture_output=True, text=True).stdout)
B.drain(afd); os.write(afd, b"\r"); B.drain(afd, quiet=1.0)
pids = f"{host},{apid}"
if os.environ.get("PIN"): subprocess.run(["taskset", "-a", "-p", "-c", os.environ["PIN"], str(host)], capture_output=True)
if mode == "perf":
    mon = subprocess.Popen(["perf", "stat", "-e", "task-clock,context-switches,cpu-migrations", "--per-thread", "-p", pids], stderr=open(f"perf-{sys.argv[3]}.txt", "w"))
else:
    mon = subprocess.Popen(["strace", "-f", "-c", "-o", f"strace-{sys.argv[3]}.txt", "-p", str(host), "-p", str(apid)])
time.sleep(1)
r = B.echo_rtts(afd, 400)
mon.send_signal(2); mon.wait()
print(sys.argv[3], "median", statistics.median(r))
B.kill(apid)
if sys.argv[3] == "owt":
    subprocess.run([owt, "-C", repo, "__host", "stop", "bench"], env=env, capture_output=True)
else:
    subprocess.run(tmux + ["kill-server"], env=env)
