#!/usr/bin/env python3
"""Pre-edit hook: how long `owt hook --pre-edit` takes to answer an agent's
Edit, with 16 other sessions at work, next to one `git status` of the
editing checkout (the least a per-edit check that looks at git pays).

Hermetic (temp HOME and OWT_HOME). A generated repository of --files
files (cached under /tmp/owt-bench-cache) and --sessions + 1 sessions of
the fake agent (`owt new`): each of the 16 changes a few lines of one
shared file (every session a different stretch) and a file of its own;
the 17th is the one whose agent asks before editing the shared file, on
lines one of the 16 is changing (so the answer names it). Each round runs
the hook once (a new process, as Claude Code runs it: stdin the tool call,
OWT_SESSION set) and `git status --porcelain` once. Prints p50/p95.

With --editor, a real `owt lsp` runs in the main checkout meanwhile, the
shared file open in it and line 5 typed over without saving (your
unsaved buffer): the hook reads that server's record of unsaved buffers
too, and its answer names you as well.

    python3 bench/pre_edit.py [--files 10000] [--sessions 16] [--rounds 60] [--editor] [--json]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402


def start_editor(owt, repo, env, shared, tmpdir):
    """A real `owt lsp` in `repo` (a Neovim-like client), `shared` open and
    its line 5 typed over, unsaved."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "lsp"))
    from bench import Client  # bench/lsp/bench.py

    stderr = open(pathlib.Path(tmpdir) / "lsp-stderr.log", "wb")
    client = Client(owt, repo, env, stderr)
    root_uri = f"file://{repo}"
    client.request("initialize", {
        "processId": os.getpid(), "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": "root"}],
        "capabilities": {"window": {"workDoneProgress": True},
                         "textDocument": {"publishDiagnostics": {"relatedInformation": True}}},
        "initializationOptions": {},
    })
    client.notify("initialized", {})
    path = repo / shared
    text = path.read_text()
    uri = f"file://{path}"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "rust", "version": 1,
                                                            "text": text}})
    lines = text.splitlines(keepends=True)
    lines[4] = "// typed in the editor, not saved\n"
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": "".join(lines)}]})
    return client


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--owt", default=str(common.owt_binary()))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--editor", action="store_true",
                    help="an owt lsp with an unsaved buffer of the shared file runs meanwhile")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    owt = str(pathlib.Path(args.owt).resolve())
    repo = common.generated_repo(args.files, log=lambda m: print(m, file=sys.stderr))
    shared = common.file_path(0)
    hook_s, git_s = [], []
    with tempfile.TemporaryDirectory(prefix="owt-bench-pre-edit-") as tmpdir:
        env = common.hermetic_env(pathlib.Path(tmpdir))
        try:
            subprocess.run([owt, "trust"], cwd=repo, env=env, capture_output=True)
            for i in range(args.sessions):
                out = subprocess.run([owt, "--json", "new", f"pre-edit bench {i}", "--name", f"pe-{i:02d}"],
                                     cwd=repo, env=env, check=True, capture_output=True, text=True)
                wt = pathlib.Path(json.loads(out.stdout)["session"]["worktree"])
                # One line of the shared file (30 lines): sessions 0..14 on
                # lines 1..29 (every other), the rest in files of their own.
                lines = (wt / shared).read_text().splitlines(keepends=True)
                if 2 * i < len(lines):
                    lines[2 * i] = f"// changed by pe-{i:02d}\n"
                (wt / shared).write_text("".join(lines))
                own = wt / common.file_path(1 + i)
                own.write_text(own.read_text() + f"// pe-{i:02d}\n")
            out = subprocess.run([owt, "--json", "new", "the editing agent", "--name", "editor"],
                                 cwd=repo, env=env, check=True, capture_output=True, text=True)
            view = json.loads(out.stdout)["session"]
            wt = pathlib.Path(view["worktree"])
            text = (wt / shared).read_text()
            old = text.splitlines(keepends=True)[4]  # line 5: pe-02's
            tool_call = json.dumps({
                "session_id": "bench", "hook_event_name": "PreToolUse", "cwd": str(wt),
                "tool_name": "Edit",
                "tool_input": {"file_path": str(wt / shared), "old_string": old, "new_string": "// mine\n"},
            })
            hook_env = dict(env, OWT_SESSION=view["id"])
            editor = None
            if args.editor:
                editor = start_editor(owt, repo, env, shared, tmpdir)
                deadline = time.monotonic() + 60
                while True:
                    said = subprocess.run([owt, "hook", "--pre-edit"], cwd=wt, env=hook_env, input=tool_call,
                                          capture_output=True, text=True, check=True).stdout
                    if "unsaved in your editor" in said:
                        break
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the hook never named the unsaved buffer: {said!r}")
                    time.sleep(0.05)
            answer = ""
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                out = subprocess.run([owt, "hook", "--pre-edit"], cwd=wt, env=hook_env, input=tool_call,
                                     capture_output=True, text=True, check=True)
                hook_s.append(time.perf_counter() - t0)
                answer = out.stdout
                t0 = time.perf_counter()
                common.git(wt, "status", "--porcelain", env=env)
                git_s.append(time.perf_counter() - t0)
            if "pe-02" not in answer:
                raise SystemExit(f"the hook did not name pe-02: {answer!r}")
            if editor and "you (unsaved in your editor)" not in answer:
                raise SystemExit(f"the hook did not name your unsaved buffer: {answer!r}")
            if editor:
                editor.proc.kill()
                editor.proc.wait()
        finally:
            common.release_repo(repo, env, args.files)
    result = {
        "files": args.files,
        "sessions": args.sessions,
        "rounds": args.rounds,
        "editor": args.editor,
        "hook_p50_ms": common.percentile(hook_s, 50) * 1000,
        "hook_p95_ms": common.percentile(hook_s, 95) * 1000,
        "git_p50_ms": common.percentile(git_s, 50) * 1000,
        "git_p95_ms": common.percentile(git_s, 95) * 1000,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"owt hook --pre-edit ({args.sessions} sessions, {args.files} files"
              f"{', an editor with an unsaved buffer' if args.editor else ''}): "
              f"p50 {result['hook_p50_ms']:.1f} ms, p95 {result['hook_p95_ms']:.1f} ms; "
              f"git status: p50 {result['git_p50_ms']:.1f} ms, p95 {result['git_p95_ms']:.1f} ms")


if __name__ == "__main__":
    os.umask(0o022)
    main()
