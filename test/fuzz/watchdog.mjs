// Watchdog thread of the fuzz engine: an input that blocks the main thread's event loop (a
// synchronous endless loop) never reaches the engine's own timeout, so this thread watches a
// heartbeat in shared memory and, when it stops for `hangMs` during a run, saves the running input
// as a reproducer and kills the process. Plain JavaScript: a worker does not inherit tsx.
//
// workerData: { shared: SharedArrayBuffer, hangMs, crashDir, target }
//   Int32 [0] heartbeat (bumped per run), [1] 1 while a run is in progress, [2] input length;
//   bytes from offset 12: the input.
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync, writeSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";
import { workerData } from "node:worker_threads";

const { shared, hangMs, crashDir, target } = workerData;
const words = new Int32Array(shared, 0, 3);
let last = -1;
let since = Date.now();
let fired = false;
setInterval(async () => {
  if (fired) return;
  const beat = Atomics.load(words, 0);
  if (beat !== last || Atomics.load(words, 1) === 0) {
    last = beat;
    since = Date.now();
    return;
  }
  if (Date.now() - since < hangMs) return;
  fired = true;
  const input = new Uint8Array(shared, 12, Atomics.load(words, 2)).slice();
  const name = createHash("sha1").update(input).digest("hex");
  mkdirSync(crashDir, { recursive: true });
  writeFileSync(join(crashDir, name), input);
  const stack = await mainThreadStack();
  // the main thread relays a worker's process.stderr, and it is blocked: write to fd 2 directly
  writeSync(
    2,
    `${target}: HANG: the event loop was blocked for ${hangMs} ms; reproducer ${join(crashDir, name)}\n${stack}\n`,
  );
  process.kill(process.pid, "SIGKILL");
}, 500);

/** Where the blocked main thread is: pause it through the inspector and read its call frames. */
function mainThreadStack() {
  return new Promise((resolve) => {
    const session = new Session();
    session.connectToMainThread();
    session.on("Debugger.paused", ({ params }) => {
      const frames = params.callFrames.map((f) => ({ ...f, lineNumber: f.location.lineNumber }));
      for (let a = params.asyncStackTrace; a; a = a.parent) frames.push(...a.callFrames);
      resolve(
        frames
          .slice(0, 16)
          .map((f) => `    at ${f.functionName || "(anonymous)"} (${f.url}:${f.lineNumber + 1})`)
          .join("\n"),
      );
    });
    session.post("Debugger.enable", () =>
      session.post("Debugger.setAsyncCallStackDepth", { maxDepth: 16 }, () => session.post("Debugger.pause")),
    );
    setTimeout(() => resolve("    (no stack: the main thread did not pause)"), 3000);
  });
}
