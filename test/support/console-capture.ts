/**
 * Real console logs for the console parser's golden files (test/fixtures/console/): boots a real
 * guest, makes its kernel report something the parser recognises, and keeps the lines that matter.
 * Run by hand to capture a new log; it writes <out>.log with a header line saying how it was
 * captured and <out>.expected.json with what the parser returns for it (review that before
 * committing; test/unit/console-golden.test.ts then holds the parser to it):
 *
 *   node --import tsx test/support/console-capture.ts <kind> <out>.log [--kernel <base>] [--full <file>]
 *
 * test/integration/console-real.test.ts captures again and compares with the stored files.
 *
 * - hung-task (debian:6.1 unless --kernel): the erdma-2022 profile (hardware that stops
 *   processing new WRs in ERROR): a loopback pair over rdma_cm, RECVs posted, the QP moved to ERR,
 *   more RECVs posted, then ib_drain_qp on a softirq CQ. __ib_drain_sq's marker never completes
 *   and its wait_for_completion (no timeout: a directly polled CQ would wake every 100 ms and never
 *   look hung) trips the hung-task detector (10 s in the guest kernel); then sysrq-w. Linux 6.12's
 *   driver sends REFLUSH, which erdma-2022 ignores: it hangs the same way
 *   (fixtures/cases/erdma-reflush-needs-hardware-6.12.yaml).
 * - drain-warn (debian:6.12): soft-iWARP, ib_drain_qp on a connected QP made without a receive
 *   queue (rq=0). ib_drain_qp drains the RQ of every QP without an SRQ; siw_post_receive refuses
 *   the marker (-EINVAL: no RQ) and __ib_drain_rq's WARN_ONCE("failed to drain recv queue")
 *   fires. ib_core does that on its own; no patch is involved.
 * - panic-on-warn (debian:6.12): the same WARN with the kernel.panic_on_warn sysctl set: the WARN,
 *   then "Kernel panic - not syncing: kernel: panic_on_warn set".
 * - sysrq-crash (debian:6.12): `echo c > /proc/sysrq-trigger`, a panic of its own
 *   (drivers/tty/sysrq.c, sysrq_handle_crash).
 * - oops, bug, oops-in-irq (debian:6.12): the test module hil_oops (test/support/oops-module/)
 *   loaded with what=null (a NULL pointer write in insmod's context: "BUG: kernel NULL pointer
 *   dereference" and the Oops), what=bug (BUG(): "kernel BUG at" and the Oops) or what=timer-null
 *   (the NULL write in a timer callback: the Oops, then "Fatal exception in interrupt").
 * - kasan-uaf, kfence-uaf, sleep-in-atomic, lockdep (debian:6.12 with guest/kconfig/debug.config):
 *   hil_oops loaded with what=uaf (KASAN's use-after-free report, with the allocation and free
 *   stacks), what=kfence-uaf (the same read on an object from KFENCE's pool: KFENCE's report),
 *   what=atomic-sleep ("BUG: sleeping function called from invalid context") or what=lockdep
 *   ("WARNING: possible circular locking dependency detected"); the kernel carries on.
 * - refcount (debian:6.12, its usual config): hil_oops what=refcount, refcount_t's "addition on 0;
 *   use-after-free." WARN, which needs no debug option.
 * - nmi-idle, nmi-spin (debian:6.12): the NMI the harness sends a guest that stopped answering
 *   (harness/suite/freeze.ts), into an idle guest or one whose CPU spins in hil_spin's init
 *   (guest/testmods/hil_spin): "NMI: Not continuing" with the interrupted context's registers and
 *   stack below the NMI's own frames.
 *
 * A panic ends the log: the harness boots with panic=-1 and QEMU's -no-reboot, so the kernel
 * reboots at once and QEMU exits, before kernel/panic.c prints its "---[ end Kernel panic" line.
 *
 * The kernel config is the harness's (guest/kconfig/base.config), plus debug.config for the kinds
 * that need a checker (CAPTURE_CONFIGS): Tiny RCU (no stall detector: RCU_STALL_COMMON is
 * TREE_RCU's) and no soft-lockup detector, so those kinds have no capture.
 */
import { writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { type BootedGuest, bootPrepared } from "../../harness/boot.ts";
import { addSiwLink, KVERBS_DEBUGFS, KverbsDriver } from "../../harness/executor/kverbs-driver.ts";
import { buildGuestToolsLayer } from "../../harness/image/guest-tools.ts";
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import {
  type BuiltGuestModule,
  buildGuestModule,
  buildGuestModulesLayer,
  guestModulePath,
} from "../../harness/image/kmod.ts";
import { buildKverbsModule } from "../../harness/image/kverbs-module.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { commandLine } from "../../harness/protocol/commands.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { REAL_HEADER, summarize, writeExpected } from "./console-golden.ts";
import { runAsMain } from "./run-main.ts";

export const CAPTURE_KINDS = [
  "hung-task",
  "drain-warn",
  "panic-on-warn",
  "sysrq-crash",
  "oops",
  "bug",
  "oops-in-irq",
  "nmi-idle",
  "nmi-spin",
  "kasan-uaf",
  "kfence-uaf",
  "sleep-in-atomic",
  "lockdep",
  "refcount",
] as const;
export type CaptureKind = (typeof CAPTURE_KINDS)[number];

/** The kernel a kind is captured on unless --kernel names another. */
export const DEFAULT_BASE: Record<CaptureKind, string> = {
  "hung-task": "debian:6.1",
  "drain-warn": "debian:6.12",
  "panic-on-warn": "debian:6.12",
  "sysrq-crash": "debian:6.12",
  oops: "debian:6.12",
  bug: "debian:6.12",
  "oops-in-irq": "debian:6.12",
  "nmi-idle": "debian:6.12",
  "nmi-spin": "debian:6.12",
  "kasan-uaf": "debian:6.12",
  "kfence-uaf": "debian:6.12",
  "sleep-in-atomic": "debian:6.12",
  lockdep: "debian:6.12",
  refcount: "debian:6.12",
};

/** The config fragments a kind's kernel is built with (guest/kconfig names): its checker's. */
export const CAPTURE_CONFIGS: Partial<Record<CaptureKind, readonly string[]>> = {
  "kasan-uaf": ["debug"],
  "kfence-uaf": ["debug"],
  "sleep-in-atomic": ["debug"],
  lockdep: ["debug"],
};

export interface CapturedConsole {
  kind: CaptureKind;
  base: string;
  release: string;
  /** what was run in the guest: executor command lines and shell commands, in order */
  commands: string[];
  /** the whole console log */
  log: string;
  /** the lines kept for a fixture: from the first report to the end of the evidence */
  excerpt: string;
}

const GUEST_IP = "10.0.2.15";

/** The header line of a fixture: how it was produced. */
export function fixtureHeader(c: Pick<CapturedConsole, "kind" | "base" | "release" | "commands">): string {
  return `# REAL console log (${c.kind}): Linux ${c.release} (${c.base}), produced by \`node --import tsx test/support/console-capture.ts ${c.kind} --kernel ${c.base}\` running: ${c.commands.join("; ")}`;
}

/**
 * The lines of `log` from the first line matching `from` up to (and including) the last line
 * matching `until`, or to the end; `before` lines of context are kept ahead of the first match.
 */
export function excerpt(log: string, from: RegExp, until?: RegExp, before = 0): string {
  const lines = log.split(/\r?\n/);
  const start = lines.findIndex((l) => from.test(l));
  if (start < 0) {
    // what the kernel reported instead says why (a report earlier in the boot turns lockdep off)
    const reports = lines.filter((l) =>
      /\b(BUG|WARNING|INFO|KASAN|Oops|debug_locks|lockdep|Tainted)\b/.test(l),
    );
    throw new HilError(`the console has no line matching ${from}`, {
      detail: reports.length
        ? `its report lines:\n${reports.slice(0, 20).join("\n")}`
        : `no report line in its ${lines.length} lines; the last:\n${lines.slice(-15).join("\n")}`,
    });
  }
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

function consoleTail(guest: BootedGuest): string {
  return `the console's last lines:\n${guest.consoleLog().split("\n").slice(-25).join("\n")}`;
}

async function waitForConsole(guest: BootedGuest, re: RegExp, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!re.test(guest.consoleLog())) {
    if (Date.now() > deadline)
      throw new HilError(`no ${what} on the console after ${ms / 1000} s`, {
        detail: consoleTail(guest),
      });
    await sleep(500);
  }
}

function pairCommands(opts: { softirqB: boolean; rqA?: number }): string[] {
  return [
    commandLine("device", { addr: GUEST_IP }),
    commandLine("pd", { name: "pd0" }),
    commandLine("cq", { name: "cqa", depth: 256, poll: "direct" }),
    commandLine("cq", { name: "cqb", depth: 256, poll: opts.softirqB ? "softirq" : "direct" }),
    commandLine("listen", {
      name: "L",
      addr: GUEST_IP,
      port: 7471,
      qp: "b",
      pd: "pd0",
      scq: "cqb",
      rcq: "cqb",
    }),
    commandLine("connect", {
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

export const OOPS_MODULE_DIR = fileURLToPath(new URL("./oops-module/", import.meta.url));
const OOPS_MODULE = "hil_oops";
const SPIN_MODULE_DIR = fileURLToPath(new URL("../../guest/testmods/hil_spin/", import.meta.url));
const SPIN_MODULE = "hil_spin";

interface CaptureGuest {
  guest: BootedGuest;
  release: string;
  kverbs: BuiltGuestModule;
  oops: BuiltGuestModule;
  spin: BuiltGuestModule;
}

/** A guest of `base` with hil_kverbs and hil_oops in its image, and the device of `profile` (or none). */
async function bootForCapture(
  base: string,
  profile: string | false,
  configs: readonly string[] = [],
): Promise<CaptureGuest> {
  const kernel = await buildKernel({ base, configs: [...configs] });
  const kverbs = await buildKverbsModule(kernel);
  const oops = await buildGuestModule(kernel, OOPS_MODULE_DIR, { name: OOPS_MODULE });
  const spin = await buildGuestModule(kernel, SPIN_MODULE_DIR, { name: SPIN_MODULE });
  const layer = await buildGuestModulesLayer([kverbs, oops, spin]);
  const [qemu, tools] = await Promise.all([ensureQemu(), buildGuestToolsLayer()]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, layer] });
  const guest = await bootPrepared(
    { qemu, kernel, initrd: image.path },
    { memoryMiB: 512, device: profile === false ? false : { profile } },
  );
  return { guest, release: kernel.release, kverbs, oops, spin };
}

/**
 * Waits for QEMU to exit after a panic: the harness boots with panic=-1 and -no-reboot
 * (qemu/launch/cmdline.ts), so the panicking kernel reboots at once, which ends QEMU; the panic's
 * own "---[ end Kernel panic" line is never printed (kernel/panic.c prints it only without a
 * reboot).
 */
async function waitForPanicExit(guest: BootedGuest, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (guest.running) {
    if (Date.now() > deadline)
      throw new HilError(`the guest did not go down after ${ms / 1000} s`, {
        detail: consoleTail(guest),
      });
    await sleep(500);
  }
  if (!/Kernel panic - not syncing/.test(guest.consoleLog()))
    throw new HilError("the guest went down without a panic on the console", {
      detail: consoleTail(guest),
    });
}

/**
 * Runs a shell command in the guest without waiting for it: for what takes the kernel down, after
 * which the SSH session never reports back.
 */
async function fireAndForget(guest: BootedGuest, command: string): Promise<void> {
  const r = await guest.exec(`(sleep 1; ${command}) </dev/null >/dev/null 2>&1 &`, { timeoutMs: 30_000 });
  if (r.exitCode !== 0) throw new HilError(`cannot start in the guest: ${command}`, { detail: r.stderr });
}

/** The erdma-2022 hang: a drain that never returns, the hung-task report, then sysrq-w. */
async function captureHungTask(base: string): Promise<CapturedConsole> {
  const { guest, kverbs, release } = await bootForCapture(base, "erdma-2022");
  try {
    const kv = await KverbsDriver.load(guest, kverbs, { inImage: true });
    const commands = [
      ...pairCommands({ softirqB: true }),
      commandLine("post_recv", { qp: "b", wr_id: 1000, count: 8 }),
      commandLine("modify", { qp: "b", state: "ERR" }),
      commandLine("post_recv", { qp: "b", wr_id: 2000, count: 3 }),
      commandLine("drain", { qp: "b", which: "qp" }),
    ];
    await kv.run(commands.slice(0, -1));
    const drain = await kv.run(commands.slice(-1), { timeoutMs: 3000, check: false });
    if (!drain.stuck) throw new HilError("the drain returned: no hang to report");
    const step = progress.step("[console] waiting for the hung-task report");
    await waitForConsole(guest, /blocked for more than \d+ seconds/, 90_000, "hung-task report");
    step.succeed();
    // one report: the detector would repeat it every 10 s
    const quiet = "echo 0 > /proc/sys/kernel/hung_task_warnings";
    await guest.exec(quiet);
    await guest.exec("echo w > /proc/sysrq-trigger");
    await waitForConsole(guest, /sysrq: Show Blocked State[\s\S]*__ib_drain/, 30_000, "sysrq-w output");
    await sleep(1000);
    const log = guest.consoleLog();
    const all = [...commands, "(wait for the hung-task report)", quiet, "echo w > /proc/sysrq-trigger"];
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

/**
 * siw: ib_drain_qp on a QP without a receive queue trips __ib_drain_rq's WARN; with panicOnWarn
 * the kernel panics after it.
 */
async function captureDrainWarn(base: string, panicOnWarn: boolean): Promise<CapturedConsole> {
  const { guest, kverbs, release } = await bootForCapture(base, false);
  try {
    await addSiwLink(guest);
    const kv = await KverbsDriver.load(guest, kverbs, { inImage: true });
    const setup = pairCommands({ softirqB: false, rqA: 0 });
    const drain = commandLine("drain", { qp: "a", which: "qp" });
    if (!panicOnWarn) {
      await kv.run([...setup, drain], { timeoutMs: 30_000 });
      await waitForConsole(guest, /---\[ end trace/, 20_000, "end of the WARN");
      await kv.unload();
      const log = guest.consoleLog();
      return {
        kind: "drain-warn",
        base,
        release,
        commands: [...setup, drain],
        log,
        excerpt: excerpt(log, /-+\[ cut here \]-+/, /---\[ end trace/),
      };
    }
    const sysctl = "echo 1 > /proc/sys/kernel/panic_on_warn";
    await kv.run(setup, { timeoutMs: 30_000 });
    const r = await guest.exec(sysctl);
    if (r.exitCode !== 0) throw new HilError(`guest command failed: ${sysctl}`, { detail: r.stderr });
    // the worker runs the drain on its own; the guest panics under it
    await fireAndForget(guest, `echo '${drain}' > ${KVERBS_DEBUGFS}/ctl`);
    const commands = [...setup, sysctl, drain];
    return await afterPanic(guest, { kind: "panic-on-warn", base, release, commands }, /-+\[ cut here \]-+/);
  } finally {
    await guest.dispose();
  }
}

/** Once the panic has ended QEMU: the capture of `what` ran, the excerpt from the line `from` to the end. */
async function afterPanic(
  guest: BootedGuest,
  what: Omit<CapturedConsole, "log" | "excerpt">,
  from: RegExp,
): Promise<CapturedConsole> {
  await waitForPanicExit(guest, 60_000);
  const log = guest.consoleLog();
  return { ...what, log, excerpt: excerpt(log, from) };
}

/** sysrq-c: the kernel panics on request. */
async function captureSysrqCrash(base: string): Promise<CapturedConsole> {
  const { guest, release } = await bootForCapture(base, false);
  try {
    const command = "echo c > /proc/sysrq-trigger";
    await fireAndForget(guest, command);
    return await afterPanic(
      guest,
      { kind: "sysrq-crash", base, release, commands: [command] },
      /sysrq: Trigger a crash/,
    );
  } finally {
    await guest.dispose();
  }
}

const OOPS_WHAT = { oops: "null", bug: "bug", "oops-in-irq": "timer-null" } as const;

const CHECKER_WHAT = {
  "kasan-uaf": "uaf",
  "kfence-uaf": "kfence-uaf",
  "sleep-in-atomic": "atomic-sleep",
  lockdep: "lockdep",
  refcount: "refcount",
} as const;
type CheckerKind = keyof typeof CHECKER_WHAT;

/** Where each checker's report starts and ends on the console, and the lines kept before its start. */
const CHECKER_REPORT: Record<CheckerKind, { from: RegExp; until: RegExp; before: number }> = {
  // KASAN and KFENCE frame their reports with lines of "=" (mm/kasan/report.c, mm/kfence/report.c)
  "kasan-uaf": { from: /BUG: KASAN: /, until: /^(\[[\s\d.]+\] )?={20,}$/, before: 1 },
  "kfence-uaf": { from: /BUG: KFENCE: /, until: /^(\[[\s\d.]+\] )?={20,}$/, before: 1 },
  "sleep-in-atomic": {
    from: /BUG: sleeping function called from invalid context/,
    until: /<\/TASK>/,
    before: 0,
  },
  // lockdep's header: a line of "=", the WARNING, its version line, a line of "-"
  lockdep: { from: /WARNING: possible circular locking dependency/, until: /<\/TASK>/, before: 1 },
  refcount: { from: /-+\[ cut here \]-+/, until: /---\[ end trace/, before: 0 },
};

/** hil_oops with a checker's what=: the report, and the kernel carries on (the module stays loaded). */
async function captureChecker(kind: CheckerKind, base: string): Promise<CapturedConsole> {
  const { guest, oops, release } = await bootForCapture(base, false, CAPTURE_CONFIGS[kind]);
  try {
    const command = `insmod ${guestModulePath(release, oops.name)} what=${CHECKER_WHAT[kind]}`;
    const r = await guest.exec(command, { timeoutMs: 120_000 });
    if (r.exitCode !== 0) throw new HilError(`${command} failed`, { detail: r.stderr });
    await waitForConsole(guest, new RegExp(`hil_oops: ${CHECKER_WHAT[kind]} done`), 30_000, "hil_oops's end");
    await sleep(1000);
    const log = guest.consoleLog();
    const { from, until, before } = CHECKER_REPORT[kind];
    return { kind, base, release, commands: [command], log, excerpt: excerpt(log, from, until, before) };
  } finally {
    await guest.dispose();
  }
}

/** hil_oops loaded with what=null, bug or timer-null: an Oops in process context, or one that panics. */
async function captureOops(kind: "oops" | "bug" | "oops-in-irq", base: string): Promise<CapturedConsole> {
  const { guest, oops, release } = await bootForCapture(base, false);
  try {
    const command = `insmod ${guestModulePath(release, oops.name)} what=${OOPS_WHAT[kind]}`;
    if (kind === "oops-in-irq") {
      await fireAndForget(guest, command);
      await waitForPanicExit(guest, 60_000);
    } else {
      // the Oops kills insmod; the kernel carries on
      const r = await guest.exec(command, { timeoutMs: 60_000 });
      if (r.exitCode === 0) throw new HilError(`${command} returned 0: no Oops`);
      await waitForConsole(guest, /---\[ end trace/, 30_000, "end of the Oops");
      await sleep(1000);
    }
    const log = guest.consoleLog();
    const first = kind === "bug" ? /-+\[ cut here \]-+/ : /BUG: kernel NULL pointer dereference/;
    // a panic is the end of the log
    const last = kind === "oops-in-irq" ? undefined : /---\[ end trace/;
    return { kind, base, release, commands: [command], log, excerpt: excerpt(log, first, last) };
  } finally {
    await guest.dispose();
  }
}

/**
 * The harness's NMI (QMP inject-nmi, as harness/suite/freeze.ts sends it to a silent guest) into
 * a guest idling, or spinning in hil_spin's init: booted with unknown_nmi_panic=1, the kernel
 * panics "NMI: Not continuing" with the interrupted CPU's stack, and QEMU ends.
 */
async function captureNmi(kind: "nmi-idle" | "nmi-spin", base: string): Promise<CapturedConsole> {
  if (kind === "nmi-spin") return captureNmiOnce(kind, base);
  // An idle CPU is what nmi-idle captures; the NMI lands wherever the CPU is, and now and then that
  // is a softirq taking the last SSH packets on the idle task's stack (default_idle_call below
  // virtnet_poll, RIP in the page allocator), or the periodic tick's handler (RIP at its APIC EOI;
  // three boots in a row of a loaded 2-core host, 2026-12-07): boot again (at most five times)
  // until the NMI interrupted the idle instruction itself
  for (let attempt = 1; ; attempt++) {
    const c = await captureNmiOnce(kind, base);
    if (/\bRIP: \w+:default_idle\+/.test(c.excerpt) || attempt === 5) return c;
  }
}

async function captureNmiOnce(kind: "nmi-idle" | "nmi-spin", base: string): Promise<CapturedConsole> {
  const { guest, spin, release } = await bootForCapture(base, false);
  try {
    const commands: string[] = [];
    if (kind === "nmi-spin") {
      const insmod = `insmod ${guestModulePath(release, spin.name)}`;
      // the command never returns: the guest's only CPU spins in insmod
      await fireAndForget(guest, insmod);
      await waitForConsole(guest, /hil_spin: spinning/, 30_000, "hil_spin's message");
      commands.push(insmod);
    }
    await (await guest.qmp()).execute("inject-nmi");
    commands.push("QMP inject-nmi");
    return await afterPanic(guest, { kind, base, release, commands }, /NMI received for unknown reason/);
  } finally {
    await guest.dispose();
  }
}

export function capture(kind: CaptureKind, base = DEFAULT_BASE[kind]): Promise<CapturedConsole> {
  switch (kind) {
    case "hung-task":
      return captureHungTask(base);
    case "drain-warn":
      return captureDrainWarn(base, false);
    case "panic-on-warn":
      return captureDrainWarn(base, true);
    case "sysrq-crash":
      return captureSysrqCrash(base);
    case "nmi-idle":
    case "nmi-spin":
      return captureNmi(kind, base);
    case "kasan-uaf":
    case "kfence-uaf":
    case "sleep-in-atomic":
    case "lockdep":
    case "refcount":
      return captureChecker(kind, base);
    default:
      return captureOops(kind, base);
  }
}

const USAGE = `usage: console-capture.ts <kind> <out>.log [--kernel <base>] [--full <file>]
  kinds: ${CAPTURE_KINDS.join(", ")}
  writes <out>.log (header + the report) and <out>.expected.json (the parse, to review)
`;

function isKind(s: string | undefined): s is CaptureKind {
  return (CAPTURE_KINDS as readonly string[]).includes(s ?? "");
}

/** The command line, or a reason it is not one. */
export function parseCaptureArgs(
  argv: readonly string[],
): { kind: CaptureKind; out: string; kernel?: string; full?: string } | string {
  const positional: string[] = [];
  const opts: { kernel?: string; full?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--kernel" || a === "--full") {
      const v = argv[++i];
      if (!v) return `${a} needs a value`;
      opts[a === "--kernel" ? "kernel" : "full"] = v;
    } else if (a.startsWith("-")) return `unknown option ${a}`;
    else positional.push(a);
  }
  const [kind, out] = positional;
  if (!isKind(kind)) return `not a capture kind: ${kind ?? "(none)"}`;
  if (!out?.endsWith(".log") || positional.length !== 2) return "one output file <out>.log";
  return { kind, out, ...opts };
}

async function main(argv: string[]): Promise<number> {
  const args = parseCaptureArgs(argv);
  if (typeof args === "string") {
    process.stderr.write(`${args}\n${USAGE}`);
    return 2;
  }
  const { kind, out } = args;
  const c = await capture(kind, args.kernel);
  const header = fixtureHeader(c);
  if (!REAL_HEADER.test(header))
    throw new HilError(`the header is not one the golden test accepts: ${header}`);
  writeFileSync(out, `${header}\n${c.excerpt}`);
  if (args.full) writeFileSync(args.full, c.log);
  const { path, golden } = writeExpected(out);
  process.stdout.write(`${out}\n${path}\n${summarize(golden) || "(no events)"}\n`);
  return 0;
}

runAsMain(import.meta.url, main, 1);
