// owt's status extension for Pi: reports each agent run to owt
// (`owt hook --event working|waiting`), from Pi's own agent events.
// Written by owt under $OWT_HOME and loaded only by the sessions owt starts
// (`pi -e <this file>`); the user's extensions and settings are untouched.
import { spawn } from "node:child_process";

const OWT = __OWT__;

export default function (pi) {
  if (!process.env.OWT_SESSION) return;
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
