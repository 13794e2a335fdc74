import { readFileSync } from "node:fs";
import { join } from "node:path";
import { verdictMap } from "../../harness/rundir/verdict-list.ts";
import type { JobRecord } from "../../harness/workflows/job/job.ts";

/** A matrix directory's verdicts: job id -> (verdict key -> verdict), in matrix.json's order. */
export function matrixVerdicts(dir: string): Record<string, Record<string, string>> {
  const index = JSON.parse(readFileSync(join(dir, "matrix.json"), "utf8"));
  const out: Record<string, Record<string, string>> = {};
  for (const j of index.jobs as { id: string; runDir: string }[]) {
    const record = JSON.parse(readFileSync(join(dir, j.runDir, "verdicts.json"), "utf8")) as JobRecord;
    out[j.id] = Object.fromEntries(verdictMap(record));
  }
  return out;
}
