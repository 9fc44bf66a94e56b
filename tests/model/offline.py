"""The real agent CLIs offline against the scripted model, from Python (the
status benchmark, the screen recorder): the same settings as
`setup_offline` in tests/src/agents.rs, which the Rust tests use.

    import offline
    env = offline.setup("codex", home, "http://127.0.0.1:PORT", trusted=[repo], ask=True)

Writes the agent's configuration under `home` and returns the environment
to run it with (PATH first finds the pinned CLIs of scripts/install-agents).
"""

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
AGENTS = pathlib.Path(os.environ.get("OWT_TEST_AGENTS", ROOT / ".test-deps" / "agents"))
SERVER = ROOT / "tests" / "model" / "server.py"


def agents_dir():
    if not (AGENTS / ".stamp").is_file():
        raise SystemExit(f"the agent CLIs are not installed in {AGENTS}: run scripts/install-agents")
    return AGENTS


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def setup(agent, home, url, trusted=(), ask=True):
    """Configures `agent` under `home` to use the model at `url` only;
    returns the variables to add to its environment."""
    home = pathlib.Path(home)
    agents = agents_dir()
    env = {"PATH": f"{agents / 'bin'}:{os.environ.get('PATH', '')}"}
    if agent == "claude":
        _write(home / ".claude.json", json.dumps({
            "hasCompletedOnboarding": True,
            "projects": {str(p): {"hasTrustDialogAccepted": True} for p in trusted}}))
        _write(home / ".claude/settings.json",
               json.dumps({"permissions": {"defaultMode": "default" if ask else "acceptEdits"}}))
        env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": "scripted",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                    "DISABLE_AUTOUPDATER": "1"})
    elif agent == "codex":
        toml = (f'model = "mock-model"\nmodel_provider = "mock"\n'
                f'approval_policy = "{"on-request" if ask else "never"}"\nsandbox_mode = "workspace-write"\n\n'
                f'[model_providers.mock]\nname = "Mock"\nbase_url = "{url}/v1"\nenv_key = "MOCK_API_KEY"\n'
                f'wire_api = "responses"\n')
        for p in trusted:
            toml += f'\n[projects."{p}"]\ntrust_level = "trusted"\n'
        _write(home / ".codex/config.toml", toml)
        env["MOCK_API_KEY"] = "scripted"
    elif agent == "opencode":
        config = home / ".config/opencode"
        _write(config / "opencode.json", json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                  "options": {"baseURL": f"{url}/v1", "apiKey": "scripted"},
                                  "models": {"mock-model": {"name": "Mock", "tool_call": True,
                                                            "limit": {"context": 100000, "output": 4096}}}}},
            "model": "mock/mock-model", "small_model": "mock/mock-model", "enabled_providers": ["mock"],
            "autoupdate": False, "share": "disabled",
            "permission": {"edit": "ask", "bash": "ask"} if ask else {"edit": "allow", "bash": "allow"}}))
        # Its plugin SDK, already installed: else OpenCode fetches it from npm.
        subprocess.run(["cp", "-a", str(agents / "opencode-config/node_modules"), str(config)], check=True)
        subprocess.run(["cp", str(agents / "opencode-config/package.json"), str(config)], check=True)
        env.update({"XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
                    "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(home / ".cache")})
        for k in ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_SHARE",
                  "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_DEFAULT_PLUGINS"):
            env[k] = "1"
    elif agent == "aider":
        # A price list that knows the model: else Aider downloads one.
        _write(home / ".aider/caches/model_prices_and_context_window.json", json.dumps({"openai/mock-model": {
            "max_input_tokens": 100000, "max_output_tokens": 4096, "input_cost_per_token": 0.000001,
            "output_cost_per_token": 0.000002, "litellm_provider": "openai", "mode": "chat"}}))
        env.update({"AIDER_MODEL": "openai/mock-model", "OPENAI_API_BASE": f"{url}/v1",
                    "OPENAI_API_KEY": "scripted", "AIDER_ANALYTICS_DISABLE": "true", "AIDER_CHECK_UPDATE": "false",
                    "AIDER_SHOW_MODEL_WARNINGS": "false", "AIDER_SHOW_RELEASE_NOTES": "false",
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        if not ask:
            env["AIDER_YES_ALWAYS"] = "true"
    elif agent == "pi":
        _write(home / ".pi/agent/models.json", json.dumps({"providers": {"mock": {
            "baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "scripted",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "mock-model"}]}}}))
        _write(home / ".pi/agent/settings.json", json.dumps({"defaultProvider": "mock", "defaultModel": "mock-model"}))
        env["PI_OFFLINE"] = "1"  # no downloads of fd and ripgrep
    elif agent == "gemini":
        _write(home / ".gemini/settings.json", json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            # ("tools.autoAccept" does not cover its edit tools.)
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True,
                        "defaultApprovalMode": "default" if ask else "auto_edit"},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "tools": {"autoAccept": not ask}}))
        _write(home / ".gemini/trustedFolders.json", json.dumps({str(p): "TRUST_FOLDER" for p in trusted}))
        env.update({"GEMINI_API_KEY": "scripted", "GOOGLE_GEMINI_BASE_URL": url})
    else:
        raise ValueError(f"no offline setup for {agent}")
    return env


class Model:
    """tests/model/server.py with `script`, its log in `log`; a context
    manager that kills it."""

    def __init__(self, script, directory):
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.script_file = directory / "model-script.json"
        self.script_file.write_text(json.dumps(script))
        self.log = directory / "model-log.jsonl"
        self.proc = subprocess.Popen(["python3", str(SERVER), "--script", str(self.script_file),
                                      "--log", str(self.log)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the scripted model did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self):
        """The log's requests in arrival order, `end` joined in."""
        out, by_seq = [], {}
        if not self.log.exists():
            return out
        for line in self.log.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("event") == "begin":
                r["begin"] = r["t"]
                r["end"] = None
                by_seq[r["seq"]] = r
                out.append(r)
            elif r.get("event") == "end" and r["seq"] in by_seq:
                by_seq[r["seq"]]["end"] = r["t"]
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
