// hil report: each format from a run directory to stdout or a file, and bad input (a missing or
// corrupt run directory, a corrupt trace, an --out that cannot be written) as one error naming the
// file, exit code 2.
import { chmodSync, readdirSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { externalFaultReason } from "../../harness/backend/external-socket.ts";
import { registerReportCommand } from "../../harness/cli/report-command.ts";
import { renderHtml } from "../../harness/report/html.ts";
import { renderJunit } from "../../harness/report/junit.ts";
import { renderKcidb } from "../../harness/report/kcidb.ts";
import { validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { renderKtap } from "../../harness/report/ktap.ts";
import { deviceOf, loadRunDir } from "../../harness/rundir/read.ts";
import { HilError } from "../../util/errors.ts";
import { syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { runInProcess } from "../support/in-process.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

async function hil(...args: string[]): Promise<{ stdout: string; err?: unknown }> {
  const { stdout, err } = await runInProcess(registerReportCommand, ["report", ...args]);
  return err === undefined ? { stdout } : { stdout, err };
}

t.test("formats to stdout and to files", async (t) => {
  const ktap = await hil(FIXTURE, "--format", "ktap");
  t.equal(ktap.err, undefined);
  t.match(ktap.stdout, /^KTAP version 1\n/);
  const out = join(t.testdir({}), "r.xml");
  const junit = await hil(FIXTURE, "--format", "junit", "--out", out);
  t.equal(junit.stdout, "", "nothing on stdout when --out is given");
  t.match(await readFile(out, "utf8"), /^<\?xml version="1.0"/);
  const dir = await writeRunDir(syntheticRecord());
  t.equal((await hil(dir, "--format", "html")).err, undefined);
  t.match(
    await readFile(join(dir, "report.html"), "utf8"),
    /<!DOCTYPE html>/,
    "html goes to <run-dir>/report.html",
  );
  const kcidb = await hil(dir, "--format", "kcidb");
  t.same(JSON.parse(kcidb.stdout).version, { major: 5, minor: 0 });
  const bad = await hil(dir, "--format", "pdf");
  t.match(bad.err, { code: "commander.invalidArgument" });
});

t.test("bad input: one error naming the file, exit 2", async (t) => {
  const missing = join(tmpdir(), "hil-no-such-run-dir");
  const a = await hil(missing, "--format", "ktap");
  t.ok(a.err instanceof HilError);
  t.match(a.err, { exitCode: 2, where: missing, message: /does not exist/ });

  const empty = t.testdir({});
  t.match((await hil(empty, "--format", "junit")).err, {
    exitCode: 2,
    where: empty,
    message:
      /^neither a run directory \(no verdicts\.json: hil run\) nor a matrix directory \(no matrix\.json/,
  });

  const notJson = await writeRunDir(undefined, "{ truncated");
  t.match((await hil(notJson, "--format", "kcidb")).err, {
    exitCode: 2,
    where: join(notJson, "verdicts.json"),
    message: "verdicts.json is not JSON",
  });

  const wrongShape = await writeRunDir({ kernel: 3, results: "none" });
  const w = (await hil(wrongShape, "--format", "ktap")).err as HilError;
  t.match(w, { exitCode: 2, message: "verdicts.json is not a hil run record" });
  t.match(w.detail, /kernel/);

  const rec = syntheticRecord() as { scenarios: Array<Record<string, unknown>> };
  (rec.scenarios[0] as Record<string, unknown>).trace = "traces/s-fail.jsonl";
  const torn = await writeRunDir(rec);
  const { mkdir } = await import("node:fs/promises");
  await mkdir(join(torn, "traces"));
  await writeFile(join(torn, "traces", "s-fail.jsonl"), '{"seq":1,"ns":1,"ev":"nope"}\n');
  t.match((await hil(torn, "--format", "html")).err, {
    exitCode: 2,
    where: join(torn, "traces", "s-fail.jsonl"),
    message: /trace line 1 is not a valid record/,
  });

  const hwRec = syntheticRecord() as { scenarios: Array<Record<string, unknown>> };
  Object.assign(hwRec.scenarios[0] as Record<string, unknown>, {
    trace: "traces/s-fail.jsonl",
    hwTrace: "traces/s-fail.hw.jsonl",
  });
  const badHw = await writeRunDir(hwRec);
  await mkdir(join(badHw, "traces"));
  const real = (name: string) => readFile(join(FIXTURE, "traces", name), "utf8");
  await writeFile(join(badHw, "traces", "s-fail.jsonl"), await real("drain-sq-idle.jsonl"));
  const [firstHw] = (await real("drain-sq-idle.hw.jsonl")).split("\n");
  await writeFile(
    join(badHw, "traces", "s-fail.hw.jsonl"),
    `${firstHw}\n{"t":1,"dev":"erdma","kind":"wqe","qpn":1,"queue":"sq"}\n`,
  );
  const hw = (await hil(badHw, "--format", "html")).err as HilError;
  t.match(hw, {
    exitCode: 2,
    where: join(badHw, "traces", "s-fail.hw.jsonl"),
    message: "hardware trace line 2 is not an erdma device event",
  });
  t.match(hw.detail, /^index: /m, "what is wrong with it");
});

t.test(
  "a run on an external device (--device-socket): every format reads it and names the device",
  async (t) => {
    const sock = "/run/cosim/erdma.sock";
    const rec = syntheticRecord() as Record<string, unknown> & { scenarios: Array<Record<string, unknown>> };
    delete rec.deviceProfile;
    rec.device = { external: sock, mac: "52:54:00:12:34:56" };
    const miss = rec.scenarios.find((s) => s.name === "s-miss") as Record<string, unknown>;
    miss.outcome = { verdict: "MISS", reason: externalFaultReason(sock) };
    const run = await loadRunDir(await writeRunDir(rec));
    t.same(deviceOf(run), { kind: "external", socket: sock });

    const ktap = renderKtap(run);
    t.match(
      ktap,
      /^# erdma-hil: kernel .*, driver erdma, executor kernel, external device \/run\/cosim\/erdma\.sock$/m,
    );
    t.notMatch(ktap, /device profile/);
    t.match(ktap, /has no fault control/, "the MISS says why");

    const junit = renderJunit(run);
    t.match(junit, `<property name="device.external" value="${sock}"/>`);
    t.notMatch(junit, /device\.profile/);

    const kcidb = await renderKcidb(run);
    const env = kcidb.tests[0]?.environment as { comment: string; misc: Record<string, unknown> };
    t.match(env.comment, `external vfio-user device (${sock})`);
    t.same(env.misc.device_external, sock);
    t.equal(env.misc.device_profile, undefined);
    const valid = await validateKcidb(kcidb);
    t.same(valid.errors, [], "still valid KCIDB");

    const html = await renderHtml(run);
    t.match(html, `external device ${sock}`);
    t.match(html, /has no fault control/);

    // the emulated device as before, through the record's device or its deviceProfile
    const emulated = syntheticRecord();
    emulated.device = { profile: "erdma-2022", trace: "hw-trace.jsonl" };
    t.match(renderKtap(await loadRunDir(await writeRunDir(emulated))), /, device profile erdma-2022$/m);
    // a device with neither is not a run record
    const neither = syntheticRecord();
    delete neither.deviceProfile;
    neither.device = { trace: "hw-trace.jsonl" };
    await t.rejects(loadRunDir(await writeRunDir(neither)), {
      message: "verdicts.json is not a hil run record",
      detail: /device: a device has a profile \(the emulated one\), an external socket or a host PCI address/,
    });
  },
);

t.test("an --out that cannot be written: one error at once, no stack, nothing left behind", async (t) => {
  const { execa } = await import("execa");
  const { HIL_BIN } = await import("../support/cli.ts");
  const run = (out: string) =>
    execa(HIL_BIN, ["report", FIXTURE, "--format", "ktap", "--out", out], {
      reject: false,
      timeout: 120_000,
      stdin: "ignore",
    });
  // Node's recursive mkdir spun here at 100 % CPU forever: /proc says ENOENT for any new name
  const proc = await run("/proc/nope/x.html");
  t.equal(proc.timedOut, false, "it ends");
  t.equal(proc.exitCode, 2);
  t.equal(proc.stdout, "");
  const lines = String(proc.stderr).trimEnd().split("\n");
  t.equal(lines[0], "hil: error: /proc/nope/x.html: cannot write the report", "one error naming --out");
  t.match(lines.slice(1).join("\n"), /ENOENT: no such file or directory, mkdir '\/proc\/nope'/, "and why");
  t.notMatch(proc.stderr, /^\s+at /m, "no stack");

  const root = t.testdir({ file: "x", dir: {} });
  const notDir = await run(join(root, "file", "x.html"));
  t.equal(notDir.exitCode, 2);
  t.match(notDir.stderr, /cannot write the report\n.*ENOTDIR/);
  const isDir = await run(join(root, "dir"));
  t.equal(isDir.exitCode, 2, "a directory in the way of the rename");
  t.match(isDir.stderr, `hil: error: ${join(root, "dir")}: cannot write the report`);
  const { readdir } = await import("node:fs/promises");
  t.same((await readdir(root)).sort(), ["dir", "file"], "no temporary file left beside it");
  t.same(await readdir(join(root, "dir")), []);
});

/** `fn` with $HIL_CHROMIUM set to `value`, restored after. */
async function withBrowser<T>(value: string, fn: () => Promise<T>): Promise<T> {
  const before = process.env.HIL_CHROMIUM;
  process.env.HIL_CHROMIUM = value;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.HIL_CHROMIUM;
    else process.env.HIL_CHROMIUM = before;
  }
}

t.test(
  "--screenshot without a browser, or with one that fails: an error, and no report written",
  async (t) => {
    const dir = await writeRunDir(syntheticRecord());
    const before = readdirSync(dir).sort();
    const missing = await withBrowser(join(dir, "no-such-chromium"), () =>
      hil(dir, "--format", "html", "--screenshot"),
    );
    t.ok(missing.err instanceof HilError);
    t.match(
      (missing.err as HilError).message,
      /\$HIL_CHROMIUM names .*no-such-chromium, which is not an executable file/,
    );
    t.same(readdirSync(dir).sort(), before, "no report.html, no report.png, no temporary file");
    const bin = join(t.testdir({}), "broken-chromium");
    writeFileSync(bin, "#!/bin/sh\necho 'cannot start' >&2\nexit 3\n");
    chmodSync(bin, 0o755);
    const broken = await withBrowser(bin, () => hil(dir, "--format", "html", "--screenshot"));
    t.ok(broken.err instanceof HilError);
    t.match((broken.err as HilError).message, /headless chromium exited with status 3/);
    t.same(readdirSync(dir).sort(), before, "the page is not kept without its picture; nothing half-written");
    t.equal((await hil(dir, "--format", "html")).err, undefined, "without --screenshot no browser is needed");
    t.ok(readdirSync(dir).includes("report.html"));
  },
);
