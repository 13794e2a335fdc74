// fixtures/scenarios/README.md's "Every scenario" is the scenario directory's: one row per file, in
// name order, each cell what harness/scenario/reference-table.ts derives from the scenario. A
// scenario added, removed or changed without the README fails here, with the table to paste.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  renderScenarioTable,
  SCENARIO_TABLE_HEADER,
  scenarioTableRows,
} from "../../harness/scenario/reference-table.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";
import { REPO_ROOT } from "../support/cli.ts";

const README = join(REPO_ROOT, "fixtures/scenarios/README.md");
const HEADING = "## Every scenario";

/** The rows of the first Markdown table under the heading, each cell as written; the separator left out. */
function readmeTable(text: string): string[][] {
  const at = text.indexOf(`\n${HEADING}\n`);
  if (at < 0) throw new Error(`fixtures/scenarios/README.md has no "${HEADING}"`);
  const lines = text
    .slice(at + HEADING.length + 2)
    .split("\n## ")[0]
    ?.split("\n")
    .filter((l) => l.startsWith("|"));
  return (lines ?? [])
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    )
    .filter((cells) => !cells.every((c) => /^:?-+:?$/.test(c)));
}

t.test("the README lists every scenario as the files say", async (t) => {
  const scenarios = await selectScenarios(undefined);
  const [head, ...rows] = readmeTable(readFileSync(README, "utf8"));
  const cols = t.same(head, [...SCENARIO_TABLE_HEADER], "its columns");
  const same = t.same(
    rows,
    scenarioTableRows(scenarios),
    "a row per scenario, in name order, each cell derived",
  );
  if (!cols || !same)
    t.comment(`the table fixtures/scenarios/README.md should have:\n${renderScenarioTable(scenarios)}`);
  t.equal(rows.length, scenarios.length);
});

t.test("the parser sees a row that differs", async (t) => {
  const table = `x\n${HEADING}\n\n| a | b |\n| --- | --- |\n| 1 | 2 \\| 3 |\n\n## next\n| z |`;
  t.same(readmeTable(table), [
    ["a", "b"],
    ["1", "2 \\| 3"],
  ]);
});
