// owt's status plugin for OpenCode: reports what this session does to owt
// (`owt hook --event working|waiting|blocked`), from OpenCode's own events.
// Written by owt under $OWT_HOME and loaded only by the sessions owt starts
// (through OPENCODE_CONFIG_CONTENT); the user's configuration is untouched.
import { spawn } from "node:child_process";

const OWT = __OWT__;

export const OwtStatus = async () => {
  if (!process.env.OWT_SESSION) return {};
  // Sub-agent sessions (the task tool) go busy and idle inside a turn.
  const children = new Set();
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
  return {
    event: async ({ event }) => {
      const p = event.properties || {};
      switch (event.type) {
        case "session.created":
        case "session.updated":
          if (p.info && p.info.parentID) children.add(p.info.id);
          return;
        case "session.status":
          if (children.has(p.sessionID)) return;
          report(p.status && p.status.type === "idle" ? "waiting" : "working");
          return;
        case "session.idle":
          if (!children.has(p.sessionID)) report("waiting");
          return;
        case "permission.asked":
        case "permission.updated":
          report("blocked");
          return;
        case "permission.replied":
          report("working");
          return;
      }
    },
  };
};
