// Started by rundir-claim.test.ts: claims the run directory given as its argument (as a run does),
// prints its pid once it holds it, and waits to be stopped by a signal.
import { claimRunDir } from "../../harness/rundir/claim.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: hold-run-dir.ts <dir>");
await claimRunDir(dir);
process.stdout.write(`${JSON.stringify({ pid: process.pid })}\n`);
await new Promise(() => setInterval(() => {}, 1000));
