/**
 * `hil lava-run`: a job directory from `hil lava-job` run on this machine by Debian's lava-run
 * (a real dispatcher run, not --validate) and its log judged as `hil judge` judges it. The device
 * is LAVA's qemu device type (local-device.ts) with hil's QEMU first on lava-run's PATH and, for
 * erdma, the emulated device's server started before lava-run and stopped after it. Nothing is
 * left behind: lava-run's directory under /var/lib/lava/dispatcher/tmp, the temp dir, a QEMU that
 * outlived lava-run (found by that directory or the device socket on its command line), the server.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execa } from "execa";
import { type AttachedErdma, startErdma } from "../../qemu/device-server/attach.ts";
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import type { QemuInstall } from "../../qemu/launch/types.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { claimRunDir } from "../rundir/claim.ts";
import type { RunRecord } from "../rundir/schema.ts";
import { lavaRunOutcome, lavaRunPath, renderQemuDevice } from "./dispatcher.ts";
import { LAVA_LOG_COPY, writeJudgedRun } from "./judge-log.ts";
import { extraArgsAsLavaRunReadsThem, localDeviceOptions } from "./local-device.ts";
import { type LocalJob, readLocalJob } from "./local-job.ts";
import { flowLogLines, type LavaResults, parseLavaResults } from "./results.ts";

/** Where lava-run makes its job's directory (lava_common/constants.py DISPATCHER_DOWNLOAD_DIR's parent). */
const DISPATCHER_TMP = "/var/lib/lava/dispatcher/tmp";
/** The MAC of the guest NIC (qemu.jinja2's mac_addr), which the emulated erdma reports too. */
export const LAVA_GUEST_MAC = "52:54:00:12:34:56";
/** beyond the job's own timeout, how long lava-run may take to give up and clean up */
const LAVA_RUN_MARGIN_MS = 5 * 60_000;
const JOB_ID = "1";

export interface LocalLavaRunRequest {
  /** a directory hil lava-job wrote */
  jobDir: string;
  runDir: string;
}

/** What verdicts.json records of the lava-run. */
export interface LocalLavaRecord {
  job: string;
  plan: string;
  digest: string;
  /** LAVA's result of the job: pass, or fail with its errors */
  result: "pass" | "fail";
  errors?: string[];
  exitCode: number;
  qemu: string;
  deviceProfile?: string;
  complete: boolean;
}

/** QEMU processes whose command line names one of `markers`, killed; how many. */
function killQemusNaming(markers: readonly string[]): number {
  let killed = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!cmdline.includes("qemu-system") || !markers.some((m) => cmdline.includes(m))) continue;
      process.kill(Number(name), "SIGKILL");
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/** lava-run's top-level steps on stderr: "start: 1 deployimages", "end: 2 boot-image-retry", ... */
function progressLine(line: string): void {
  if (!line.startsWith("{")) return;
  try {
    const { lvl, msg } = JSON.parse(line) as { lvl?: string; msg?: unknown };
    if (lvl === "info" && typeof msg === "string" && /^(start|end): \d+ /.test(msg))
      progress.info(`[lava] ${msg}`);
  } catch {
    // not a log line JSON can read: no progress from it
  }
}

async function startDevice(profile: string): Promise<AttachedErdma> {
  const step = progress.step(`[device] erdma (${profile})`);
  try {
    const device = await startErdma({
      mac: LAVA_GUEST_MAC,
      profile,
      onWarning: (line) => progress.info(`[device] ${line}`),
    });
    step.succeed(`server pid ${device.pid}`);
    return device;
  } catch (err) {
    step.fail();
    throw err;
  }
}

/** The device configuration lava-run takes, checked to give QEMU the arguments meant. */
async function localDeviceYaml(
  job: LocalJob,
  qemu: QemuInstall,
  device: AttachedErdma | undefined,
): Promise<string> {
  const wanted = localDeviceOptions({
    memoryMb: job.memoryMb,
    firmwareDirs: qemu.firmwareDirs,
    deviceArgs: device?.qemuArgs ?? [],
  });
  // the device dictionary's extra_options replace the job context's: the job's own go after
  const yaml = await renderQemuDevice({
    memoryMb: job.memoryMb,
    noKvm: true,
    macAddr: LAVA_GUEST_MAC,
    extraOptions: [...wanted.options, ...job.extraOptions],
    context: job.context,
  });
  const reached = await extraArgsAsLavaRunReadsThem(yaml);
  if (JSON.stringify(reached.slice(0, wanted.argv.length)) !== JSON.stringify(wanted.argv))
    throw new HilError("the device's extra_options do not reach QEMU as meant", {
      detail: `meant: ${JSON.stringify(wanted.argv)}\nas lava-run reads them: ${JSON.stringify(reached)}`,
    });
  return yaml;
}

interface LavaRunResult {
  /** lava-run's log (its stderr, with anything it printed on stdout) */
  log: string;
  exitCode: number;
  timedOut: boolean;
}

async function spawnLavaRun(
  args: readonly string[],
  pathFirst: string,
  timeoutMs: number,
): Promise<LavaRunResult> {
  const child = execa(lavaRunPath(), [...args], {
    env: { PATH: `${pathFirst}:${process.env.PATH ?? "/usr/bin:/bin"}` },
    extendEnv: true,
    reject: false,
    cleanup: true,
    stdin: "ignore",
    all: true,
    buffer: true,
    timeout: timeoutMs,
    lines: false,
  });
  let pending = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const l of lines) progressLine(l);
  });
  const r = await child;
  return { log: String(r.all ?? ""), exitCode: r.exitCode ?? -1, timedOut: r.timedOut };
}

/** The runner's results in lava-run's log; a job that never reached the runner is one error saying why. */
function runnerResults(job: LocalJob, log: string, why: string): LavaResults {
  const results = parseLavaResults(log, `lava-run's log of ${job.jobPath}`);
  if (results.digest === undefined) {
    const console = flowLogLines(log, { consoleOnly: true }).filter((l) => l.trim() !== "");
    throw new HilError(`the LAVA job did not reach hil's runner: ${why}`, {
      where: job.jobPath,
      exitCode: 3,
      detail: console.length
        ? `the device's console (QEMU's and the guest's output) ended with:\n${console.slice(-10).join("\n")}`
        : `the end of lava-run's log:\n${log.trim().split("\n").slice(-10).join("\n")}`,
    });
  }
  if (results.digest !== job.plan.digest)
    throw new HilError(`the job's runner printed another plan's digest (${results.digest.slice(0, 16)})`, {
      where: job.dir,
      detail: "the job.yaml and lava-plan.json of a hil lava-job directory belong together",
    });
  return results;
}

export async function runLavaJobLocally(
  req: LocalLavaRunRequest,
): Promise<RunRecord & { lava: LocalLavaRecord }> {
  const started = Date.now();
  lavaRunPath(); // missing: said before anything starts
  const job = readLocalJob(req.jobDir);
  const runDir = resolve(req.runDir);
  await (await claimRunDir(runDir)).discard(); // a used run directory is refused before the job runs
  const qemu = await ensureQemu();
  const { plan } = job;
  const deviceProfile = plan.driver === "erdma" ? (plan.deviceProfile ?? DEFAULT_PROFILE) : undefined;

  const prefix = `hil-lava-run-${process.pid}-${randomBytes(4).toString("hex")}-`;
  const lavaTmp = join(DISPATCHER_TMP, `${prefix}${JOB_ID}`);
  const work = await mkdtemp(join(tmpdir(), "hil-lava-run-"));
  let device: AttachedErdma | undefined;
  // QEMU's command line names the images in lava-run's directory, and the device's socket
  const markers = () => [lavaTmp, ...(device ? [device.socketPath] : [])];
  const unregister = onProcessExit(() => {
    killQemusNaming(markers());
    rmSync(work, { recursive: true, force: true });
    rmSync(lavaTmp, { recursive: true, force: true });
  });
  try {
    // lava-run finds qemu-system-x86_64 on its PATH (which() in actions/boot/qemu.py)
    const bin = join(work, "bin");
    await mkdir(bin);
    await symlink(qemu.binary, join(bin, "qemu-system-x86_64"));
    if (deviceProfile) device = await startDevice(deviceProfile);
    const devicePath = join(work, "device.yaml");
    const dispatcherPath = join(work, "dispatcher.yaml");
    await writeFile(devicePath, await localDeviceYaml(job, qemu, device));
    await writeFile(dispatcherPath, `prefix: ${JSON.stringify(prefix)}\n`);

    progress.info(`[lava] lava-run ${job.jobPath} (QEMU ${qemu.version}, ${qemu.binary})`);
    const args = ["--job-id", JOB_ID, "--output-dir", join(work, "output")];
    args.push("--device", devicePath, "--dispatcher", dispatcherPath, job.jobPath);
    const ran = await spawnLavaRun(args, bin, job.jobMinutes * 60_000 + LAVA_RUN_MARGIN_MS);
    const outcome = lavaRunOutcome(ran.log);
    const passed = ran.exitCode === 0 && outcome.job === "pass";
    const why =
      outcome.jobError ??
      (ran.timedOut
        ? `lava-run did not end within the job's ${job.jobMinutes} minutes and a margin`
        : `lava-run exited with status ${ran.exitCode}`);
    const results = runnerResults(job, ran.log, why);
    const lava: LocalLavaRecord = {
      job: job.jobPath,
      plan: job.planPath,
      digest: plan.digest,
      result: passed ? "pass" : "fail",
      ...(passed ? {} : { errors: outcome.errors.length > 0 ? outcome.errors : [why] }),
      exitCode: ran.exitCode,
      qemu: qemu.binary,
      ...(deviceProfile ? { deviceProfile } : {}),
      complete: results.done,
    };
    const record = await writeJudgedRun({
      runDir,
      plan,
      results,
      started,
      log: { file: LAVA_LOG_COPY, text: ran.log },
      record: { lava },
      ...(passed ? {} : { judge: { interrupted: `the LAVA job failed: ${why}` } }),
    });
    return { ...record, lava };
  } finally {
    const killed = killQemusNaming(markers());
    if (killed > 0) progress.info(`[lava] stopped ${killed} QEMU lava-run left running`);
    await device?.stop();
    await rm(work, { recursive: true, force: true });
    await rm(lavaTmp, { recursive: true, force: true });
    unregister();
  }
}
