/**
 * How often an rdma_cm connection between two guests over the erdma model loses its MPA reply
 * (mpa-reply-race.ts), on the base kernel and on the base with a series, in one run and under the
 * same host load: `--load N` busy loops on the host stand in for the other jobs of a CI machine,
 * which is when the race shows. Each exchange is one ib_send_bw (two rdma_cm connections) between
 * the guests; a lost reply is a client that fails with the race's signature.
 *
 *   node --import tsx harness/bench/connect-race.ts [--kernel debian:6.12]
 *     [--series fixtures/series/erdma-mpa-reply-race.mbox] [--runs 150] [--load 2] [--json]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError, isHilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { type BootedPair, bootPair, type PreparedGuest, prepareGuest } from "../boot.ts";
import { PERFTEST_PORT, startServer } from "./guest-listen.ts";
import { MPA_REPLY_TIMEOUT } from "./mpa-reply-race.ts";

interface Tally {
  kernel: string;
  release: string;
  runs: number;
  ok: number;
  lostReply: number;
  /** the first few other failures, as the client printed them */
  other: string[];
}

const TOOL = "ib_send_bw";
const ARGS = "-R -d erdma_0 -n 100 -s 64";

/** The lines of a failed client's stderr that say what went wrong (perftest's CM event first). */
function why(stderr: string): string {
  const lines = stderr
    .trim()
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const telling = lines.filter((l) => /Event: |Unexpected CM event|Bad wc status|error:/.test(l));
  return (telling.length > 0 ? telling : lines.slice(-3)).join(" | ");
}

async function exchanges(prepared: PreparedGuest, label: string, runs: number): Promise<Tally> {
  const tally: Tally = {
    kernel: label,
    release: prepared.kernel.release,
    runs,
    ok: 0,
    lostReply: 0,
    other: [],
  };
  let pair: BootedPair | undefined;
  try {
    pair = await bootPair(prepared, { memoryMiB: 512 });
    const [server, client] = pair.guests;
    const step = progress.step(`[bench] ${runs} ${TOOL} exchanges on ${label}`);
    for (let i = 0; i < runs; i++) {
      step.update(i, runs, `${tally.lostReply} lost MPA replies`);
      const up = await server.exec(startServer(`${TOOL} ${ARGS}`, PERFTEST_PORT, "/tmp/srv.log"));
      if (up.exitCode !== 0) throw new Error(`${label}: the ${TOOL} server did not start: ${up.stderr}`);
      const c = await client.exec(`timeout 60 ${TOOL} ${ARGS} ${server.fabricIp}`, { timeoutMs: 90_000 });
      await server.exec(`killall -q ${TOOL}; true`);
      if (c.exitCode === 0) tally.ok++;
      else if (MPA_REPLY_TIMEOUT.test(c.stderr)) tally.lostReply++;
      else if (tally.other.push(`exit ${c.exitCode}: ${why(c.stderr)}`) > 5) tally.other.length = 5;
    }
    step.succeed(
      `${tally.ok} ok, ${tally.lostReply} lost MPA replies, ${runs - tally.ok - tally.lostReply} other`,
    );
    return tally;
  } finally {
    await pair?.dispose();
  }
}

/** `n` busy loops on the host until the returned stop is called (or this process exits). */
function hostLoad(n: number): () => void {
  const loops: ChildProcess[] = [];
  for (let i = 0; i < n; i++) loops.push(spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" }));
  const stop = () => {
    for (const p of loops) p.kill("SIGKILL");
  };
  const unregister = onProcessExit(stop);
  return () => {
    stop();
    unregister();
  };
}

function table(tallies: Tally[], load: number): string {
  const w = Math.max(8, ...tallies.map((t) => t.kernel.length)) + 2;
  const lines = [
    `rdma_cm connections between two guests over the erdma model, ${load} busy loop(s) on the host`,
    "",
    `${"kernel".padEnd(w)}${"runs".padStart(6)}${"ok".padStart(6)}${"lost reply".padStart(12)}${"other".padStart(7)}${"lost %".padStart(8)}`,
  ];
  for (const t of tallies) {
    const other = t.runs - t.ok - t.lostReply;
    lines.push(
      `${t.kernel.padEnd(w)}${String(t.runs).padStart(6)}${String(t.ok).padStart(6)}${String(t.lostReply).padStart(12)}${String(other).padStart(7)}${((100 * t.lostReply) / t.runs).toFixed(1).padStart(8)}`,
    );
    for (const o of t.other) lines.push(`  other failure: ${o}`);
  }
  const [base, patched] = tallies;
  if (base && patched)
    lines.push(
      "",
      base.lostReply === 0
        ? "the base lost no reply in this run: no ratio (raise --runs or --load)"
        : `lost replies, series / base: ${(patched.lostReply / patched.runs / (base.lostReply / base.runs)).toFixed(3)}`,
    );
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kernel: { type: "string", default: "debian:6.12" },
      series: { type: "string" },
      runs: { type: "string", default: "150" },
      load: { type: "string", default: "2" },
      json: { type: "boolean", default: false },
    },
  });
  const runs = Number(values.runs);
  const load = Number(values.load);
  if (!Number.isInteger(runs) || runs < 1) throw new HilError(`--runs ${values.runs}: a whole number >= 1`);
  if (!Number.isInteger(load) || load < 0) throw new HilError(`--load ${values.load}: a whole number >= 0`);
  const base = values.kernel as string;
  // both kernels are built before the load starts: it is there for the exchanges
  const kernels: [PreparedGuest, string][] = [[await prepareGuest({ base, configs: [] }), base]];
  if (values.series)
    kernels.push([
      await prepareGuest({ base, series: values.series, configs: [] }),
      `${base} + ${values.series}`,
    ]);
  const stop = hostLoad(load);
  try {
    const tallies: Tally[] = [];
    for (const [prepared, label] of kernels) tallies.push(await exchanges(prepared, label, runs));
    process.stdout.write(
      values.json ? `${JSON.stringify({ load, tallies }, null, 2)}\n` : `${table(tallies, load)}\n`,
    );
  } finally {
    stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
