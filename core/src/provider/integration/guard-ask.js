
// --- Conflict Guard before an edit (guard-ask.js, shared by owt's OpenCode
// plugin and Pi extension; appended to each by owt). Nothing is exported.
import { spawn } from "node:child_process";
import { isAbsolute, join } from "node:path";

const OWT = __OWT__;

// An edit tool's call as Claude Code's `PreToolUse` input, the one
// `owt hook --pre-edit` reads; null for any other tool. OpenCode: `write
// {filePath, content}`, `edit {filePath, oldString}`; Pi: `write {path,
// content}`, `edit {path, edits: [{oldText}]}`.
function asClaudeCall(tool, args, cwd) {
  if (!args) return null;
  const path = typeof args.filePath === "string" ? args.filePath : args.path;
  if (typeof path !== "string") return null;
  const file_path = isAbsolute(path) ? path : join(cwd, path);
  if (tool === "write" && typeof args.content === "string") {
    return { tool_name: "Write", tool_input: { file_path, content: args.content } };
  }
  if (tool === "edit" && typeof args.oldString === "string") {
    return { tool_name: "Edit", tool_input: { file_path, old_string: args.oldString } };
  }
  if (tool === "edit" && Array.isArray(args.edits)) {
    const edits = args.edits.filter((e) => e && typeof e.oldText === "string").map((e) => ({ old_string: e.oldText }));
    return { tool_name: "MultiEdit", tool_input: { file_path, edits } };
  }
  return null;
}

// `owt hook --pre-edit`'s answer (the `hookSpecificOutput` of Claude Code's
// hook output), or null: owt fails open, and so does this (an error or
// 10 s without an answer allows the edit).
function askGuard(call, cwd) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(OWT, ["hook", "--pre-edit"], { cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      return resolve(null);
    }
    const timer = setTimeout(() => child.kill(), 10000);
    child.stdout.on("data", (d) => (out += d));
    child.on("error", () => resolve(null));
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out).hookSpecificOutput || null);
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ hook_event_name: "PreToolUse", cwd, ...call }));
  });
}
