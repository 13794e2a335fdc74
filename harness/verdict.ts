/** Verdict words as KCIDB uses them. */
export const VERDICTS = ["PASS", "FAIL", "ERROR", "MISS", "SKIP"] as const;
export type Verdict = (typeof VERDICTS)[number];

export interface CheckResult {
  id: string;
  title: string;
  verdict: Verdict;
  /** one line saying why */
  reason: string;
  /** quoted evidence: output lines, console lines */
  evidence?: string[];
}

/** Exit codes of `hil run`: 0 all PASS/SKIP, 1 a check failed, 3 the harness could not judge. */
export const EXIT_ALL_PASS = 0;
export const EXIT_FAILED = 1;
export const EXIT_NOT_JUDGED = 3;

export function exitCodeFor(results: readonly CheckResult[]): number {
  if (results.some((r) => r.verdict === "ERROR" || r.verdict === "MISS")) return EXIT_NOT_JUDGED;
  if (results.some((r) => r.verdict === "FAIL")) return EXIT_FAILED;
  return EXIT_ALL_PASS;
}
