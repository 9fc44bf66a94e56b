#!/usr/bin/env python3
"""Status latency with the real agent CLIs: how long after the truth owt's
status changes, per agent.

Each run drives one agent (pinned by scripts/install-agents) through a whole
turn against the scripted model (tests/model/): `owt new` gives it a task
whose first step needs the human's approval (its own permission dialog),
`owt send` approves, a final reply ends the turn. Two threads poll, as fast
as the CLI answers, `owt --json list` (owt's status) and `owt peek` (the
agent's screen); the model's request log is the rest of the truth:

  turn start → working    the first request of the turn arrives at the model
                          (0 when owt already said working)
  dialog → blocked        the dialog's words first appear on the screen
                          (0 when owt said blocked first: a native signal)
  approval → working      `owt send` of the agent's approve key returns
  reply → waiting         the final answer is complete at the model (Aider:
                          its commit message request, after the approval)

    bench/agents.py [--runs N] [--agents claude,codex,opencode,aider,gemini,pi] [--json]

Prints a table, or with --json one JSON object on its last line (bench/run).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

sys.path.insert(0, str(common.ROOT / "tests" / "model"))
import offline  # noqa: E402

AGENTS = ["claude", "codex", "opencode", "aider", "gemini", "pi"]
# The words of each agent's permission dialog (Pi has none).
DIALOG = {
    "claude": "Do you want to create hello.txt?",
    "codex": "Would you like to run the following command?",
    "opencode": "Permission required",
    "aider": "Create new file?",
    "gemini": "Apply this change?",
}
APPROVE = {"claude": "1", "codex": "y", "opencode": "", "aider": "y", "gemini": ""}
DEADLINE = 180


class Poller:
    """Polls one command in a thread; keeps (time, stdout) pairs."""

    def __init__(self, argv, env, cwd):
        self.argv, self.env, self.cwd = argv, env, cwd
        self.seen = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            t = time.time()
            out = subprocess.run(self.argv, env=self.env, cwd=self.cwd, capture_output=True, text=True).stdout
            self.seen.append((t, out))

    def close(self):
        self.stop = True
        self.thread.join()

    def statuses(self, name):
        """(time, status) of session `name` in each `owt --json list` seen."""
        for t, out in list(self.seen):
            try:
                yield t, next(v for v in json.loads(out)["sessions"] if v["name"] == name)["status"]
            except (ValueError, StopIteration, KeyError):
                continue

    def status_at_or_after(self, name, since, wanted):
        """When `name` was first listed with a status in `wanted` at or after `since`."""
        return next((t for t, s in self.statuses(name) if t >= since and s in wanted), None)

    def status_before(self, name, t0):
        """The status `name` was last listed with before `t0`."""
        before = None
        for t, s in self.statuses(name):
            if t >= t0:
                break
            before = s
        return before


def wait_until(what, fn, deadline=DEADLINE):
    end = time.time() + deadline
    while time.time() < end:
        got = fn()
        if got is not None:
            return got
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def one_run(agent, owt, tmp):
    tmp = pathlib.Path(tmp)
    env = common.hermetic_env(tmp)
    repo = tmp / "app"
    repo.mkdir()
    common.git(repo, "init", "-q", "-b", "main", env=env)
    (repo / "README.md").write_text("# bench\n")
    common.git(repo, "add", ".", env=env)
    common.git(repo, "commit", "-qm", "initial", env=env)
    name = f"{agent}-bench"
    worktree = tmp / "app.worktrees" / name
    # The first step needs the human's approval (Codex is asked to run a
    # command with escalated permissions; Pi asks nothing).
    ask = ({"run": {"command": "printf 'hello\\n' > hello.txt", "ask": True}} if agent == "codex"
           else {"write": {"path": "hello.txt", "content": "hello\n"}})
    ask.update({"stall": 2, "stream_secs": 1})
    script = {"aux_stall": 2 if agent == "aider" else 0,
              "turns": [{"steps": [ask, {"text": "I wrote hello.txt.", "stall": 2, "stream_secs": 2}]}]}
    with offline.Model(script, tmp / "model") as model:
        env.update(offline.setup(agent, pathlib.Path(env["HOME"]), model.url, trusted=[repo, worktree]))
        env["OWT_BIN"] = str(owt)
        subprocess.run([str(owt), "new", "Create hello.txt", "--name", name, "--ai-tool", agent],
                       cwd=repo, env=env, check=True, capture_output=True)
        lists = Poller([str(owt), "--json", "list"], env, repo)
        peeks = Poller([str(owt), "peek", name], env, repo)
        try:
            def status_at_or_after(since, wanted):
                return lists.status_at_or_after(name, since, wanted)

            def status_before(t0):
                return lists.status_before(name, t0)

            def main_request(step):
                return next((r for r in model.requests() if r.get("kind") == "main" and r.get("step") == step
                             and r["end"] is not None), None)

            first = wait_until("the first request", lambda: next(
                (r for r in model.requests() if r.get("kind") == "main"), None))
            working_at = wait_until("working", lambda: status_at_or_after(first["begin"] - 60, {"working"}))
            start_latency = 0.0 if status_before(first["begin"]) == "working" else max(
                0.0, working_at - first["begin"])
            approved = time.time()
            dialog_latency = approve_latency = None
            if agent in DIALOG:
                asked = wait_until("the dialog's request", lambda: main_request(0))
                shown = wait_until("the dialog on screen", lambda: next(
                    (t for t, out in list(peeks.seen) if t >= asked["begin"] and DIALOG[agent] in out), None))
                blocked = wait_until("blocked", lambda: status_at_or_after(asked["begin"], {"blocked"}))
                dialog_latency = max(0.0, blocked - shown)
                subprocess.run([str(owt), "send", name, APPROVE[agent]], cwd=repo, env=env, check=True,
                               capture_output=True)
                approved = time.time()
                back = wait_until("working after the approval",
                                  lambda: status_at_or_after(approved, {"working"}))
                approve_latency = back - approved
            if agent == "aider":
                done = wait_until("the commit message", lambda: next(
                    (r["end"] for r in model.requests() if r.get("kind") == "aux" and r["end"]
                     and r["begin"] > approved), None))
            else:
                done = wait_until("the final reply", lambda: main_request(1))["end"]
            waiting = wait_until("waiting", lambda: status_at_or_after(done, {"needs-input", "done"}))
            reply_latency = waiting - done
        finally:
            lists.close()
            peeks.close()
            subprocess.run([str(owt), "delete", name, "--force"], cwd=repo, env=env, capture_output=True)
            common.kill_by_owt_home(env["OWT_HOME"])
    out = {"start": start_latency, "dialog": dialog_latency, "approve": approve_latency, "reply": reply_latency}
    return {k: v for k, v in out.items() if v is not None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--owt", help="the owt binary (default: target/release/owt, built)")
    args = ap.parse_args()
    owt = pathlib.Path(args.owt) if args.owt else common.build_release()
    offline.agents_dir()
    results = {}
    for agent in args.agents.split(","):
        runs = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"owt-bench-agents-{agent}-") as tmp:
                r = one_run(agent, owt, tmp)
            print(f"{agent} run {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.items()), file=sys.stderr,
                  flush=True)
            runs.append(r)
        results[agent] = {k: [r[k] for r in runs] for k in runs[0]}
    if args.json:
        print(json.dumps(results))
    else:
        print("| agent | turn start → working | dialog → blocked | approval → working | reply → waiting |")
        print("|---|---|---|---|---|")
        for agent, r in results.items():
            print(f"| {agent} | " + " | ".join(f"{statistics.median(r[k]):.2f} s" if k in r else "—"
                                              for k in ("start", "dialog", "approve", "reply")) + " |")


if __name__ == "__main__":
    main()
