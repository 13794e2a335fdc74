/**
 * A small coverage-guided fuzzer (the loop of libFuzzer/AFL, in-process): pick a corpus entry,
 * mutate it, run it, keep it if it reached a block or a hit-count bucket no input reached
 * before. Crashes, out-of-bounds accesses and fd leaks are saved as reproducers.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { BlockCoverage } from "./coverage.ts";
import { mutate, prng } from "./mutate.ts";
import { catchStrayErrors, type Outcome, runOne, warmUp } from "./run-one.ts";
import type { FuzzTarget } from "./target.ts";

export interface CampaignOptions {
  /** stop after this many executions (mutations; the corpus replay not counted) */
  runs: number;
  /** stop after this many ms */
  timeMs: number;
  seed: number;
  /** the stored corpus (read at the start; rewritten minimised at the end when `save`) */
  corpusDir: string;
  /** where reproducers of findings go */
  crashDir: string;
  save: boolean;
  /** most entries the saved corpus keeps */
  maxCorpus: number;
  progress?: (line: string) => void;
}

export interface CampaignResult {
  target: string;
  execs: number;
  ms: number;
  blocks: number;
  features: number;
  corpus: number;
  saved: number;
  crashes: number;
  outOfBounds: number;
  fdLeaks: number;
  /** one line per distinct finding */
  findings: string[];
}

interface Entry {
  data: Uint8Array;
  features: number[];
}

const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");

export function readInputs(dir: string): Uint8Array[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^[0-9a-f]{40}$/.test(f))
    .sort()
    .map((f) => new Uint8Array(readFileSync(join(dir, f))));
}

/** A short signature of a finding, so one bug is saved once, not once per input that hits it. */
function signature(o: Outcome): string | undefined {
  if (o.crash) {
    const lines = o.crash.split("\n");
    const frame = lines.find((l) => /^\s+at /.test(l) && !l.includes("/test/fuzz/")) ?? "";
    return `crash: ${(lines[0] ?? "").replace(/0x[0-9a-f]+|\d+/g, "N")} ${frame.trim().replace(/:\d+:\d+\)?$/, "")}`;
  }
  if (o.outOfBounds.length > 0)
    return `out-of-bounds: ${(o.outOfBounds[0] ?? "").replace(/0x[0-9a-f]+|\d+/g, "N")}`;
  if (o.fdLeaks.length > 0) return "fd leak";
  return undefined;
}

export async function fuzz(target: FuzzTarget, opts: CampaignOptions): Promise<CampaignResult> {
  const cov = new BlockCoverage(target.watch);
  const rng = prng(opts.seed);
  const seen = new Set<number>();
  const corpus: Entry[] = [];
  const findings = new Map<string, string>();
  const totals = { crashes: 0, outOfBounds: 0, fdLeaks: 0 };
  catchStrayErrors(true);

  const record = (input: Uint8Array, o: Outcome) => {
    if (o.crash) totals.crashes++;
    if (o.outOfBounds.length > 0) totals.outOfBounds++;
    if (o.fdLeaks.length > 0) totals.fdLeaks++;
    const sig = signature(o);
    if (!sig || findings.has(sig)) return;
    const name = sha1(input);
    findings.set(sig, `${sig} -> ${join(opts.crashDir, name)}`);
    mkdirSync(opts.crashDir, { recursive: true });
    writeFileSync(join(opts.crashDir, name), input);
    opts.progress?.(
      `${target.name}: NEW ${sig}\n  ${(o.crash ?? o.outOfBounds[0] ?? o.fdLeaks.join(", ")).split("\n").slice(0, 6).join("\n  ")}`,
    );
  };

  const watchdog = await Watchdog.start(target, opts.crashDir);

  const execute = async (input: Uint8Array): Promise<boolean> => {
    const o = await watchdog.around(input, () => runOne(target, input));
    const features = cov.take();
    record(input, o);
    let fresh = false;
    for (const f of features) {
      if (!seen.has(f)) {
        seen.add(f);
        fresh = true;
      }
    }
    if (fresh && !o.crash) corpus.push({ data: input, features });
    return fresh;
  };

  await warmUp(target);
  cov.take();
  for (const input of [...readInputs(opts.corpusDir), ...target.seeds()]) await execute(input);
  if (corpus.length === 0) corpus.push({ data: new Uint8Array(0), features: [] });

  const t0 = performance.now();
  let execs = 0;
  let lastReport = t0;
  let lastSave = t0;
  while (execs < opts.runs && performance.now() - t0 < opts.timeMs) {
    // favour recent finds a little: they sit at the frontier
    const pickAt = rng.int(2)
      ? rng.int(corpus.length)
      : corpus.length - 1 - rng.int(Math.min(corpus.length, 16));
    const base = corpus[pickAt] as Entry;
    const other = corpus[rng.int(corpus.length)]?.data;
    await execute(mutate(base.data, rng, other, target.maxLen));
    execs++;
    const now = performance.now();
    if (opts.save && now - lastSave > 300_000) {
      // a hang kills the process (see Watchdog): keep what was found so far
      lastSave = now;
      saveCorpus(corpus, opts.corpusDir, opts.maxCorpus);
    }
    if (now - lastReport > 10_000) {
      lastReport = now;
      opts.progress?.(
        `${target.name}: ${execs} execs, ${Math.round(execs / ((now - t0) / 1000))}/s, ${CoverageBlocks(seen)} blocks, ${seen.size} features, corpus ${corpus.length}, findings ${findings.size}`,
      );
    }
  }
  const ms = performance.now() - t0;
  catchStrayErrors(false);
  cov.close();
  await watchdog.stop();

  let saved = 0;
  if (opts.save) saved = saveCorpus(corpus, opts.corpusDir, opts.maxCorpus);
  return {
    target: target.name,
    execs,
    ms,
    blocks: CoverageBlocks(seen),
    features: seen.size,
    corpus: corpus.length,
    saved,
    crashes: totals.crashes,
    outOfBounds: totals.outOfBounds,
    fdLeaks: totals.fdLeaks,
    findings: [...findings.values()],
  };
}

function CoverageBlocks(features: Set<number>): number {
  return BlockCoverage.blocksOf(features).size;
}

/**
 * Keeps a small corpus with the same coverage: entries smallest first, each kept only if it adds a
 * feature the kept ones lack (a greedy cover, as libFuzzer's -merge=1), at most `max` of them.
 * Replaces the directory's previous entries.
 */
function saveCorpus(corpus: Entry[], dir: string, max: number): number {
  const covered = new Set<number>();
  const keep: Entry[] = [];
  for (const e of [...corpus].sort((a, b) => a.data.length - b.data.length)) {
    if (keep.length >= max) break;
    if (e.features.some((f) => !covered.has(f))) {
      keep.push(e);
      for (const f of e.features) covered.add(f);
    }
  }
  mkdirSync(dir, { recursive: true });
  const names = new Set(keep.map((e) => sha1(e.data)));
  for (const f of readdirSync(dir)) if (/^[0-9a-f]{40}$/.test(f) && !names.has(f)) rmSync(join(dir, f));
  for (const e of keep) writeFileSync(join(dir, sha1(e.data)), e.data);
  return names.size;
}

/**
 * A thread that watches for an input blocking the event loop (which no timer of this thread can
 * see): it saves the input as a reproducer, prints where the main thread is, and kills the process.
 */
export class Watchdog {
  private constructor(
    private readonly worker: Worker,
    private readonly shared: SharedArrayBuffer,
  ) {}

  static async start(target: FuzzTarget, crashDir: string): Promise<Watchdog> {
    const shared = new SharedArrayBuffer(12 + Math.max(target.maxLen, 1 << 20));
    const worker = new Worker(new URL("./watchdog.mjs", import.meta.url), {
      execArgv: [],
      workerData: { shared, hangMs: Math.max(20_000, target.timeoutMs * 2), crashDir, target: target.name },
    });
    await new Promise((resolve) => worker.once("online", resolve));
    worker.unref();
    return new Watchdog(worker, shared);
  }

  async around<T>(input: Uint8Array, run: () => Promise<T>): Promise<T> {
    const words = new Int32Array(this.shared, 0, 3);
    const n = Math.min(input.length, this.shared.byteLength - 12);
    new Uint8Array(this.shared, 12, n).set(input.subarray(0, n));
    Atomics.store(words, 2, n);
    Atomics.add(words, 0, 1);
    Atomics.store(words, 1, 1);
    try {
      return await run();
    } finally {
      Atomics.store(words, 1, 0);
    }
  }

  stop(): Promise<number> {
    return this.worker.terminate();
  }
}
