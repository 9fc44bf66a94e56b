#!/usr/bin/env python3
"""Stands for an owt build speaking a newer bridge protocol (version 2),
which cannot be built here: it answers `version`, `__bridge info` and
`__bridge serve` as such an owt would, and hands every other verb to the
real owt named in the file `real-owt` beside it."""
import json
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]


def frame(kind, doc):
    body = json.dumps(doc).encode()
    return bytes([kind]) + struct.pack("<I", len(body)) + body


if "__bridge" in args and "serve" in args:
    head = sys.stdin.buffer.read(5)
    if len(head) == 5:
        sys.stdin.buffer.read(struct.unpack("<I", head[1:5])[0])
    welcome = {"version": 2, "owt_version": "9.0.0", "repository": os.getcwd(),
               "now": int(time.time() * 1000)}
    sys.stdout.buffer.write(frame(0xC1, welcome))
    sys.stdout.flush()
    sys.stdin.buffer.read()
    sys.exit(0)
if "__bridge" in args and "info" in args:
    print(json.dumps({"version": "9.0.0", "bridge_protocol": 2, "repository": os.getcwd(),
                      "error": None, "base": None, "base_tip": None}))
    sys.exit(0)
if "version" in args:
    print(json.dumps({"version": "9.0.0", "host_protocol": 1, "bridge_protocol": 2}))
    sys.exit(0)
with open(os.path.join(HERE, "real-owt")) as f:
    real = f.read().strip()
os.execv(real, [real] + args)
