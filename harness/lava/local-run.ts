/**
 * `hil lava-run`: a job directory from `hil lava-job` run on this machine by Debian's lava-run
 * (a real dispatcher run, not --validate) and its log judged as `hil judge` judges it. The device
 * is LAVA's qemu device type (local-device.ts) with hil's QEMU first on lava-run's PATH and, for
 * erdma, the emulated device's server started before lava-run and stopped after it. Nothing is
 * left behind: lava-run's directory under /var/lib/lava/dispatcher/tmp, the temp dir, a QEMU that
 * outlived lava-run (found by the device socket or temp dir on its command line), the server.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { parse } from "yaml";
import { type AttachedErdma, startErdma } from "../../qemu/device-server/attach.ts";
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { claimRunDir } from "../rundir/claim.ts";
import type { RunRecord } from "../rundir/schema.ts";
import { lavaRunOutcome, lavaRunPath, renderQemuDevice } from "./dispatcher.ts";
import { LAVA_LOG_COPY, readLavaPlan, writeJudgedRun } from "./judge-log.ts";
import { extraArgsAsLavaRunReadsThem, localDeviceOptions } from "./local-device.ts";
import { LAVA_JOB_FILE } from "./make-job.ts";
import { LAVA_PLAN_FILE } from "./plan.ts";
import { flowLogLines, parseLavaResults } from "./results.ts";

/** Where lava-run makes its job's directory (lava_common/constants.py DISPATCHER_DOWNLOAD_DIR's parent). */
const DISPATCHER_TMP = "/var/lib/lava/dispatcher/tmp";
/** The MAC of the guest NIC (qemu.jinja2's mac_addr), which the emulated erdma reports too. */
export const LAVA_GUEST_MAC = "52:54:00:12:34:56";
/** qemu.jinja2's memory when the job's context sets none */
const TEMPLATE_MEMORY_MB = 512;
/** beyond the job's own timeout, how long lava-run may take to give up and clean up */
const LAVA_RUN_MARGIN_MS = 5 * 60_000;

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

interface JobFile {
  timeouts?: { job?: { minutes?: number } };
  context?: Record<string, unknown>;
  actions?: { deploy?: { images?: Record<string, { url?: string }> } }[];
}

function readJob(path: string): JobFile {
  let job: unknown;
  try {
    job = parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new HilError(`not a LAVA job (YAML): ${(err as Error).message}`, { where: path });
  }
  if (!job || typeof job !== "object") throw new HilError("not a LAVA job", { where: path });
  return job as JobFile;
}

/** The job's images must be on this machine: file:// URLs of files that exist. */
function checkImages(job: JobFile, path: string): void {
  for (const action of job.actions ?? []) {
    for (const [label, image] of Object.entries(action.deploy?.images ?? {})) {
      const url = image.url ?? "";
      if (!url.startsWith("file://"))
        throw new HilError(
          `the job fetches its ${label} from ${url}: hil lava-run runs jobs whose images are file:// URLs (hil lava-job without --artifact-url)`,
          { where: path },
        );
      const file = fileURLToPath(url);
      if (!existsSync(file))
        throw new HilError(`the job's ${label} ${file} does not exist (was the job directory moved?)`, {
          where: path,
        });
    }
  }
}

/** QEMU processes whose command line names `marker` (the device socket's dir, the job's temp dir). */
function processesNaming(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (cmdline.includes("qemu-system") && cmdline.includes(marker)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function killQemusNaming(markers: readonly string[]): number {
  let killed = 0;
  for (const marker of markers)
    for (const pid of processesNaming(marker)) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch {
        // gone meanwhile
      }
    }
  return killed;
}

/** lava-run's top-level steps on stderr: "start: 1 tmpfs-deploy", "start: 2 qemu-boot", ... */
function progressLine(line: string): void {
  if (!line.startsWith("{")) return;
  try {
    const { lvl, msg } = JSON.parse(line) as { lvl?: string; msg?: unknown };
    if (lvl === "info" && typeof msg === "string" && /^(start|end): \d+ /.test(msg))
      progress.info(`[lava] ${msg}`);
  } catch {
    // not a log line
  }
}

export async function runLavaJobLocally(
  req: LocalLavaRunRequest,
): Promise<RunRecord & { lava: LocalLavaRecord }> {
  const started = Date.now();
  const lavaRun = lavaRunPath();
  const jobDir = resolve(req.jobDir);
  const jobPath = join(jobDir, LAVA_JOB_FILE);
  const planPath = join(jobDir, LAVA_PLAN_FILE);
  if (!existsSync(jobPath) || !existsSync(planPath))
    throw new HilError(`not a directory hil lava-job wrote (no ${LAVA_JOB_FILE} and ${LAVA_PLAN_FILE})`, {
      where: jobDir,
    });
  const plan = readLavaPlan(planPath);
  const job = readJob(jobPath);
  checkImages(job, jobPath);
  const runDir = resolve(req.runDir);
  await (await claimRunDir(runDir)).discard(); // a used run directory is refused before the job runs

  const memoryMb = Number(job.context?.memory ?? TEMPLATE_MEMORY_MB);
  const jobExtra = Array.isArray(job.context?.extra_options) ? job.context.extra_options.map(String) : [];
  const jobMinutes = Number(job.timeouts?.job?.minutes ?? 60);
  const qemu = await ensureQemu();
  const deviceProfile = plan.driver === "erdma" ? (plan.deviceProfile ?? DEFAULT_PROFILE) : undefined;

  const prefix = `hil-lava-run-${process.pid}-${randomBytes(4).toString("hex")}-`;
  const jobId = "1";
  const lavaTmp = join(DISPATCHER_TMP, `${prefix}${jobId}`);
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
    if (deviceProfile) {
      const step = progress.step(`[device] erdma (${deviceProfile})`);
      try {
        device = await startErdma({
          mac: LAVA_GUEST_MAC,
          profile: deviceProfile,
          onWarning: (line) => progress.info(`[device] ${line}`),
        });
        step.succeed(`server pid ${device.pid}`);
      } catch (err) {
        step.fail();
        throw err;
      }
    }
    const wanted = localDeviceOptions({
      memoryMb,
      firmwareDirs: qemu.firmwareDirs,
      deviceArgs: device?.qemuArgs ?? [],
    });
    const extraOptions = [...wanted.options, ...jobExtra];
    const deviceYaml = await renderQemuDevice({
      memoryMb,
      noKvm: true,
      macAddr: LAVA_GUEST_MAC,
      extraOptions,
      context: job.context ?? {},
    });
    const reached = await extraArgsAsLavaRunReadsThem(deviceYaml);
    if (JSON.stringify(reached.slice(0, wanted.argv.length)) !== JSON.stringify(wanted.argv))
      throw new HilError("the device's extra_options do not reach QEMU as meant", {
        detail: `meant: ${JSON.stringify(wanted.argv)}\nas lava-run reads them: ${JSON.stringify(reached)}`,
      });
    const devicePath = join(work, "device.yaml");
    const dispatcherPath = join(work, "dispatcher.yaml");
    await writeFile(devicePath, deviceYaml);
    await writeFile(dispatcherPath, `prefix: ${JSON.stringify(prefix)}\n`);

    progress.info(`[lava] lava-run ${jobPath} (QEMU ${qemu.version}, ${qemu.binary})`);
    const child = execa(
      lavaRun,
      [
        "--job-id",
        jobId,
        "--output-dir",
        join(work, "output"),
        "--device",
        devicePath,
        "--dispatcher",
        dispatcherPath,
        jobPath,
      ],
      {
        env: { PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}` },
        extendEnv: true,
        reject: false,
        cleanup: true,
        stdin: "ignore",
        all: true,
        buffer: true,
        timeout: jobMinutes * 60_000 + LAVA_RUN_MARGIN_MS,
        lines: false,
      },
    );
    let pending = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const l of lines) progressLine(l);
    });
    const result = await child;
    // the log is on stderr (lava-run's logging.StreamHandler); anything on stdout goes with it
    const log = String(result.all ?? "");
    const outcome = lavaRunOutcome(log);
    const exitCode = result.exitCode ?? -1;
    const passed = exitCode === 0 && outcome.job === "pass";
    const why =
      outcome.jobError ??
      (result.timedOut
        ? `lava-run did not end within the job's ${jobMinutes} minutes and a margin`
        : `lava-run exited with status ${exitCode}`);
    const results = parseLavaResults(log, `lava-run's log of ${jobPath}`);
    if (results.digest === undefined) {
      const console = flowLogLines(log, { consoleOnly: true }).filter((l) => l.trim() !== "");
      throw new HilError(`the LAVA job did not reach hil's runner: ${why}`, {
        where: jobPath,
        exitCode: 3,
        detail: console.length
          ? `the device's console (QEMU's and the guest's output) ended with:\n${console.slice(-10).join("\n")}`
          : `the end of lava-run's log:\n${log.trim().split("\n").slice(-10).join("\n")}`,
      });
    }
    if (results.digest !== plan.digest)
      throw new HilError(`the job's runner printed another plan's digest (${results.digest.slice(0, 16)})`, {
        where: jobDir,
        detail: "the job.yaml and lava-plan.json of a hil lava-job directory belong together",
      });
    const lava: LocalLavaRecord = {
      job: jobPath,
      plan: planPath,
      digest: plan.digest,
      result: passed ? "pass" : "fail",
      ...(passed ? {} : { errors: outcome.errors.length > 0 ? outcome.errors : [why] }),
      exitCode,
      qemu: qemu.binary,
      ...(deviceProfile ? { deviceProfile } : {}),
      complete: results.done,
    };
    const record = await writeJudgedRun({
      runDir,
      plan,
      results,
      started,
      log: { file: LAVA_LOG_COPY, text: log },
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
