import type { CheckResult } from "../verdict.ts";

/** A plain-text verdict table: one row a check, then a summary line a CI log shows. */
export function renderVerdictTable(results: readonly CheckResult[]): string {
  const idWidth = Math.max(5, ...results.map((r) => r.id.length));
  const lines = [`${"check".padEnd(idWidth)}  verdict  reason`];
  for (const r of results) lines.push(`${r.id.padEnd(idWidth)}  ${r.verdict.padEnd(7)}  ${r.reason}`);
  lines.push(summaryLine(results));
  return `${lines.join("\n")}\n`;
}

/**
 * `hil: 75 passed, 0 failed, 3 xfail (2 injected faults, 1 known bug), 1 xpass (known bug not
 * seen), 2 miss`: zero counts after "failed" left out.
 */
export function summaryLine(results: readonly CheckResult[]): string {
  const count = (v: string) => results.filter((r) => r.verdict === v).length;
  const passed = count("PASS");
  const failed = count("FAIL");
  const words: Record<string, string> = {
    XFAIL: `xfail (${xfailCauses(results.filter((r) => r.verdict === "XFAIL"))})`,
    XPASS: "xpass (known bug not seen)",
  };
  const others = ["XFAIL", "XPASS", "ERROR", "MISS", "SKIP"]
    .map((v) => [v, count(v)] as const)
    .filter(([, n]) => n > 0)
    .map(([v, n]) => `, ${n} ${words[v] ?? v.toLowerCase()}`)
    .join("");
  return `hil: ${passed} passed, ${failed} failed${others}`;
}

/** "2 injected faults, 1 known bug": what made the XFAILs expected (a record without the cause: "expected"). */
function xfailCauses(xfails: readonly CheckResult[]): string {
  const n = (by: CheckResult["expectedBy"]) => xfails.filter((r) => r.expectedBy === by).length;
  const parts: [number, string, string][] = [
    [n("injected fault"), "injected fault", "injected faults"],
    [n("known bug"), "known bug", "known bugs"],
    [n(undefined), "expected", "expected"],
  ];
  return parts
    .filter(([k]) => k > 0)
    .map(([k, one, many]) => `${k} ${k === 1 ? one : many}`)
    .join(", ");
}
