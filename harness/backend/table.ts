/**
 * docs/devices.md's table "What each device backend can judge": one row per backend of the registry,
 * its cells derived from the backend where they can be (what the boot gets, faults, the hardware
 * trace, guests, the record) and its own words where not. test/unit/backend-table.test.ts keeps
 * the README's copy equal to it.
 */
import type { AnyBackend } from "./registry.ts";
import { BACKENDS } from "./registry.ts";

export const BACKEND_TABLE_HEADER = [
  "backend",
  "drivers",
  "the boot gets",
  "the device probes stage",
  "device faults",
  "hardware trace",
  "guests",
  "verdicts.json `device`",
  "judges",
] as const;

const code = (value: unknown) => `\`${JSON.stringify(value)}\``;

function bootCell(b: AnyBackend): string {
  if (!b.boots) return "no guest: the driver runs on the remote machine's own kernel";
  const boot = b.boot(b.example);
  return boot === false ? "no device" : code(boot);
}

function faultsCell(b: AnyBackend): string {
  if (b.canArmFaults) return "armed on the device server's control channel";
  const why =
    b.faultSkip?.(b.example) ??
    `${b.drivers.join(" and ")} ${b.drivers.length > 1 ? "have" : "has"} no device model`;
  return `SKIP: ${why}`;
}

function hwTraceCell(b: AnyBackend): string {
  const file = b.hwTrace?.keptIn(b.example);
  return file ? `\`${file}\` (\`hw-trace-<n>.jsonl\` for the n-th boot)` : "none";
}

function guestsCell(b: AnyBackend): string {
  const side = b.maxGuests === 1 ? "one at a time" : "any number side by side (`--guests`)";
  const t = b.twoGuests;
  const two =
    "joinedBy" in t
      ? `two-guest scenarios joined by ${t.joinedBy(b.drivers[0] ?? "erdma")}`
      : "skip" in t
        ? `two-guest scenarios SKIP: ${t.skip}`
        : `two-guest scenarios ${t.unchecked}`;
  return `${side}; ${two}`;
}

function recordCell(b: AnyBackend): string {
  const record = b.record(b.example, "hw-trace.jsonl");
  return record === null ? "none" : code(record);
}

/** The table's rows: a backend each, in registry order. */
export function backendTableRows(): string[][] {
  return (BACKENDS as readonly AnyBackend[]).map((b) => [
    b.title,
    b.drivers.join(", "),
    bootCell(b),
    b.about.probe,
    faultsCell(b),
    hwTraceCell(b),
    guestsCell(b),
    recordCell(b),
    b.about.judges,
  ]);
}

/** The table as Markdown, columns padded. */
export function renderBackendTable(): string {
  const rows = [[...BACKEND_TABLE_HEADER], ...backendTableRows()];
  const widths = BACKEND_TABLE_HEADER.map((_, i) => Math.max(3, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  const [head, ...body] = rows as [string[], ...string[][]];
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}
