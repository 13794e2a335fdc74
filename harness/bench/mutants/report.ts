/** The campaign's text output: one line per series as it finishes, then the figures. */
import type { DriverName } from "../../scenario/schema.ts";
import type { CampaignSummary, Catch, Outcome } from "./classify.ts";
import type { SeriesKind } from "./manifest.ts";

export interface SeriesReport {
  name: string;
  kind: SeriesKind;
  driver: DriverName;
  class: string;
  outcome: Outcome;
  predict?: "caught" | "survives";
  catches: Catch[];
  /**
   * predicted: caught by the scenarios its manifest entry predicts, so the rest of the suite was not
   * run; suite: judged by the whole suite (every benign series, and every mutant those missed)
   */
  scope: "predicted" | "suite";
  /** why the series was not judged (its kernel was not built, or its run judged nothing) */
  invalid?: string;
  /** building its kernel and running the suite, over all its executors */
  wallMs: number;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** Catches grouped per executor and scenario: "post-send-in-error[ib,linux] FAIL rules 1,5". */
export function describeCatches(catches: readonly Catch[]): string[] {
  const groups = new Map<string, Catch[]>();
  for (const c of catches) {
    const id = `${c.executor}\u0000${c.scenario ?? c.key}\u0000${c.patched ?? "-"}`;
    groups.set(id, [...(groups.get(id) ?? []), c]);
  }
  return [...groups.values()].map((cs) => {
    const first = cs[0] as Catch;
    const profiles = cs.map((c) => c.profile).filter(Boolean);
    const where = first.scenario ? `${first.scenario}[${profiles.join(",")}]` : first.key;
    const rules = [...new Set(cs.flatMap((c) => c.rules))];
    const verdict = first.patched ?? "no verdict";
    const exec = first.executor === "kernel" ? "" : ` (${first.executor} executor)`;
    return `${where} ${verdict}${rules.length ? ` rules ${rules.join(",")}` : ""}${exec}`;
  });
}

export function renderSeries(r: SeriesReport): string {
  const surprise =
    r.kind === "mutant" &&
    r.predict &&
    r.outcome !== "invalid" &&
    (r.predict === "caught") !== (r.outcome === "caught")
      ? ` [predicted: ${r.predict}]`
      : "";
  const scope = r.scope === "predicted" ? " [by its predicted scenarios]" : "";
  const head = `${r.outcome.padEnd(10)} ${r.name} on ${r.driver}  (${duration(r.wallMs)})${scope}${surprise}`;
  if (r.invalid) return `${head}\n    not judged: ${r.invalid}\n`;
  const lines = describeCatches(r.catches).map((l) => `    ${l}`);
  return `${[head, ...lines].join("\n")}\n`;
}

/** Mutants caught of mutants written, per driver, in the order the drivers first appear. */
export function catchesByDriver(
  reports: readonly Pick<SeriesReport, "kind" | "driver" | "outcome">[],
): Array<{ driver: DriverName; mutants: number; caught: number }> {
  const rows = new Map<DriverName, { driver: DriverName; mutants: number; caught: number }>();
  for (const r of reports) {
    if (r.kind !== "mutant") continue;
    const row = rows.get(r.driver) ?? { driver: r.driver, mutants: 0, caught: 0 };
    row.mutants += 1;
    if (r.outcome === "caught") row.caught += 1;
    rows.set(r.driver, row);
  }
  return [...rows.values()];
}

export function renderSummary(s: CampaignSummary, byDriver: ReturnType<typeof catchesByDriver> = []): string {
  const rate = s.catchRate === undefined ? "-" : `${Math.round(s.catchRate * 100)}%`;
  const drivers =
    byDriver.length > 1
      ? [`per driver: ${byDriver.map((d) => `${d.driver} ${d.caught} of ${d.mutants}`).join(", ")}`]
      : [];
  return [
    `mutants: ${s.caught} of ${s.mutants} caught (catch rate ${rate}; ${s.caughtByRule} by a rule FAIL, ${s.caught - s.caughtByRule} only by ERROR/MISS), ${s.survived} survived, ${s.invalid} not judged (not built, or nothing ran)`,
    ...drivers,
    `benign: ${s.benign} series, ${s.falseFails} false FAIL(s), ${s.benignNotJudged} with runs not judged`,
    "",
  ].join("\n");
}
