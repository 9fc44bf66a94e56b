#!/usr/bin/env python3
"""Status latency of an ACP session: from the agent's permission request on
the wire to `blocked` in `owt list`, side by side with the same agent's
terminal session (its permission dialog on screen → `blocked`, as
bench/agents.py measures it).

ACP: `owt new --acp` runs the agent's ACP server (Zed's adapter, or
`opencode acp`) through a tap (this script with --tap) that copies its
stdout to owt line by line and logs when each `session/request_permission`
line passed. The scripted model (tests/model/) asks to write one file per
turn; each turn the agent asks permission, `owt approve` answers, the turn
ends, `owt send` starts the next. A thread polls `owt --json list` as fast
as the CLI answers; the latency of one request is the start of the first
listing that says `blocked` minus the moment its line passed the tap (so it
includes up to one listing).

PTY: bench/agents.py's runs of the same agent (`dialog → blocked`: the
dialog's words first on the screen by `owt peek` → `blocked`).

    bench/acp.py [--agents claude,codex,opencode] [--turns N] [--runs N] [--pty-runs N] [--json]
    bench/acp.py --tap LOG -- ARGV...     (the tap; started by owt)

Prints a table, or with --json one JSON object on its last line (bench/run).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import agents as pty_bench  # noqa: E402
import common  # noqa: E402

sys.path.insert(0, str(common.ROOT / "tests" / "model"))
import offline  # noqa: E402

# The ACP server of each agent (as owt's built-in providers run it).
ACP = {"claude": ["claude-agent-acp"], "codex": ["codex-acp"], "opencode": ["opencode", "acp"]}
DEADLINE = 180


def tap(log, argv):
    """Runs ARGV, copying stdin to it and its stdout to ours line by line;
    logs the time each permission request passed."""
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def upstream():
        for line in sys.stdin.buffer:
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except OSError:
                break
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=upstream, daemon=True).start()
    out = sys.stdout.buffer
    with open(log, "a", buffering=1) as f:
        for line in child.stdout:
            out.write(line)
            out.flush()
            if b'"session/request_permission"' in line:
                f.write(json.dumps({"t": time.time()}) + "\n")
    sys.exit(child.wait())


def one_run(agent, owt, tmp, turns):
    tmp = pathlib.Path(tmp)
    env = common.hermetic_env(tmp)
    repo = tmp / "app"
    repo.mkdir()
    common.git(repo, "init", "-q", "-b", "main", env=env)
    (repo / "README.md").write_text("# bench\n")
    common.git(repo, "add", ".", env=env)
    common.git(repo, "commit", "-qm", "initial", env=env)
    name = f"{agent}-acp"
    worktree = tmp / "app.worktrees" / name
    wire = tmp / "wire.jsonl"

    def ask(i):
        if agent == "codex":
            return {"run": {"command": f"printf 'hello\\n' > hello{i}.txt", "ask": True}}
        return {"write": {"path": f"hello{i}.txt", "content": "hello\n"}}

    script = {"turns": [{"steps": [ask(i), {"text": f"I wrote hello{i}.txt."}]} for i in range(turns)]}
    config = tmp / "home" / ".config" / "owt" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(pathlib.Path(__file__).resolve()), "--tap", str(wire), "--", *ACP[agent]]
    config.write_text(f'[tools.tap]\nbinary = "{sys.executable}"\nacp = "{" ".join(argv)}"\n')
    latencies = []
    with offline.Model(script, tmp / "model") as model:
        env.update(offline.setup(agent, pathlib.Path(env["HOME"]), model.url, trusted=[repo, worktree]))
        # Claude Code's SDK refuses to start as root without it.
        env["IS_SANDBOX"] = "1"
        subprocess.run([str(owt), "new", "Create hello0.txt", "--name", name, "--ai-tool", "tap", "--acp"],
                       cwd=repo, env=env, check=True, capture_output=True)
        lists = pty_bench.Poller([str(owt), "--json", "list"], env, repo)

        def status_at_or_after(since, wanted):
            return lists.status_at_or_after(name, since, wanted)

        def wire_times():
            try:
                return [json.loads(line)["t"] for line in wire.read_text().splitlines()]
            except OSError:
                return []

        try:
            for i in range(turns):
                asked = pty_bench.wait_until(f"permission request {i} on the wire", lambda: (
                    wire_times()[i] if len(wire_times()) > i else None), DEADLINE)
                blocked = pty_bench.wait_until(f"blocked {i}", lambda: status_at_or_after(asked, {"blocked"}))
                latencies.append(blocked - asked)
                subprocess.run([str(owt), "approve", name], cwd=repo, env=env, check=True, capture_output=True)
                done = time.time()
                pty_bench.wait_until(f"waiting after turn {i}",
                                     lambda: status_at_or_after(done, {"needs-input"}), DEADLINE)
                if i + 1 < turns:
                    subprocess.run([str(owt), "send", name, f"Create hello{i + 1}.txt"], cwd=repo, env=env,
                                   check=True, capture_output=True)
        finally:
            lists.close()
            subprocess.run([str(owt), "delete", name, "--force"], cwd=repo, env=env, capture_output=True)
            common.kill_by_owt_home(env["OWT_HOME"])
    return latencies


def summary(xs):
    return {"n": len(xs), "p50": common.percentile(xs, 50), "p95": common.percentile(xs, 95),
            "max": max(xs) if xs else float("nan")}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--tap":
        tap(sys.argv[2], sys.argv[sys.argv.index("--") + 1:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="claude,codex,opencode")
    ap.add_argument("--turns", type=int, default=10, help="permission requests per ACP run")
    ap.add_argument("--runs", type=int, default=2, help="ACP runs per agent")
    ap.add_argument("--pty-runs", type=int, default=3, help="terminal runs per agent (bench/agents.py)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--owt", help="the owt binary (default: target/release/owt, built)")
    args = ap.parse_args()
    owt = pathlib.Path(args.owt) if args.owt else common.build_release()
    offline.agents_dir()
    results = {}
    for agent in args.agents.split(","):
        acp, pty = [], []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"owt-bench-acp-{agent}-") as tmp:
                got = one_run(agent, owt, tmp, args.turns)
            print(f"{agent} ACP run {i + 1}: " + ", ".join(f"{x * 1000:.0f}" for x in got) + " ms",
                  file=sys.stderr, flush=True)
            acp += got
        for i in range(args.pty_runs):
            with tempfile.TemporaryDirectory(prefix=f"owt-bench-acp-pty-{agent}-") as tmp:
                got = pty_bench.one_run(agent, owt, tmp)
            print(f"{agent} PTY run {i + 1}: dialog → blocked {got['dialog'] * 1000:.0f} ms",
                  file=sys.stderr, flush=True)
            pty.append(got["dialog"])
        results[agent] = {"acp": acp, "pty": pty}
    if args.json:
        print(json.dumps(results))
        return
    print("| agent | ACP: request on the wire → blocked, p50 / p95 (n) | "
          "PTY: dialog on screen → blocked, p50 / p95 (n) |")
    print("|---|---|---|")
    for agent, r in results.items():
        a, p = summary(r["acp"]), summary(r["pty"])
        print(f"| {agent} | {a['p50'] * 1000:.0f} / {a['p95'] * 1000:.0f} ms ({a['n']}) | "
              f"{p['p50'] * 1000:.0f} / {p['p95'] * 1000:.0f} ms ({p['n']}) |")


if __name__ == "__main__":
    main()
