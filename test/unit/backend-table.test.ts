// docs/devices.md's table "What each device backend can judge" is the registry's: one row per backend of
// harness/backend/registry.ts, in its order, each cell what harness/backend/table.ts derives from
// the backend. A backend added, removed or changed without docs/devices.md fails here, with the table
// to paste.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";
import { BACKENDS } from "../../harness/backend/registry.ts";
import { BACKEND_TABLE_HEADER, backendTableRows, renderBackendTable } from "../../harness/backend/table.ts";

const DEVICES_DOC = fileURLToPath(new URL("../../docs/devices.md", import.meta.url));
const HEADING = "## What each device backend can judge";

/** The rows of the first Markdown table under the heading, each cell trimmed; the separator row left out. */
function readmeTable(): string[][] {
  const text = readFileSync(DEVICES_DOC, "utf8");
  const at = text.indexOf(`\n${HEADING}\n`);
  if (at < 0) throw new Error(`docs/devices.md has no "${HEADING}"`);
  const section = text.slice(at + HEADING.length + 2).split("\n## ")[0] ?? "";
  const lines = section.split("\n");
  const first = lines.findIndex((l) => l.startsWith("|"));
  const rest = lines.slice(first);
  const end = rest.findIndex((l) => !l.startsWith("|"));
  const table = end < 0 ? rest : rest.slice(0, end);
  return table
    .map((l) =>
      l
        .slice(1, -1)
        .split("|")
        .map((c) => c.trim()),
    )
    .filter((cells) => !cells.every((c) => /^-+$/.test(c)));
}

t.test("docs/devices.md's backend table is the registry's", async (t) => {
  const [head, ...rows] = readmeTable();
  const ok = t.same(head, [...BACKEND_TABLE_HEADER], "its columns");
  const same = t.same(rows, backendTableRows(), "a row per backend, in registry order, each cell derived");
  if (!ok || !same) t.comment(`the table docs/devices.md should have:\n${renderBackendTable()}`);
  t.equal(rows.length, BACKENDS.length);
  t.same(
    rows.map((r) => r[0]),
    BACKENDS.map((b) => b.title),
  );
});

t.test("a cell that says what a backend does follows the backend", async (t) => {
  const rows = backendTableRows();
  const faults = BACKEND_TABLE_HEADER.indexOf("device faults");
  const trace = BACKEND_TABLE_HEADER.indexOf("hardware trace");
  for (const [i, b] of BACKENDS.entries()) {
    const row = rows[i] ?? [];
    t.equal(row[faults]?.startsWith("SKIP"), !b.canArmFaults, `${b.kind}: faults`);
    t.equal(row[trace] === "none", b.hwTrace === undefined, `${b.kind}: hardware trace`);
  }
});
