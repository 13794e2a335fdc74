/**
 * `hil run --target ssh://...`: the drain suite on a remote machine's RDMA device. hil_kverbs is
 * built here against the kernel the target runs (--kernel), the scenarios are planned and run by
 * the same runner a LAVA job runs (lava/plan.ts, lava/runner.ts), over one SSH command whose output
 * is read as it comes, and judged by the same code (lava/judge.ts) into a run directory. What the
 * emulated device gives that a real one does not: no device faults (those scenarios are SKIP), no
 * hardware trace, no reboot after a hang (the scenarios after it are not run). Whatever happens,
 * the target is cleaned up (deploy.ts), over a new connection when the first one is gone.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { HilError } from "../../util/errors.ts";
import { invocation } from "../../util/invocation.ts";
import { packageVersion } from "../../util/package.ts";
import { progress } from "../../util/progress.ts";
import { TARGET_NO_FAULTS } from "../backend/remote-target.ts";
import { buildKverbsModule } from "../image/kverbs-module.ts";
import { buildKernel } from "../kernel/build.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { writeJudgedRun } from "../lava/judge-log.ts";
import { buildLavaPlan, type LavaPlan, planKernelOf, planWatchdogMs } from "../lava/plan.ts";
import { parseLavaResults } from "../lava/results.ts";
import { LAVA_TAG, lavaRunnerFiles } from "../lava/runner.ts";
import { claimRunDir } from "../rundir/claim.ts";
import type { RunRecord } from "../rundir/schema.ts";
import type { DriverName, OracleProfile, Scenario } from "../scenario/schema.ts";
import { credentials, TargetConnection } from "./connection.ts";
import {
  type CleanupPlan,
  cleanupScript,
  leftBehind,
  runnerCommand,
  shellArchive,
  TARGET_DIR_TEMPLATE,
} from "./deploy.ts";
import {
  checkTargetReady,
  chooseTargetDevice,
  FACTS_SCRIPT,
  parseTargetFacts,
  type TargetDevice,
} from "./facts.ts";
import { parseTargetUrl, targetLabel } from "./url.ts";

export const TARGET_LOG_FILE = "target-log.txt";
const MARGIN_MS = 60_000;
const CLEANUP_TIMEOUT_MS = 60_000;
const LOST_GRACE_MS = 500;

export interface TargetRunRequest {
  target: string;
  identity?: string;
  /** --target-device */
  device?: string;
  kernel: KernelRequest;
  scenarios: readonly Scenario[];
  driver: DriverName;
  profiles?: readonly OracleProfile[];
  runDir: string;
}

/** What verdicts.json records of the target. */
export type TargetRecord = {
  url: string;
  host: string;
  hostKey: string;
  release: string;
  device: string;
  driver: string;
  firmware?: string;
  netdev: string;
  addr: string;
  /** what the cleanup could not take away */
  left?: string[];
};

/** Every watchdog of every planned scenario, and a margin: the runner is stopped after that. */
function runnerBudgetMs(plan: LavaPlan): number {
  return planWatchdogMs(plan) + MARGIN_MS;
}

async function checkRunDirFree(runDir: string): Promise<void> {
  const claim = await claimRunDir(runDir);
  await claim.discard();
}

interface RunnerOutcome {
  output: string;
  /** why the runner's output stopped early, when it did */
  interrupted?: string;
}

async function runRunner(
  conn: TargetConnection,
  dir: string,
  device: TargetDevice,
  plan: LavaPlan,
): Promise<RunnerOutcome> {
  const budgetMs = runnerBudgetMs(plan);
  const stream = await conn.stream(runnerCommand(dir, { SIW_NETDEV: device.netdev }), {
    timeoutMs: budgetMs,
  });
  stream.end();
  let begun = 0;
  let pending = "";
  const off = stream.onStdout((chunk) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const m = new RegExp(`^${LAVA_TAG} begin (\\S+)`).exec(line);
      if (m) progress.info(`[target] ${m[1]} (${++begun}/${plan.scenarios.length})`);
    }
  });
  try {
    const r = await stream.result;
    const done = stream.stdout.includes(`${LAVA_TAG} done`);
    if (done) return { output: stream.stdout };
    // the channel closes before the connection says why
    if (conn.lostReason === undefined) await sleep(LOST_GRACE_MS);
    const lost = conn.lostReason;
    const why = lost
      ? `the SSH connection to ${conn.label} was lost during the run (${lost})`
      : r.exitCode === -1
        ? `the SSH channel to ${conn.label} closed during the run without an exit status${r.signal ? ` (SIG${r.signal})` : ""}`
        : `the runner on ${conn.label} stopped early (exit ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().slice(-300)}` : ""})`;
    return { output: stream.stdout, interrupted: why };
  } catch {
    const lost = conn.lostReason;
    return {
      output: stream.stdout,
      interrupted: lost
        ? `the SSH connection to ${conn.label} was lost during the run (${lost})`
        : `the runner on ${conn.label} did not finish within ${Math.round(budgetMs / 1000)} s (every watchdog of the plan and a minute): stopped`,
    };
  } finally {
    off();
  }
}

/** Cleans up over `conn`, or a new connection when it is gone; what is left, or why it could not. */
async function cleanUp(
  conn: TargetConnection,
  reconnect: () => Promise<TargetConnection>,
  plan: CleanupPlan,
): Promise<string[]> {
  let c = conn;
  let fresh: TargetConnection | undefined;
  try {
    if (c.lostReason !== undefined) {
      progress.info(`[target] reconnecting to ${c.label} to clean up`);
      fresh = await reconnect();
      c = fresh;
    }
    const r = await c.exec("sh -s", { input: cleanupScript(plan), timeoutMs: CLEANUP_TIMEOUT_MS });
    return leftBehind(r.stdout);
  } catch (err) {
    return [
      `everything under ${plan.dir} and hil_kverbs, maybe: the cleanup could not run (${err instanceof Error ? err.message : String(err)})`,
    ];
  } finally {
    fresh?.close();
  }
}

export async function runOnTarget(req: TargetRunRequest): Promise<RunRecord & { target: TargetRecord }> {
  const started = Date.now();
  const made = invocation();
  const address = parseTargetUrl(req.target);
  const label = targetLabel(address);
  const auth = credentials(req.identity);
  await checkRunDirFree(req.runDir);
  const kernel = await buildKernel(req.kernel);
  const mod = await buildKverbsModule(kernel);
  progress.info(`[target] connecting to ${label}`);
  const conn = await TargetConnection.open(address, auth);
  try {
    const facts = parseTargetFacts(await conn.run(FACTS_SCRIPT, "reading what the target has"));
    checkTargetReady(facts, label, kernel.release);
    const device = chooseTargetDevice(facts, req.driver, req.device);
    progress.info(
      `[target] ${label}: Linux ${facts.release}, ${device.name} on ${device.netdev} (${device.addr})`,
    );
    const plan = buildLavaPlan(req.scenarios, {
      hil: packageVersion(),
      kernel: planKernelOf(kernel),
      driver: req.driver,
      addr: device.addr,
      noFaults: TARGET_NO_FAULTS,
      ...(req.profiles ? { profiles: req.profiles } : {}),
    });
    const dir = (
      await conn.run(`mktemp -d ${TARGET_DIR_TEMPLATE}`, "making a directory for the runner")
    ).trim();
    if (!dir.startsWith("/tmp/hil-target."))
      throw new HilError(`${label}: mktemp gave an unexpected directory: ${dir}`);
    const cleanup: CleanupPlan = {
      dir,
      ...(req.driver === "siw" && !facts.devices.some((d) => d.name === device.name)
        ? { siwLink: device.name }
        : {}),
      ...(facts.consoleLevel ? { consoleLevel: facts.consoleLevel } : {}),
    };
    let outcome: RunnerOutcome;
    let left: string[];
    try {
      await conn.run("sh -s", "writing the runner", { input: shellArchive(dir, lavaRunnerFiles(plan)) });
      await conn.copyTo(mod.path, `${dir}/${mod.name}.ko`);
      progress.info(
        `[target] running ${plan.scenarios.length} scenario(s) (${plan.notPlanned.length} left out)`,
      );
      outcome = await runRunner(conn, dir, device, plan);
    } finally {
      left = await cleanUp(conn, () => TargetConnection.open(address, auth), cleanup);
      for (const l of left) progress.info(`[target] left on ${label}: ${l}`);
    }
    const target: TargetRecord = {
      url: label,
      host: address.host,
      hostKey: conn.hostKey,
      release: facts.release,
      device: device.name,
      driver: device.driver,
      ...(device.firmware ? { firmware: device.firmware } : {}),
      netdev: device.netdev,
      addr: device.addr,
      ...(left.length > 0 ? { left } : {}),
    };
    const results = parseLavaResults(outcome.output, `${label}: the runner's output`);
    const record = await writeJudgedRun({
      runDir: req.runDir,
      plan,
      results,
      started,
      log: { file: TARGET_LOG_FILE, text: outcome.output },
      record: { target, ...(made ? { invocation: made } : {}) },
      ...(outcome.interrupted ? { judge: { interrupted: outcome.interrupted } } : {}),
    });
    return { ...record, target };
  } finally {
    conn.close();
  }
}
