#!/usr/bin/env python3
"""A fake agent that floods its terminal at full speed.

Writes 80-column lines as fast as the terminal takes them and, every
50 ms, appends `<monotonic seconds> <bytes written so far>` to $FLOOD_LOG,
so a test can compute the agent's output rate over any window. The PTY
blocks the write when its reader (the session host) falls behind, so
the rate is exactly how fast the host drains the agent.
"""
import os
import time

log = open(os.environ["FLOOD_LOG"], "a", buffering=1)
chunk = b"".join(b"flood %06d " % i + b"x" * 67 + b"\n" for i in range(64))
total = 0
next_report = 0.0
while True:
    total += os.write(1, chunk)
    now = time.monotonic()
    if now >= next_report:
        log.write(f"{now:.6f} {total}\n")
        next_report = now + 0.05
