/**
 * Real console logs for the console parser: boots real guests, makes the real kernel report a
 * hung task and a WARN, and returns the console with the lines that matter. The fixtures under
 * test/fixtures/console/ were written by this (`node --import tsx test/support/console-capture.ts
 * <hung-task|drain-warn> <out-file>`), and test/integration/console-real.test.ts runs it again.
 *
 * - hung-task: Linux 6.1 with the erdma-2022 profile (hardware that stops processing new WRs in
 *   ERROR): a loopback pair over rdma_cm, RECVs posted, the QP moved to ERR, more RECVs posted,
 *   then ib_drain_qp on a softirq CQ. __ib_drain_sq's marker never completes and its
 *   wait_for_completion (no timeout: a directly polled CQ would wake every 100 ms and never look
 *   hung) trips the hung-task detector (10 s in the guest kernel); then sysrq-w.
 * - drain-warn: Linux 6.12 on soft-iWARP: ib_drain_qp on a connected QP made without a receive
 *   queue (rq=0). ib_drain_qp drains the RQ of every QP without an SRQ; siw_post_receive refuses
 *   the marker (-EINVAL: no RQ) and __ib_drain_rq's WARN_ONCE("failed to drain recv queue")
 *   fires. ib_core does that on its own; no patch is involved.
 */
import { writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { buildGuestToolsLayer } from "../../guest/tools/build.ts";
import { type BootedGuest, bootPrepared } from "../../harness/boot.ts";
import { parseConsole } from "../../harness/console/parse.ts";
import { addSiwLink, KverbsDriver, kvCommand } from "../../harness/executor/kverbs-driver.ts";
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import { buildGuestModulesLayer } from "../../harness/image/kmod.ts";
import { buildKverbsModule } from "../../harness/image/kverbs-module.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";

export type CaptureKind = "hung-task" | "drain-warn";

export interface CapturedConsole {
  kind: CaptureKind;
  base: string;
  release: string;
  /** what was run in the guest, in the executor's command language */
  commands: string[];
  /** the whole console log */
  log: string;
  /** the lines kept for a fixture: from the first report to the end of the evidence */
  excerpt: string;
}

const GUEST_IP = "10.0.2.15";

/** The header line of a fixture: how it was produced. */
export function fixtureHeader(c: Pick<CapturedConsole, "kind" | "base" | "release" | "commands">): string {
  return `# REAL console log (${c.kind}): Linux ${c.release} (${c.base}), produced by \`node --import tsx test/support/console-capture.ts ${c.kind}\` running: ${c.commands.join("; ")}`;
}

/**
 * The lines of `log` from the first line matching `from` up to (and including) the last line
 * matching `until`, or to the end; `before` lines of context are kept ahead of the first match.
 */
export function excerpt(log: string, from: RegExp, until?: RegExp, before = 0): string {
  const lines = log.split(/\r?\n/);
  const start = lines.findIndex((l) => from.test(l));
  if (start < 0) throw new HilError(`the console has no line matching ${from}`);
  let end = lines.length - 1;
  if (until) {
    for (let i = lines.length - 1; i >= start; i--) {
      if (until.test(lines[i] ?? "")) {
        end = i;
        break;
      }
    }
  }
  while (end > start && (lines[end] ?? "").trim() === "") end--;
  return `${lines.slice(Math.max(0, start - before), end + 1).join("\n")}\n`;
}

async function waitForConsole(guest: BootedGuest, re: RegExp, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!re.test(guest.consoleLog())) {
    if (Date.now() > deadline) throw new HilError(`no ${what} on the console after ${ms / 1000} s`);
    await sleep(500);
  }
}

function pairCommands(opts: { softirqB: boolean; rqA?: number }): string[] {
  return [
    kvCommand("device", { addr: GUEST_IP }),
    kvCommand("pd", { name: "pd0" }),
    kvCommand("cq", { name: "cqa", depth: 256, poll: "direct" }),
    kvCommand("cq", { name: "cqb", depth: 256, poll: opts.softirqB ? "softirq" : "direct" }),
    kvCommand("listen", {
      name: "L",
      addr: GUEST_IP,
      port: 7471,
      qp: "b",
      pd: "pd0",
      scq: "cqb",
      rcq: "cqb",
    }),
    kvCommand("connect", {
      name: "a",
      addr: GUEST_IP,
      port: 7471,
      pd: "pd0",
      scq: "cqa",
      rcq: "cqa",
      rq: opts.rqA,
    }),
  ];
}

async function bootWithKverbs(base: string, profile: string | false) {
  const kernel = await buildKernel({ base, configs: [] });
  const mod = await buildKverbsModule(kernel);
  const layer = await buildGuestModulesLayer([mod]);
  const [qemu, tools] = await Promise.all([ensureQemu(), buildGuestToolsLayer()]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, layer] });
  const guest = await bootPrepared(
    { qemu, kernel, initrd: image.path },
    { memoryMiB: 512, device: profile === false ? false : { profile } },
  );
  return { guest, mod, release: kernel.release };
}

/** Linux 6.1 + erdma-2022: a drain that never returns, the hung-task report, then sysrq-w. */
export async function captureHungTask(): Promise<CapturedConsole> {
  const base = "debian:6.1";
  const { guest, mod, release } = await bootWithKverbs(base, "erdma-2022");
  try {
    const kv = await KverbsDriver.load(guest, mod, { inImage: true });
    const commands = [
      ...pairCommands({ softirqB: true }),
      kvCommand("post_recv", { qp: "b", wr_id: 1000, count: 8 }),
      kvCommand("modify", { qp: "b", state: "ERR" }),
      kvCommand("post_recv", { qp: "b", wr_id: 2000, count: 3 }),
      kvCommand("drain", { qp: "b", which: "qp" }),
    ];
    await kv.run(commands.slice(0, -1));
    const drain = await kv.run(commands.slice(-1), { timeoutMs: 3000, check: false });
    if (!drain.stuck) throw new HilError("the drain returned: no hang to report");
    const step = progress.step("[console] waiting for the hung-task report");
    await waitForConsole(guest, /blocked for more than \d+ seconds/, 90_000, "hung-task report");
    step.succeed();
    await guest.exec("echo w > /proc/sysrq-trigger");
    await waitForConsole(guest, /sysrq: Show Blocked State[\s\S]*__ib_drain/, 30_000, "sysrq-w output");
    await sleep(1000);
    const log = guest.consoleLog();
    const all = [...commands, "(wait for the hung-task report)", "echo w > /proc/sysrq-trigger"];
    return {
      kind: "hung-task",
      base,
      release,
      commands: all,
      log,
      excerpt: excerpt(log, /INFO: task \S+ blocked for more than/, /__ib_drain|<\/TASK>/),
    };
  } finally {
    await guest.dispose();
  }
}

/** Linux 6.12 + siw: ib_drain_qp on a QP without a receive queue trips __ib_drain_rq's WARN. */
export async function captureDrainWarn(): Promise<CapturedConsole> {
  const base = "debian:6.12";
  const { guest, mod, release } = await bootWithKverbs(base, false);
  try {
    await addSiwLink(guest);
    const kv = await KverbsDriver.load(guest, mod, { inImage: true });
    const commands = [
      ...pairCommands({ softirqB: false, rqA: 0 }),
      kvCommand("drain", { qp: "a", which: "qp" }),
    ];
    await kv.run(commands, { timeoutMs: 30_000 });
    await waitForConsole(guest, /---\[ end trace/, 20_000, "end of the WARN");
    await kv.unload();
    const log = guest.consoleLog();
    return {
      kind: "drain-warn",
      base,
      release,
      commands,
      log,
      excerpt: excerpt(log, /-+\[ cut here \]-+/, /---\[ end trace/),
    };
  } finally {
    await guest.dispose();
  }
}

export function capture(kind: CaptureKind): Promise<CapturedConsole> {
  return kind === "hung-task" ? captureHungTask() : captureDrainWarn();
}

async function main(argv: string[]): Promise<number> {
  const [kind, out] = argv;
  if ((kind !== "hung-task" && kind !== "drain-warn") || !out) {
    process.stderr.write("usage: console-capture.ts hung-task|drain-warn <out-file>\n");
    return 2;
  }
  const c = await capture(kind);
  writeFileSync(out, `${fixtureHeader(c)}\n${c.excerpt}`);
  writeFileSync(`${out}.full`, c.log);
  for (const e of parseConsole(c.excerpt))
    process.stdout.write(`${e.kind}: ${e.text} (${e.trace.length} frames)\n`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
