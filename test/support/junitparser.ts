/**
 * JUnit XML as a real consumer reads it: junitparser (Debian's python3-junitparser, installed the
 * first time it is needed) through test/support/junit-read.py, which prints what it read as JSON:
 * every testcase's outcome, message and time, and the counts both as written and as computed from
 * the testcases.
 */
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { ensureHostPackages } from "../../util/apt.ts";

const JUNIT_READ = fileURLToPath(new URL("./junit-read.py", import.meta.url));
/** Debian's python3-junitparser is for Debian's python3 */
const PYTHON = "/usr/bin/python3";

export interface JRCase {
  classname: string;
  name: string;
  time: number | null;
  system_out: string | null;
  outcome: "passed" | "failure" | "error" | "skipped";
  message?: string | null;
  type?: string | null;
  text?: string | null;
}
export interface JRCounts {
  tests: number;
  failures: number;
  errors: number;
  skipped: number;
  time: number;
}
export interface JRSuite {
  name: string;
  written: JRCounts;
  computed: JRCounts;
  timestamp: string;
  properties: Record<string, string>;
  system_out: string | null;
  cases: JRCase[];
}
export interface JRReport {
  written: JRCounts;
  computed: JRCounts;
  suites: JRSuite[];
}

let installed: Promise<unknown> | undefined;

/** The report as junitparser reads it. */
export async function junitparserRead(xml: string): Promise<JRReport> {
  installed ??= ensureHostPackages(["python3-junitparser"]);
  await installed;
  const r = await execa(PYTHON, [JUNIT_READ], { input: xml, reject: false });
  if (r.exitCode !== 0) throw new Error(`junitparser could not read the report: ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout) as JRReport;
}
