import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

const CLEANUP = fileURLToPath(new URL("../../util/cleanup.ts", import.meta.url));

/** Runs a script that registers a cleanup touching `marker`, then waits; returns how it ended. */
function child(marker: string, extra: string, signal?: NodeJS.Signals) {
  const script = `
    import { writeFileSync } from "node:fs";
    import { onProcessExit } from ${JSON.stringify(CLEANUP)};
    ${extra}
    onProcessExit(() => writeFileSync(${JSON.stringify(marker)}, "cleaned"));
    process.stdout.write("ready\\n");
    setTimeout(() => process.exit(0), 3000).unref();
    setInterval(() => {}, 1000);
  `;
  const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
  });
  return new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    proc.stdout.once("data", () => {
      if (signal) proc.kill(signal);
    });
    proc.on("exit", (code, sig) => resolve({ code, signal: sig }));
  });
}

t.test("cleanups run on exit and on signals; the process still dies of the signal", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-cleanup-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  const onExit = join(dir, "exit");
  t.same(await child(onExit, ""), { code: 0, signal: null });
  t.ok(existsSync(onExit), "ran at a normal exit");

  const onInt = join(dir, "int");
  t.same(await child(onInt, "", "SIGINT"), { code: null, signal: "SIGINT" });
  t.ok(existsSync(onInt), "ran at SIGINT");

  // execa's cleanup option adds signal-exit's listener, which re-raises only when it is alone.
  const withExeca = `import { execa } from "execa";
    execa("sleep", ["30"], { cleanup: true, reject: false });`;
  const onTerm = join(dir, "term");
  t.same(await child(onTerm, withExeca, "SIGTERM"), { code: null, signal: "SIGTERM" });
  t.ok(existsSync(onTerm), "ran at SIGTERM beside execa's signal-exit listener");

  // An application that handles SIGINT itself keeps control (it exits 0 after the timer).
  const app = `process.on("SIGINT", () => {});`;
  const onApp = join(dir, "app");
  t.same(await child(onApp, app, "SIGINT"), { code: 0, signal: null });
  t.ok(existsSync(onApp));
});
