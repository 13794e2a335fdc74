/**
 * What the cached base side saves a maintainer who validates a series after every edit: the wall
 * time of `hil validate` run twice in a row with the same base and series, the first with
 * --no-base-cache (both sides run; the base is kept), the second as a user would (the base is
 * reused), in the same run, as a ratio. Both are the real command, each in a process of its own.
 * Both kernels are built (or found cached) before anything is timed.
 *
 *   node --import tsx harness/bench/validate-base-cache.ts [--kernel debian:6.12]
 *     [--series fixtures/series/erdma-fail-post-in-error.mbox] [--scenario <glob>]
 *     [--hanging fixtures/mutants/no-reflush-after-post.mbox]
 *
 * With --hanging, a third validation (base reused) of a series that makes drains hang, beside the
 * second: what the hangs cost a maintainer over a series that does not hang.
 *
 * The run directories go to a temporary directory, removed at the end.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execa } from "execa";
import { packagePath } from "../../util/package.ts";
import type { VerdictDelta } from "../workflows/validate/diff.ts";

const { values } = parseArgs({
  options: {
    kernel: { type: "string", default: "debian:6.12" },
    series: { type: "string", default: packagePath("fixtures", "series", "erdma-fail-post-in-error.mbox") },
    scenario: { type: "string" },
    hanging: { type: "string" },
  },
});
const kernel = values.kernel ?? "debian:6.12";
const series = values.series ?? "";
const HIL = packagePath("bin", "hil");
const scratch = mkdtempSync(join(tmpdir(), "hil-bench-validate-"));
process.once("exit", () => rmSync(scratch, { recursive: true, force: true }));

async function hil(args: string[]): Promise<{ exitCode: number; stdout: string; ms: number }> {
  const start = performance.now();
  const r = await execa(HIL, args, { reject: false, stdin: "ignore", stderr: "inherit" });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), ms: performance.now() - start };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const validate = (runDir: string, extra: string[], of = series) => [
  "validate",
  "--kernel",
  kernel,
  "--series",
  of,
  ...(values.scenario ? ["--scenario", values.scenario] : []),
  "--run-dir",
  runDir,
  ...extra,
];
const line = (stdout: string, prefix: string) => stdout.split("\n").find((l) => l.startsWith(prefix)) ?? "";

const built = await hil(["kernel", "build", "--kernel", kernel, "--series", series]);
if (built.exitCode !== 0) throw new Error(`hil kernel build exited ${built.exitCode}`);
const first = await hil(validate(join(scratch, "first"), ["--no-base-cache"]));
const second = await hil(validate(join(scratch, "second"), []));
for (const [name, r] of [
  ["first", first],
  ["second", second],
] as const)
  if (r.exitCode !== first.exitCode || ![0, 1].includes(r.exitCode))
    throw new Error(`the ${name} validation exited ${r.exitCode}:\n${r.stdout.slice(-2000)}`);
/** The comparison's rows: verdicts and change (not the reasons: a WARNING's PID differs run to run). */
const rows = (runDir: string) =>
  (JSON.parse(readFileSync(join(runDir, "validate.json"), "utf8")) as { deltas: VerdictDelta[] }).deltas
    .map(
      (d) =>
        `${d.key} ${d.base} ${d.patched} ${d.change} ${d.rules.map((r) => `${r.rule}:${r.base}>${r.patched}`)}`,
    )
    .join("\n");
const same = rows(join(scratch, "first")) === rows(join(scratch, "second"));

const hanging = values.hanging ? await validateHanging(values.hanging) : [];

process.stdout.write(
  [
    `hil validate --kernel ${kernel} --series ${series}${values.scenario ? ` --scenario ${values.scenario}` : ""}`,
    `  first  (--no-base-cache, both sides run): ${seconds(first.ms)}   ${line(first.stdout, "base: ")}`,
    `  second (base side reused):                ${seconds(second.ms)}   ${line(second.stdout, "base: ")}`,
    `  second / first: ${(second.ms / first.ms).toFixed(2)} (${(first.ms / second.ms).toFixed(2)}x faster); comparisons ${same ? "identical" : "DIFFER"}`,
    ...hanging,
    "",
  ].join("\n"),
);

/** The hanging series' validation, base reused, and its ratio to the second one's. */
async function validateHanging(mbox: string): Promise<string[]> {
  const b = await hil(["kernel", "build", "--kernel", kernel, "--series", mbox]);
  if (b.exitCode !== 0) throw new Error(`hil kernel build --series ${mbox} exited ${b.exitCode}`);
  const r = await hil(validate(join(scratch, "hanging"), [], mbox));
  if (r.exitCode !== 1)
    throw new Error(`the hanging series' validation exited ${r.exitCode}, not 1 (new FAILs)`);
  const { deltas } = JSON.parse(readFileSync(join(scratch, "hanging", "validate.json"), "utf8")) as {
    deltas: VerdictDelta[];
  };
  const hung = new Set(
    deltas
      .filter((d) => d.rules.some((x) => x.rule === "hang" && x.patched === "FAIL"))
      .map((d) => d.scenario ?? d.key),
  ).size;
  return [
    `hil validate --series ${mbox} (drains hang; base reused): ${seconds(r.ms)}   ${line(r.stdout, "base: ")}`,
    `  ${hung} scenario(s) whose drain hangs with the series; hanging / second: ${(r.ms / second.ms).toFixed(2)}`,
  ];
}
if (!same) process.exitCode = 1;
