#!/usr/bin/env python3
"""A misbehaving ACP agent for owt's protocol robustness tests (the real
adapters are tested in acp_real_agents.rs; this one does on demand what a
buggy or hostile agent might). One message per line on stdin/stdout.

    fake-acp-agent.py --mode MODE [--log FILE]

Modes:
  ok        a well-behaved agent: replies "fake reply to: <prompt>", and
            reports its context fill and cumulative cost ($0.25 a turn)
            in a usage_update
  garbage   also sends lines that are not JSON-RPC and an update of an
            unknown kind before it answers (owt must skip and log them)
  version2  answers initialize with protocol version 2
  die       exits with code 3 in the middle of its first turn
  escape    in its turn, asks owt to write and read files outside its
            working folder (through `..`, an absolute path and a symbolic
            link; `notes.txt`, a dangling link in the security test),
            and to run commands outside and inside it; reports
            each answer as a message line
  ask       asks permission to write ask.txt; writes it when allowed
  echo      not an ACP agent at all: prints a banner, then echoes every
            line it reads (owt must not bounce errors with it forever)

Every line received is appended to --log (JSON per line) for the test.
"""

import argparse
import json
import os
import sys
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="ok")
parser.add_argument("--log")
args = parser.parse_args()

lock = threading.Lock()
next_id = [1000]
waiting = {}
cwd = [os.getcwd()]
turns = [0]


def log(obj):
    if args.log:
        with open(args.log, "a") as f:
            f.write(json.dumps(obj) + "\n")


def send_raw(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def send(obj):
    send_raw(json.dumps(obj))


def respond(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def update(session, upd):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": upd}})


def say(session, text):
    update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def call(method, params):
    """A request to the client; waits for its answer (read by the main loop)."""
    with lock:
        next_id[0] += 1
        rid = next_id[0]
        ev = threading.Event()
        waiting[rid] = [ev, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    ev.wait(60)
    return waiting.pop(rid)[1]


def describe(reply):
    if reply is None:
        return "no answer"
    if "error" in reply:
        return f"error {reply['error'].get('code')} {reply['error'].get('message')}"
    return "ok " + json.dumps(reply.get("result"), separators=(",", ":"))


def turn(rid, params):
    session = params["sessionId"]
    text = " ".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
    if args.mode == "garbage":
        send_raw("this line is not JSON")
        send_raw('{"jsonrpc": "2.0", "id": 77}')
        update(session, {"sessionUpdate": "hologram_update", "sparkles": 3})
    if args.mode == "die":
        say(session, "starting on it")
        sys.stdout.flush()
        os._exit(3)
    if args.mode == "escape":
        here = cwd[0]
        outside = os.path.join(os.path.dirname(here), "outside.txt")
        lines = [
            "write ..: " + describe(call("fs/write_text_file", {"sessionId": session, "path": os.path.join(here, "..", "outside.txt"), "content": "x"})),
            "write abs: " + describe(call("fs/write_text_file", {"sessionId": session, "path": outside, "content": "x"})),
            "write link: " + describe(call("fs/write_text_file", {"sessionId": session, "path": os.path.join(here, "link", "via-link.txt"), "content": "x"})),
            "read abs: " + describe(call("fs/read_text_file", {"sessionId": session, "path": "/etc/hostname"})),
            "write notes: " + describe(call("fs/write_text_file", {"sessionId": session, "path": os.path.join(here, "notes.txt"), "content": "x"})),
            "write inside: " + describe(call("fs/write_text_file", {"sessionId": session, "path": os.path.join(here, "inside.txt"), "content": "inside\n"})),
            "read inside: " + describe(call("fs/read_text_file", {"sessionId": session, "path": os.path.join(here, "inside.txt")})),
            "terminal outside: " + describe(call("terminal/create", {"sessionId": session, "command": "pwd", "cwd": "/"})),
        ]
        created = call("terminal/create", {"sessionId": session, "command": "pwd"})
        lines.append("terminal inside: " + describe(created))
        if created and "result" in created:
            tid = created["result"]["terminalId"]
            lines.append("exit: " + describe(call("terminal/wait_for_exit", {"sessionId": session, "terminalId": tid})))
            out = call("terminal/output", {"sessionId": session, "terminalId": tid})
            lines.append("output: " + json.dumps(out["result"]["output"]))
            call("terminal/release", {"sessionId": session, "terminalId": tid})
        say(session, "\n".join(lines) + "\n")
    elif args.mode == "ask":
        reply = call("session/request_permission", {
            "sessionId": session,
            "toolCall": {"toolCallId": "t1", "title": "Write ask.txt", "kind": "edit", "locations": [{"path": "ask.txt"}]},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
        outcome = (reply or {}).get("result", {}).get("outcome", {})
        if outcome.get("optionId") == "yes":
            call("fs/write_text_file", {"sessionId": session, "path": os.path.join(cwd[0], "ask.txt"), "content": "asked\n"})
        say(session, f"you chose {outcome.get('optionId', outcome.get('outcome'))}")
    else:
        say(session, f"fake reply to: {text}")
    turns[0] += 1
    if args.mode == "ok":
        # Cumulative, as agents report it: $0.25 a turn.
        update(session, {"sessionUpdate": "usage_update", "used": 12 * turns[0], "size": 1000,
                         "cost": {"amount": 0.25 * turns[0], "currency": "USD"}})
    respond(rid, {"stopReason": "end_turn", "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}})


def main():
    if args.mode == "echo":
        send_raw("echo agent ready")
        for line in sys.stdin:
            send_raw("got: " + line.strip())
        return
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            log({"unparsed": line})
            continue
        log(msg)
        if "method" not in msg:
            slot = waiting.get(msg.get("id"))
            if slot:
                slot[1] = msg
                slot[0].set()
            continue
        method, rid, params = msg["method"], msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            if args.mode == "garbage":
                send_raw("{not json")
                send_raw('{"jsonrpc": "2.0", "method": 5}')
            version = 2 if args.mode == "version2" else 1
            respond(rid, {"protocolVersion": version, "agentCapabilities": {"loadSession": False},
                          "agentInfo": {"name": "fake-acp-agent", "version": "1"}, "authMethods": []})
        elif method == "session/new":
            cwd[0] = params.get("cwd", cwd[0])
            respond(rid, {"sessionId": "fake-1"})
        elif method == "session/prompt":
            threading.Thread(target=turn, args=(rid, params), daemon=True).start()
        elif method == "session/cancel":
            pass
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})


main()
