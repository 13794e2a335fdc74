/**
 * `npm run fuzz`: a coverage-guided campaign against the parsers that take the guest's input.
 *   --target <name|all>   vfio-user, erdma or all (default all, one after the other)
 *   --runs <n>            executions per target (default 1000000)
 *   --time <seconds>      time per target (default 60); whichever limit comes first ends it
 *   --seed <n>            mutation seed (default: from the clock; printed)
 *   --replay <file>...    run these inputs once each and print what happened (needs --target)
 *   --no-save             leave test/fixtures/fuzz/<target>/corpus as it is (default: rewrite it
 *                         minimised with what this run found)
 * Prints, per target: executions, blocks and features covered, crashes, out-of-bounds guest
 * memory accesses and fd leaks; exits 1 if any of the last three is not 0. Reproducers go to
 * test/fixtures/fuzz/<target>/crashes/, which test/unit/fuzz-corpus.test.ts replays.
 */

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type CampaignResult, fuzz, Watchdog } from "./engine.ts";
import { catchStrayErrors, runOne, warmUp } from "./run-one.ts";
import { fixtureDir, TARGETS } from "./targets/index.ts";

function count(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name}: expected a positive number, got "${text}"`);
  return n;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      target: { type: "string", default: "all" },
      runs: { type: "string" },
      time: { type: "string" },
      seed: { type: "string" },
      "no-save": { type: "boolean", default: false },
      replay: { type: "boolean", default: false },
    },
    allowPositionals: true,
  });
  if (positionals.length > 0 && !values.replay) throw new Error(`unexpected argument ${positionals[0]}`);
  const names = TARGETS.map((t) => t.name);
  if (values.target !== "all" && !names.includes(values.target as string)) {
    throw new Error(`--target: unknown target "${values.target}" (known: ${names.join(", ")}, all)`);
  }
  if (values.replay) return replayFiles(values.target as string, positionals);
  const runs = count("runs", values.runs, 1_000_000);
  const timeMs = count("time", values.time, 60) * 1000;
  const seed = values.seed === undefined ? Date.now() % 1_000_000 : count("seed", values.seed, 1);
  const results: CampaignResult[] = [];
  for (const target of TARGETS) {
    if (values.target !== "all" && values.target !== target.name) continue;
    process.stdout.write(
      `${target.name}: fuzzing (seed ${seed}, at most ${runs} runs or ${timeMs / 1000} s)\n`,
    );
    results.push(
      await fuzz(target, {
        runs,
        timeMs,
        seed,
        corpusDir: fixtureDir(target.name, "corpus"),
        crashDir: fixtureDir(target.name, "crashes"),
        save: !values["no-save"],
        maxCorpus: 200,
        progress: (line) => process.stdout.write(`${line}\n`),
      }),
    );
  }
  const rows = [
    [
      "target",
      "execs",
      "execs/s",
      "blocks",
      "features",
      "corpus (saved)",
      "crashes",
      "out-of-bounds",
      "fd leaks",
    ],
    ...results.map((r) => [
      r.target,
      String(r.execs),
      String(Math.round(r.execs / (r.ms / 1000))),
      String(r.blocks),
      String(r.features),
      `${r.corpus} (${r.saved})`,
      String(r.crashes),
      String(r.outOfBounds),
      String(r.fdLeaks),
    ]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] as string).length))) ?? [];
  process.stdout.write("\n");
  for (const row of rows)
    process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i] as number)).join("  ")}\n`);
  for (const r of results) for (const f of r.findings) process.stdout.write(`${r.target}: ${f}\n`);
  process.stdout.write(
    "blocks: V8 block-coverage ranges of the target's modules that ran; features: blocks x hit-count buckets\n",
  );
  return results.some((r) => r.crashes + r.outOfBounds + r.fdLeaks > 0) ? 1 : 0;
}

async function replayFiles(name: string, files: string[]): Promise<number> {
  const target = TARGETS.find((t) => t.name === name);
  if (!target) throw new Error(`--replay needs --target (one of ${TARGETS.map((t) => t.name).join(", ")})`);
  const watchdog = await Watchdog.start(target, fixtureDir(target.name, "crashes"));
  catchStrayErrors(true);
  await warmUp(target);
  let bad = 0;
  for (const file of files) {
    const input = new Uint8Array(readFileSync(file));
    const o = await watchdog.around(input, () => runOne(target, input));
    const what = o.crash ?? (o.outOfBounds.length ? `out of bounds: ${o.outOfBounds.join("; ")}` : undefined);
    const leak = o.fdLeaks.length > 0 ? `fds leaked: ${o.fdLeaks.join(", ")}` : undefined;
    if (what || leak) bad++;
    process.stdout.write(`${file}: ${[what, leak].filter(Boolean).join("; ") || "ok"}\n`);
  }
  catchStrayErrors(false);
  await watchdog.stop();
  return bad > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fuzz: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
