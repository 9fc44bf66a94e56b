#!/usr/bin/env python3
"""The scripted model: an HTTP server on 127.0.0.1 that plays an LLM API for
the real agent CLIs in owt's tests and benchmarks (see README.md here).

    python3 tests/model/server.py --script SCRIPT.json --log LOG.jsonl [--port 0]

Prints `PORT <n>` on its first stdout line once it serves. Speaks
  - Anthropic Messages     POST /v1/messages            (SSE or one JSON)
  - OpenAI Responses       POST /v1/responses           (SSE)
  - OpenAI Chat Completions POST /v1/chat/completions   (SSE or one JSON)
  - Gemini                 POST /v1beta/models/M:generateContent, :streamGenerateContent (SSE), :countTokens
  - GET …/models (both shapes in one document), HEAD/GET / (health checks).

The script is a list of turns, each a list of steps. Every answer the
server gives is a function of the request and the script (no clocks, no
randomness): which step a request gets is read from the conversation it
carries (see `position`). Every request is logged (JSONL, one `begin` line
when it arrives and one `end` line when its answer is finished, both with a
Unix timestamp in seconds), with the user messages it carried and the
`usage` the answer reported: that log is the truth tests compare owt with.

Standard library only: nothing to install.
"""

import argparse
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import limits

MODEL = "mock-model"

# ---------------------------------------------------------------- the script


def load_script(path):
    """Reads and checks a script; returns the flat list of steps, each with
    its turn number, and how long aux requests stall."""
    with open(path) as f:
        doc = json.load(f)
    aux_stall = float(doc.get("aux_stall", 0)) if isinstance(doc, dict) else 0.0
    turns = doc.get("turns") if isinstance(doc, dict) else doc
    if not isinstance(turns, list):
        raise SystemExit(f"{path}: expected {{\"turns\": [...]}}")
    steps = []
    for t, turn in enumerate(turns):
        turn_steps = turn.get("steps") if isinstance(turn, dict) else turn
        if not isinstance(turn_steps, list) or not turn_steps:
            raise SystemExit(f"{path}: turn {t} has no steps")
        for s in turn_steps:
            kinds = [k for k in ("write", "read", "run", "tool", "text") if k in s]
            if len(kinds) != 1:
                raise SystemExit(f"{path}: turn {t}: a step is exactly one of write, read, run, tool, text: {s}")
            step = dict(s)
            step["kind"] = kinds[0]
            step["turn"] = t
            step["last"] = False
            steps.append(step)
        steps[-1]["last"] = True
        if steps[-1]["kind"] != "text":
            raise SystemExit(f"{path}: turn {t} must end with a text step")
    texts = [s["text"] for s in steps if s["kind"] == "text"]
    if len(set(texts)) != len(texts):
        raise SystemExit(f"{path}: text replies must differ (the server finds its place by them)")
    return steps, aux_stall


def step_usage(step, index):
    """The usage one answer reports (deterministic; a step may set its own)."""
    u = {"input_tokens": 1000 + 100 * index, "output_tokens": 20 + index, "cache_read_tokens": 400,
         "cache_write_tokens": 0}
    u.update(step.get("usage", {}))
    return u


def json_for_schema(schema):
    """A small instance of a JSON schema (OpenAPI-style upper-case types
    too): what an aux request that asks for JSON gets (Gemini's routing and
    next-speaker checks)."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        keys = schema.get("required") or list(props)
        return {k: json_for_schema(props.get(k) or {}) for k in keys}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "scripted"


def aux_text(api, body):
    """An aux request's answer: JSON when it asks for JSON, else a title."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema:
        return json.dumps(json_for_schema(schema))
    if config.get("responseMimeType") == "application/json":
        return "{}"
    return AUX_TEXT


AUX_USAGE = {"input_tokens": 50, "output_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0}
AUX_TEXT = "Scripted task"
SPENT_TEXT = "Nothing more to do."

# ---------------------------------------------------------------- reading requests


def content_texts(content):
    """The text parts of a message's content (string or list of parts)."""
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            out.append(part.get("text", ""))
    return out


# Context the agents add to user messages on their own (not what the user
# typed): left out of the log's `user_messages`.
CONTEXT_TAGS = ("system-reminder", "environment_context", "user_instructions", "turn_aborted", "session_context")


def is_context(text):
    t = text.strip()
    if t.startswith("# AGENTS.md instructions"):
        return True
    for tag in CONTEXT_TAGS:
        if t.startswith(f"<{tag}") and t.endswith(f"</{tag}>"):
            return True
    return False


def user_texts(content):
    """A user message's own text: its text parts minus the agent's context."""
    return "\n".join(t for t in content_texts(content) if not is_context(t))


def conversation(api, body):
    """(user texts, assistant texts, tool call ids) of a request's history."""
    users, assistants, calls = [], [], []
    if api == "responses":
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        for item in items:
            t = item.get("type", "message")
            if t == "message" and item.get("role") == "user":
                text = user_texts(item.get("content"))
                if text:
                    users.append(text)
            elif t == "message" and item.get("role") == "assistant":
                assistants.append("\n".join(content_texts(item.get("content"))))
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                calls.append(item.get("call_id", ""))
        return users, assistants, calls
    if api == "gemini":
        for content in body.get("contents") or []:
            parts = content.get("parts") or []
            texts = [p.get("text", "") for p in parts if "text" in p and not p.get("thought")]
            if content.get("role", "user") == "user":
                text = "\n".join(t for t in texts if not is_context(t))
                if text:
                    users.append(text)
            else:
                assistants.append("\n".join(texts))
                # Gemini may drop call ids: the arguments tell the step too.
                calls += [(p["functionCall"].get("id") or "") + " " + json.dumps(p["functionCall"].get("args"))
                          for p in parts if "functionCall" in p]
        return users, assistants, calls
    for msg in body.get("messages") or []:
        role = msg.get("role")
        content = msg.get("content")
        if role == "user":
            text = user_texts(content)
            if text:
                users.append(text)
        elif role == "assistant":
            assistants.append("\n".join(content_texts(content)))
            if isinstance(content, list):
                calls += [p.get("id", "") for p in content if isinstance(p, dict) and p.get("type") == "tool_use"]
            calls += [c.get("id", "") for c in msg.get("tool_calls") or []]
    return users, assistants, calls


def tool_names(api, body):
    names = []
    if api == "gemini":
        return [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    for tool in body.get("tools") or []:
        if api == "chat":
            names.append((tool.get("function") or {}).get("name", ""))
        else:
            names.append(tool.get("name") or (tool.get("function") or {}).get("name", "") or tool.get("type", ""))
    return names


def tool_properties(api, body, name):
    """The parameter names of the request's tool `name`."""
    if api == "gemini":
        for t in body.get("tools") or []:
            for d in t.get("functionDeclarations") or []:
                if d.get("name") == name:
                    params = d.get("parametersJsonSchema") or d.get("parameters") or {}
                    return list((params.get("properties") or {}).keys())
        return []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if api == "chat" else tool
        fn = fn or {}
        if (fn.get("name") or tool.get("name")) == name:
            params = fn.get("parameters") or fn.get("input_schema") or tool.get("input_schema") or {}
            return list((params.get("properties") or {}).keys())
    return []


def path_key(api, body, name, default):
    """The name the tool `name` gives its file path parameter."""
    props = tool_properties(api, body, name)
    return next((k for k in ("file_path", "filePath", "path") if k in props), default)


def call_id(index):
    return f"owt_step_{index}"


def position(steps, assistants, calls):
    """Which step answers a request: the one after the last step whose own
    answer is already in the conversation (a tool call by its id, a text by
    its words), so a retried request gets the same answer and each turn
    picks up where the last left off."""
    done = -1
    joined = "\n".join(assistants)
    for i, step in enumerate(steps):
        if step["kind"] == "text":
            if step["text"].strip() and step["text"].strip() in joined:
                done = i
        elif any(call_id(i) in c for c in calls):
            done = i
        elif any(json.dumps(marker(step))[1:-1] in c for c in calls if not c.startswith("call_")
                 and not c.startswith("toolu_")):
            done = i
    return done + 1


def marker(step):
    """What a step's tool call carries that names it (for APIs that drop
    call ids): the file path or the command."""
    if step["kind"] in ("write", "read"):
        return step[step["kind"]]["path"]
    if step["kind"] == "tool":
        return step["tool"]["name"]
    return step["run"]["command"]


# ---------------------------------------------------------------- answers


def whole_file(path, content):
    """An edit in Aider's "whole" format."""
    if not content.endswith("\n"):
        content += "\n"
    return f"{path}\n```\n{content}```\n"


def plan_answer(api, body, steps, index, tools):
    """What to answer: ("text", text) or ("call", name, args dict) or
    ("custom", name, input string), plus the step (or None)."""
    if index >= len(steps):
        return ("text", SPENT_TEXT), None
    step = steps[index]
    if not tools:
        # A model without tools (Aider): the whole turn in one reply, edits
        # in its "whole" format.
        parts = []
        for s in steps[index:]:
            if s["kind"] == "write":
                parts.append(whole_file(s["write"]["path"], s["write"]["content"]))
            elif s["kind"] == "run":
                parts.append(f"```bash\n{s['run']['command']}\n```\n")
            else:
                parts.append(s["text"])
            if s["last"]:
                break
        return ("text", "\n".join(parts)), step
    if step["kind"] == "text":
        return ("text", step["text"]), step
    if step["kind"] == "read":
        # Claude Code writes over a file only after reading it.
        path = step["read"]["path"]
        cwd = body_cwd(body)
        full = path if path.startswith("/") or not cwd else f"{cwd}/{path}"
        for name in ("Read", "read", "read_file"):
            if name in tools:
                return ("call", name, {path_key(api, body, name, "file_path"): full}), step
        return shell_call(tools, f"cat {path}", step, cwd), step
    if step["kind"] == "tool":
        return tool_call(tools, step["tool"]), step
    if step["kind"] == "write":
        path, content = step["write"]["path"], step["write"]["content"]
        cwd = body_cwd(body)
        full = path if path.startswith("/") or not cwd else f"{cwd}/{path}"
        for name in ("Write", "write", "write_file"):
            if name in tools:
                return ("call", name, {path_key(api, body, name, "file_path"): full, "content": content}), step
        if "apply_patch" in tools:
            lines = "".join(f"+{line}\n" for line in content.splitlines())
            patch = f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"
            if api == "responses" and is_custom_tool(body, "apply_patch"):
                return ("custom", "apply_patch", patch), step
            return ("call", "apply_patch", {"input": patch}), step
        quoted = content.replace("'", "'\\''")
        return shell_call(tools, f"printf '%s' '{quoted}' > {path}", step, cwd), step
    return shell_call(tools, step["run"]["command"], step, body_cwd(body)), step


def tool_call(tools, tool):
    """A call of the request's tool named `tool["name"]`, or of the one
    ending in `__<name>` (an MCP server's tool: Claude Code's
    `mcp__owt__spawn_session`), with `tool["args"]`."""
    name = tool["name"]
    found = next((t for t in tools if t == name), None) or next(
        (t for t in tools if t.endswith(f"__{name}")), None)
    if found is None and "WaitForMcpServers" in tools:
        # Claude Code may ask before its MCP servers connected: wait for
        # them (a call of its own id, so the step stays to be answered).
        return ("call", "WaitForMcpServers", {}, f"toolu_owt_wait_{next(WAIT_IDS)}")
    if found is None:
        return ("text", f"(no tool {name} among {tools})")
    return ("call", found, tool.get("args") or {})


# Ids of the WaitForMcpServers calls (unique within a server's life).
WAIT_IDS = itertools.count()


def is_custom_tool(body, name):
    return any(t.get("type") == "custom" and t.get("name") == name for t in body.get("tools") or [])


def shell_call(tools, command, step, cwd):
    ask = step.get("run", {}).get("ask", True) if step["kind"] == "run" else False
    if "Bash" in tools:
        return ("call", "Bash", {"command": command, "description": "Run a scripted command"})
    if "bash" in tools:
        return ("call", "bash", {"command": command, "description": "Run a scripted command"})
    if "run_shell_command" in tools:
        return ("call", "run_shell_command", {"command": command, "description": "Run a scripted command"})
    if "exec_command" in tools:
        args = {"cmd": command}
        if cwd:
            args["workdir"] = cwd
        if ask:
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = "The script asks for approval"
        return ("call", "exec_command", args)
    if "shell" in tools:
        args = {"command": ["bash", "-lc", command]}
        if cwd:
            args["workdir"] = cwd
        if ask:
            args["with_escalated_permissions"] = True
            args["justification"] = "The script asks for approval"
        return ("call", "shell", args)
    return ("text", f"(no shell tool among {tools}) {command}")


def body_cwd(body):
    """The working directory an agent put in its request, if any."""
    text = json.dumps(body)
    for start, end in (("<cwd>", "</cwd>"), ("Working directory: ", "\\n")):
        i = text.find(start)
        if i >= 0:
            j = text.find(end, i + len(start))
            if j > i:
                return text[i + len(start):j].strip()
    return ""


def chunks(text, n):
    """`text` cut into at most `n` pieces."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // max(1, n)))
    return [text[i:i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------- the server


class Model:
    def __init__(self, steps, aux_stall, log_path):
        self.steps = steps
        self.aux_stall = aux_stall
        self.rate_limit = None
        self.log_file = open(log_path, "a", buffering=1)
        self.lock = threading.Lock()
        self.seq = 0

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def log(self, record):
        with self.lock:
            self.log_file.write(json.dumps(record) + "\n")
            self.log_file.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "owt-scripted-model/1"

    def log_message(self, fmt, *args):  # quiet: the JSONL log is the record
        pass

    # -- plumbing

    def send_json(self, code, doc):
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, event, doc):
        if event:
            self.wfile.write(f"event: {event}\n".encode())
        self.wfile.write(f"data: {json.dumps(doc) if not isinstance(doc, str) else doc}\n\n".encode())
        self.wfile.flush()

    # -- routes

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        model = self.server.model
        seq = model.next_seq()
        model.log({"event": "begin", "seq": seq, "t": time.time(), "method": "GET", "path": self.path})
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self.send_json(200, {
                "object": "list",
                "data": [{"id": MODEL, "object": "model", "type": "model", "created": 0, "owned_by": "owt",
                          "display_name": "Mock model", "created_at": "2026-01-01T00:00:00Z"}],
                "has_more": False, "first_id": MODEL, "last_id": MODEL,
            })
        else:
            self.send_json(200, {"ok": True})
        model.log({"event": "end", "seq": seq, "t": time.time()})

    def do_POST(self):
        model = self.server.model
        seq = model.next_seq()
        t0 = time.time()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0].rstrip("/")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            model.log({"event": "begin", "seq": seq, "t": t0, "method": "POST", "path": self.path,
                       "error": "body is not JSON"})
            self.send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith("/responses"):
            api = "responses"
        elif path.endswith("/chat/completions"):
            api = "chat"
        elif ":generateContent" in path or ":streamGenerateContent" in path or ":countTokens" in path:
            api = "gemini"
        else:
            model.log({"event": "begin", "seq": seq, "t": t0, "method": "POST", "path": self.path,
                       "error": "unknown path"})
            self.send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        if model.rate_limit is not None:
            model.log({"event": "begin", "seq": seq, "t": t0, "method": "POST", "path": self.path, "api": api,
                       "kind": "rate-limited", "user_messages": conversation(api, body)[0]})
            limits.send(self, api, model.rate_limit.get("reset_s", 3600))
            model.log({"event": "end", "seq": seq, "t": time.time()})
            return
        if api == "gemini" and ":countTokens" in path:
            model.log({"event": "begin", "seq": seq, "t": t0, "method": "POST", "path": self.path, "api": api,
                       "kind": "aux"})
            self.send_json(200, {"totalTokens": 100})
            model.log({"event": "end", "seq": seq, "t": time.time()})
            return
        stream = bool(body.get("stream")) or ":streamGenerateContent" in path
        tools = tool_names(api, body)
        users, assistants, calls = conversation(api, body)
        # A request without tools from an agent that uses tools is a side
        # request (a title, a topic check); so is Aider's commit message
        # (streamed or not: Aider runs with --no-stream too), and Gemini's
        # non-streamed routing checks.
        aux = (not tools and api != "chat") or (api == "gemini" and not stream) \
            or is_commit_message_request(body) or is_title_request(body)
        if aux:
            index, answer, step = None, ("text", aux_text(api, body)), None
            usage = dict(AUX_USAGE)
        else:
            index = position(model.steps, assistants, calls)
            answer, step = plan_answer(api, body, model.steps, index, tools)
            usage = step_usage(step or {}, index)
        record = {
            "event": "begin", "seq": seq, "t": t0, "method": "POST", "path": self.path, "api": api,
            "stream": stream, "kind": "aux" if aux else "main", "step": index,
            "turn": step["turn"] if step else None, "answer": answer[0] if not aux else "text",
            "tool": answer[1] if answer[0] in ("call", "custom") else None,
            "tools": tools, "user_messages": users, "usage": usage,
            "model": body.get("model"),
        }
        if self.server.log_bodies:
            record["body"] = body
        model.log(record)
        stall = model.aux_stall if aux else float((step or {}).get("stall", 0))
        stream_secs = float((step or {}).get("stream_secs", 0.3))
        try:
            if api == "anthropic":
                self.anthropic(body, stream, answer, index, usage, stall, stream_secs)
            elif api == "responses":
                self.openai_responses(body, answer, index, usage, stall, stream_secs)
            elif api == "gemini":
                self.gemini(body, stream, answer, index, usage, stall, stream_secs)
            else:
                self.chat(body, stream, answer, index, usage, stall, stream_secs)
            model.log({"event": "end", "seq": seq, "t": time.time()})
        except (BrokenPipeError, ConnectionResetError) as e:
            model.log({"event": "end", "seq": seq, "t": time.time(), "error": str(e)})

    # -- Anthropic Messages

    def anthropic(self, body, stream, answer, index, usage, stall, stream_secs):
        msg_id = f"msg_owt_{index if index is not None else 'aux'}"
        u_start = {"input_tokens": usage["input_tokens"], "output_tokens": 1,
                   "cache_creation_input_tokens": usage["cache_write_tokens"],
                   "cache_read_input_tokens": usage["cache_read_tokens"]}
        if answer[0] == "text":
            block = {"type": "text", "text": answer[1]}
            stop = "end_turn"
        else:
            block_id = answer[3] if len(answer) > 3 else f"toolu_{call_id(index)}"
            block = {"type": "tool_use", "id": block_id, "name": answer[1], "input": answer[2]}
            stop = "tool_use"
        if not stream:
            time.sleep(stall)
            self.send_json(200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": body.get("model", MODEL),
                "content": [block], "stop_reason": stop, "stop_sequence": None,
                "usage": dict(u_start, output_tokens=usage["output_tokens"]),
            })
            return
        self.start_sse()
        self.sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": body.get("model", MODEL),
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": u_start}})
        self.pause_with(stall, lambda: self.sse("ping", {"type": "ping"}))
        if block["type"] == "text":
            self.sse("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}})
            pieces = chunks(answer[1], 8)
            for piece in pieces:
                self.sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": piece}})
                time.sleep(stream_secs / len(pieces))
        else:
            self.sse("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": dict(block, input={})})
            time.sleep(stream_secs)
            self.sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        self.sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": usage["output_tokens"]}})
        self.sse("message_stop", {"type": "message_stop"})

    def pause_with(self, seconds, keepalive):
        """Sleeps `seconds`, sending a keep-alive every second."""
        end = time.time() + seconds
        while True:
            left = end - time.time()
            if left <= 0:
                return
            time.sleep(min(1.0, left))
            if end - time.time() > 0:
                keepalive()

    # -- OpenAI Responses

    def openai_responses(self, body, answer, index, usage, stall, stream_secs):
        rid = f"resp_owt_{index if index is not None else 'aux'}"
        seqno = [0]

        def ev(kind, doc):
            doc = dict(doc, type=kind, sequence_number=seqno[0])
            seqno[0] += 1
            self.sse(kind, doc)

        base = {"id": rid, "object": "response", "created_at": 0, "model": body.get("model", MODEL),
                "output": [], "status": "in_progress"}
        if answer[0] == "text":
            item = {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": answer[1], "annotations": []}]}
        elif answer[0] == "custom":
            item = {"type": "custom_tool_call", "id": f"ctc_{rid}", "call_id": f"call_{call_id(index)}",
                    "name": answer[1], "input": answer[2], "status": "completed"}
        else:
            item = {"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_{call_id(index)}",
                    "name": answer[1], "arguments": json.dumps(answer[2]), "status": "completed"}
        usage_doc = {"input_tokens": usage["input_tokens"],
                     "input_tokens_details": {"cached_tokens": usage["cache_read_tokens"]},
                     "output_tokens": usage["output_tokens"],
                     "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": usage["input_tokens"] + usage["output_tokens"]}
        if not body.get("stream"):
            time.sleep(stall)
            self.send_json(200, dict(base, status="completed", output=[item], usage=usage_doc))
            return
        self.start_sse()
        ev("response.created", {"response": base})
        ev("response.in_progress", {"response": base})
        self.pause_with(stall, lambda: None)
        if item["type"] == "message":
            ev("response.output_item.added", {"output_index": 0, "item": dict(item, status="in_progress", content=[])})
            ev("response.content_part.added", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                               "part": {"type": "output_text", "text": "", "annotations": []}})
            pieces = chunks(answer[1], 8)
            for piece in pieces:
                ev("response.output_text.delta", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                                  "delta": piece})
                time.sleep(stream_secs / len(pieces))
            ev("response.output_text.done", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                             "text": answer[1]})
            ev("response.content_part.done", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                              "part": item["content"][0]})
        elif item["type"] == "custom_tool_call":
            ev("response.output_item.added", {"output_index": 0, "item": dict(item, status="in_progress", input="")})
            time.sleep(stream_secs)
            ev("response.custom_tool_call_input.delta", {"item_id": item["id"], "output_index": 0,
                                                         "delta": item["input"]})
            ev("response.custom_tool_call_input.done", {"item_id": item["id"], "output_index": 0,
                                                        "input": item["input"]})
        else:
            ev("response.output_item.added", {"output_index": 0,
                                              "item": dict(item, status="in_progress", arguments="")})
            time.sleep(stream_secs)
            ev("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": 0,
                                                          "delta": item["arguments"]})
            ev("response.function_call_arguments.done", {"item_id": item["id"], "output_index": 0,
                                                         "arguments": item["arguments"]})
        ev("response.output_item.done", {"output_index": 0, "item": item})
        ev("response.completed", {"response": dict(base, status="completed", output=[item], usage=usage_doc)})

    # -- Gemini (generateContent, streamGenerateContent?alt=sse)

    def gemini(self, body, stream, answer, index, usage, stall, stream_secs):
        usage_doc = {"promptTokenCount": usage["input_tokens"], "candidatesTokenCount": usage["output_tokens"],
                     "totalTokenCount": usage["input_tokens"] + usage["output_tokens"],
                     "cachedContentTokenCount": usage["cache_read_tokens"]}

        def doc(parts, finish=None, with_usage=False):
            cand = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            d = {"candidates": [cand], "modelVersion": MODEL, "responseId": f"owt-{index}"}
            if with_usage:
                d["usageMetadata"] = usage_doc
            return d

        if answer[0] == "text":
            whole = [{"text": answer[1]}]
        else:
            whole = [{"functionCall": {"name": answer[1], "args": answer[2], "id": f"call_{call_id(index)}"}}]
        if not stream:
            time.sleep(stall)
            self.send_json(200, doc(whole, "STOP", True))
            return
        self.start_sse()
        # (Gemini's SSE reader takes every event for JSON: no keep-alives.)
        time.sleep(stall)
        if answer[0] == "text":
            pieces = chunks(answer[1], 8)
            for i, piece in enumerate(pieces):
                last = i == len(pieces) - 1
                self.sse(None, doc([{"text": piece}], "STOP" if last else None, last))
                if not last:
                    time.sleep(stream_secs / len(pieces))
        else:
            time.sleep(stream_secs)
            self.sse(None, doc(whole, "STOP", True))

    # -- OpenAI Chat Completions

    def chat(self, body, stream, answer, index, usage, stall, stream_secs):
        cid = f"chatcmpl-owt-{index if index is not None else 'aux'}"
        usage_doc = {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                     "total_tokens": usage["input_tokens"] + usage["output_tokens"],
                     "prompt_tokens_details": {"cached_tokens": usage["cache_read_tokens"]}}
        if answer[0] == "text":
            message = {"role": "assistant", "content": answer[1]}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{call_id(index)}", "type": "function",
                "function": {"name": answer[1], "arguments": json.dumps(answer[2])}}]}
            finish = "tool_calls"
        if not stream:
            time.sleep(stall)
            self.send_json(200, {"id": cid, "object": "chat.completion", "created": 0,
                                 "model": body.get("model", MODEL),
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": usage_doc})
            return

        def chunk(delta, finish_reason=None, **extra):
            doc = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": body.get("model", MODEL),
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            doc.update(extra)
            self.sse(None, doc)

        self.start_sse()
        chunk({"role": "assistant", "content": ""})
        self.pause_with(stall, lambda: self.wfile.write(b": keep-alive\n\n") or self.wfile.flush())
        if answer[0] == "text":
            pieces = chunks(answer[1], 8)
            for piece in pieces:
                chunk({"content": piece})
                time.sleep(stream_secs / len(pieces))
        else:
            call = message["tool_calls"][0]
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": ""}}]})
            time.sleep(stream_secs)
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if include_usage:
            chunk({}, finish)
            self.sse(None, {"id": cid, "object": "chat.completion.chunk", "created": 0,
                            "model": body.get("model", MODEL), "choices": [], "usage": usage_doc})
        else:
            chunk({}, finish, usage=usage_doc)
        self.sse(None, "[DONE]")


def is_commit_message_request(body):
    """Aider's side request for a commit message (its weak model's prompt)."""
    system = json.dumps([m.get("content") for m in body.get("messages") or [] if m.get("role") == "system"])
    return "Git commit messages" in system


def is_title_request(body):
    """OpenCode's and Claude's side requests that name the conversation."""
    system = json.dumps(body.get("system", "")) + json.dumps(
        [m.get("content") for m in body.get("messages") or [] if m.get("role") == "system"])
    return "title generator" in system or "generate a title" in system.lower()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="the script (JSON): {\"turns\": [{\"steps\": [...]}]}")
    ap.add_argument("--log", required=True, help="the request log (JSONL, appended)")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    ap.add_argument("--log-bodies", action="store_true", help="also log each request's whole body")
    args = ap.parse_args()
    steps, aux_stall = load_script(args.script)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.model = Model(steps, aux_stall, args.log)
    with open(args.script) as f:
        doc = json.load(f)
    server.model.rate_limit = doc.get("rate_limit") if isinstance(doc, dict) else None
    server.log_bodies = args.log_bodies
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
