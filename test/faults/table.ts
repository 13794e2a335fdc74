/**
 * The fault campaign's table. Each case of test/faults makes one fault for real and records a row:
 * the case, the verdict hil gave (or what the fault came to), hil's exit status, the time from the
 * fault to the verdict, and what it left behind; and whether the case's assertions held. A test
 * file's rows go to <repo>/.tap/faults/rows/<file>.jsonl (replaced when the file runs again); the
 * end-of-suite hook (test/support/after-suite.ts) gathers the rows written during the suite into
 * <repo>/.tap/faults/table.md and prints it, under `npm test` and `npm run test:faults` alike.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Test } from "tap";
import { type Isolation, leftovers, REPO_ROOT } from "../support/cli.ts";

export const FAULTS_DIR = join(REPO_ROOT, ".tap", "faults");
export const ROWS_DIR = join(FAULTS_DIR, "rows");
export const TABLE_FILE = join(FAULTS_DIR, "table.md");

export interface FaultRow {
  /** what the case does: the fault and when */
  case: string;
  /** the verdict hil gave, or what the fault came to ("-" when it never got there) */
  verdict: string;
  /** hil's exit status, or the signal it died of with the shell's 128+n */
  exit: string;
  /** from the fault to the verdict (hil's exit, the error, the detection) */
  ms?: number;
  /** processes, files, locks or mounts the fault left; empty when nothing, unset when never looked at */
  leftovers?: string[];
  /** every assertion of the case held */
  ok?: boolean;
  /** the test file it comes from */
  file?: string;
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = {
  SIGINT: 2,
  SIGKILL: 9,
  SIGTERM: 15,
};

/** An exit as a shell reports it: the status, or the signal with 128+n ("SIGTERM (143)"). */
export function exitText(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  if (exit.signal) {
    const n = SIGNAL_NUMBERS[exit.signal];
    return n === undefined ? exit.signal : `${exit.signal} (${128 + n})`;
  }
  return String(exit.code);
}

/** What the runs in `iso` left: the row's leftovers, asserted to be none. */
export function expectRowLeftNothing(t: Test, row: FaultRow, iso: Isolation): void {
  const left = leftovers(iso);
  row.leftovers = [...left.processes, ...left.entries];
  t.same(left, { processes: [], entries: [] }, "nothing left behind");
}

/** The rows of one test file; the file's old rows go when it starts. */
export function faultTable(moduleUrl: string) {
  const file = basename(fileURLToPath(moduleUrl)).replace(/\.test\.ts$/, "");
  const rowsFile = join(ROWS_DIR, `${file}.jsonl`);
  mkdirSync(ROWS_DIR, { recursive: true });
  rmSync(rowsFile, { force: true });
  return {
    /** A row for the case `t` runs, to fill in; written when `t` ends, with whether it passed. */
    row(t: Test, name: string): FaultRow {
      const row: FaultRow = { case: name, verdict: "-", exit: "-" };
      t.teardown(() => {
        appendFileSync(rowsFile, `${JSON.stringify({ ...row, ok: t.passing(), file })}\n`);
      });
      return row;
    },
  };
}

/** The rows of the files that wrote theirs since `sinceMs`, in file then case order. */
export function rowsSince(sinceMs: number): FaultRow[] {
  let names: string[];
  try {
    names = readdirSync(ROWS_DIR).filter((n) => n.endsWith(".jsonl"));
  } catch {
    return [];
  }
  return names
    .sort()
    .filter((n) => statSync(join(ROWS_DIR, n)).mtimeMs >= sinceMs)
    .flatMap((n) =>
      readFileSync(join(ROWS_DIR, n), "utf8")
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as FaultRow),
    );
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? "-" : `${(ms / 1000).toFixed(1)} s`;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, "; ");
}

/** The table in markdown, with a line counting the cases that held. */
export function renderTable(rows: readonly FaultRow[]): string {
  const lines = [
    "| case | verdict | exit | time to verdict | leftovers | assertions |",
    "|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${cell(`${r.file ? `${r.file}: ` : ""}${r.case}`)} | ${cell(r.verdict)} | ${cell(r.exit)} | ${seconds(r.ms)} | ${cell(r.leftovers === undefined ? "not looked at" : r.leftovers.length ? r.leftovers.join(", ") : "none")} | ${r.ok ? "held" : "FAILED"} |`,
    ),
  ];
  const held = rows.filter((r) => r.ok).length;
  return `${lines.join("\n")}\n\n${rows.length} fault case(s), ${held} held, ${rows.length - held} failed\n`;
}
