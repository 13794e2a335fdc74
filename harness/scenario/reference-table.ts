/**
 * fixtures/scenarios/README.md's section "Every scenario": one row per scenario file, its name,
 * the drivers it is meant for, the rules it covers, its premise and its description.
 * test/unit/scenario-reference.test.ts keeps the README's copy equal to it.
 */
import { describeCondition } from "./premise-schema.ts";
import type { Scenario } from "./schema.ts";

export const SCENARIO_TABLE_HEADER = ["scenario", "drivers", "covers", "premise", "what it is for"] as const;

const cell = (text: string) => text.replace(/\s+/g, " ").replace(/\|/g, "\\|").trim();

function premiseCell(s: Scenario): string {
  if (!s.premise) return "";
  if ("none" in s.premise) return `none: ${s.premise.none}`;
  return s.premise.map((c) => describeCondition(c)).join("; ");
}

/** The cells of each row, in name order. */
export function scenarioTableRows(scenarios: readonly Scenario[]): string[][] {
  return [...scenarios]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((s) =>
      [`\`${s.name}\``, s.drivers.join(", "), s.covers.join(", "), premiseCell(s), s.description].map(cell),
    );
}

/** The whole Markdown table, for the README. */
export function renderScenarioTable(scenarios: readonly Scenario[]): string {
  const rows = [
    [...SCENARIO_TABLE_HEADER],
    SCENARIO_TABLE_HEADER.map(() => "---"),
    ...scenarioTableRows(scenarios),
  ];
  return rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
}
