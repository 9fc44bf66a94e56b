#!/usr/bin/env python3
"""ssh, counting what git sends and receives through it.

    count_ssh.py LOG ssh [ARGS…]

Used as `OWT_SSH_COMMAND` by bench/remote/bench.py: a command that runs
`git-upload-pack` or `git-receive-pack` on the remote (a fetch or a push)
is run with its standard input and output pumped through here and counted,
then one JSON line {"command", "sent", "received", "at"} is appended to
LOG; anything else (the bridge, the ControlMaster) is exec'd unchanged.
"""
import json
import os
import subprocess
import sys
import threading
import time

log, argv = sys.argv[1], sys.argv[2:]
if not any("git-upload-pack" in a or "git-receive-pack" in a for a in argv):
    os.execvp(argv[0], argv)

proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
counts = {"sent": 0, "received": 0}


def pump(src, dst, key, close):
    while True:
        data = os.read(src, 65536)
        if not data:
            break
        counts[key] += len(data)
        os.write(dst, data)
    close()


up = threading.Thread(target=pump, args=(0, proc.stdin.fileno(), "sent", proc.stdin.close), daemon=True)
down = threading.Thread(target=pump, args=(proc.stdout.fileno(), 1, "received", lambda: None))
up.start()
down.start()
rc = proc.wait()
down.join()
with open(log, "a") as f:
    f.write(json.dumps({"command": argv[-1], "sent": counts["sent"], "received": counts["received"],
                        "at": time.time()}) + "\n")
sys.exit(rc)
