// owt's status extension for Pi: reports each agent run to owt
// (`owt hook --event working|waiting`), from Pi's own agent events, and
// asks Conflict Guard before each edit (`owt hook --pre-edit`).
// Written by owt under $OWT_HOME and loaded only by the sessions owt starts
// (`pi -e <this file>`); the user's extensions and settings are untouched.
// (`spawn`, `OWT`, `asClaudeCall` and `askGuard` are in guard-ask.js,
// which owt appends to this file.)

export default function (pi) {
  if (!process.env.OWT_SESSION) return;
  // Conflict Guard ([guard] pre_edit): `block` refuses the edit (the
  // reason is the tool's result the model reads); `warn` lets it through
  // and adds who else is there to the tool's result. Any failure allows
  // the edit (a throwing handler would block it).
  const warnings = new Map();
  pi.on("tool_call", async (event, ctx) => {
    try {
      const cwd = (ctx && ctx.cwd) || process.cwd();
      const call = asClaudeCall(event.toolName, event.input, cwd);
      if (!call) return;
      const answer = await askGuard(call, cwd);
      if (!answer) return;
      if (answer.permissionDecision === "deny") return { block: true, reason: answer.permissionDecisionReason };
      if (answer.additionalContext) warnings.set(event.toolCallId, answer.additionalContext);
    } catch {
      return;
    }
  });
  pi.on("tool_result", async (event) => {
    const warning = warnings.get(event.toolCallId);
    if (!warning) return;
    warnings.delete(event.toolCallId);
    return { content: [...(event.content || []), { type: "text", text: warning }] };
  });
  let last = null;
  let queue = Promise.resolve();
  // One `owt hook` at a time, in event order; repeats are dropped.
  const report = (event) => {
    if (event === last) return;
    last = event;
    queue = queue.then(
      () =>
        new Promise((resolve) => {
          const child = spawn(OWT, ["hook", "--event", event], { stdio: "ignore" });
          child.on("exit", resolve);
          child.on("error", resolve);
        }),
    );
  };
  pi.on("agent_start", async () => report("working"));
  pi.on("agent_end", async () => report("waiting"));
}
