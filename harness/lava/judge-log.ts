/**
 * `hil judge`: a LAVA job's log judged against the plan hil lava-job wrote for it, into a run
 * directory like hil run's (verdicts.json, traces/<scenario>.jsonl, the log as it came).
 */
import { join, resolve } from "node:path";
import { HilError } from "../../util/errors.ts";
import { makeDir } from "../../util/make-dir.ts";
import { packageVersion } from "../../util/package.ts";
import { readUserText } from "../../util/user-file.ts";
import { writeClaimedRun } from "../rundir/claim.ts";
import { TRACE_DIR } from "../rundir/layout.ts";
import type { RunRecord } from "../rundir/schema.ts";
import { writeRunFile } from "../rundir/write.ts";
import { suiteResults } from "../suite/results.ts";
import { type JudgeResultsOptions, judgeLavaResults } from "./judge.ts";
import { LAVA_PLAN_FORMAT, type LavaPlan } from "./plan.ts";
import { type LavaResults, parseLavaResults } from "./results.ts";

export const LAVA_LOG_COPY = "lava-log.txt";

export function readLavaPlan(path: string): LavaPlan {
  const text = readUserText(path, "LAVA plan");
  let plan: unknown;
  try {
    plan = JSON.parse(text);
  } catch (err) {
    throw new HilError("not a LAVA plan (JSON)", { where: path, detail: (err as Error).message });
  }
  const p = plan as Partial<LavaPlan> | null;
  if (
    !p ||
    typeof p !== "object" ||
    p.format !== LAVA_PLAN_FORMAT ||
    !Array.isArray(p.scenarios) ||
    !p.digest
  )
    throw new HilError(`not a plan hil lava-job wrote (format ${LAVA_PLAN_FORMAT}, digest, scenarios)`, {
      where: path,
    });
  return p as LavaPlan;
}

export async function judgeLavaLog(opts: { log: string; plan: string; runDir: string }): Promise<RunRecord> {
  const started = Date.now();
  const plan = readLavaPlan(resolve(opts.plan));
  const logPath = resolve(opts.log);
  const text = readUserText(logPath, "LAVA log");
  const results = parseLavaResults(text, logPath);
  if (results.digest === undefined)
    throw new HilError("the log holds no output of hil's LAVA runner (no HIL-LAVA plan line)", {
      where: logPath,
    });
  if (results.digest !== plan.digest)
    throw new HilError(
      `the log was made by another plan (${results.digest.slice(0, 16)}, not ${plan.digest.slice(0, 16)})`,
      {
        where: logPath,
        detail: `give the lava-plan.json of the hil lava-job directory the job ran (--plan)`,
      },
    );
  return writeJudgedRun({
    runDir: opts.runDir,
    plan,
    results,
    started,
    log: { file: LAVA_LOG_COPY, text },
    record: { lava: { plan: resolve(opts.plan), log: logPath, digest: plan.digest, complete: results.done } },
  });
}

export interface JudgedRunRequest {
  runDir: string;
  plan: LavaPlan;
  results: LavaResults;
  /** when the run began (epoch ms) */
  started: number;
  /** the runner's output as it came, kept in the run directory */
  log: { file: string; text: string };
  /** what else verdicts.json records of where the plan ran */
  record: Partial<RunRecord>;
  judge?: JudgeResultsOptions;
}

/** The runner's results judged against their plan, written as a run directory (verdicts.json last). */
export async function writeJudgedRun(req: JudgedRunRequest): Promise<RunRecord> {
  const { plan } = req;
  const { report, traces } = judgeLavaResults(plan, req.results, req.judge);
  const runDir = resolve(req.runDir);
  return writeClaimedRun(runDir, async () => {
    await writeRunFile(runDir, req.log.file, req.log.text);
    await makeDir(join(runDir, TRACE_DIR));
    for (const s of report.scenarios) {
      const records = traces.get(s.name);
      if (!records) continue;
      s.trace = `${TRACE_DIR}/${s.name}.jsonl`;
      await writeRunFile(runDir, s.trace, records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    }
    return {
      kernel: plan.kernel.describe,
      release: plan.kernel.release,
      ...report,
      startedAt: new Date(req.started).toISOString(),
      versions: { hil: packageVersion(), kernel: { spec: plan.kernel.base, release: plan.kernel.release } },
      wallMs: Date.now() - req.started,
      results: suiteResults(report),
      ...req.record,
    };
  });
}
