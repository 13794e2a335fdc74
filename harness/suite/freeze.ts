/**
 * A guest that stops answering while QEMU runs. A CPU spinning in the kernel (a driver looping on
 * a CQ it misreads, a lock never released) leaves no task to report blocked and no SSH to ask for
 * stacks, so the executor only sees its connection die. Before calling that a harness error, the
 * harness asks the guest again, and when it still does not answer, injects an NMI (QMP
 * `inject-nmi`) into it. The guest is booted with unknown_nmi_panic=1 (qemu/launch/cmdline.ts), so
 * the kernel panics "NMI: Not continuing" and prints the interrupted CPU's stack
 * (arch/x86/kernel/nmi.c unknown_nmi_error), and QEMU ends (panic=-1, -no-reboot). That stack is
 * the evidence:
 * - the CPU caught in the kernel outside the idle loop: the guest froze there, a FAIL of the
 *   console rule (kind "freeze") with the stack;
 * - the CPU caught idle, or in user space: the kernel was not what stopped answering; ERROR;
 * - no stack: ERROR naming what was tried.
 */

import type { BootedGuest } from "../boot.ts";
import type { ConsoleEvent, StackFrame } from "../console/parse.ts";
import { parseConsole } from "../console/parse.ts";

/** Tries at answering over SSH before the guest is called frozen; each with its own timeout. */
const ANSWER_TRIES = 3;
const ANSWER_TIMEOUT_MS = 10_000;
/** How long the guest gets to print its NMI panic (TCG: a few seconds), and how often it is looked at. */
const NMI_WAIT_MS = 30_000;
const POLL_MS = 200;

const NMI_PANIC = /Kernel panic - not syncing: NMI: Not continuing/;
/** The kernel's NMI entry and handling frames: above them is the interrupted context. */
const NMI_FRAMES =
  /^(asm_exc_nmi|exc_nmi|end_repeat_nmi|repeat_nmi|nmi_handle|default_do_nmi|unknown_nmi_error|nmi_panic|panic|dump_stack\w*|show_stack|vpanic)$/;
/** Where an idle CPU sits (kernel/sched/idle.c, arch/x86/kernel/process.c). */
const IDLE_FRAMES =
  /^(do_idle|default_idle|default_idle_call|cpu_idle_poll|arch_cpu_idle|cpu_startup_entry|acpi_idle_\w+|mwait_idle\w*|native_safe_halt|pv_native_safe_halt|halt)$/;

type Examined = Pick<BootedGuest, "exec" | "qmp" | "qemuExit" | "consoleLog">;

export type SilentGuest =
  /** it answered after all: the executor's error stands as it is */
  | { kind: "answers" }
  /** frozen in the kernel: the NMI panic's report, and where the CPU was */
  | { kind: "frozen"; event: ConsoleEvent; where: string }
  /** not the driver's: the CPU was idle or in user space, or the NMI brought no stack */
  | { kind: "not-judged"; reason: string };

async function answers(guest: Examined): Promise<boolean> {
  for (let i = 0; i < ANSWER_TRIES; i++) {
    if (guest.qemuExit) return false;
    const ok = await guest
      .exec("true", { timeoutMs: ANSWER_TIMEOUT_MS })
      .then((r) => r.exitCode === 0)
      .catch(() => false);
    if (ok) return true;
  }
  return false;
}

async function nmiReport(guest: Examined, consoleFrom: number): Promise<ConsoleEvent | undefined> {
  const deadline = Date.now() + NMI_WAIT_MS;
  for (;;) {
    const exited = guest.qemuExit !== undefined;
    const report = parseConsole(guest.consoleLog().slice(consoleFrom)).find(
      (e) => e.kind === "panic" && NMI_PANIC.test(e.text),
    );
    // the report is complete once QEMU has ended (the panic's last act) or its end marker is out
    if (report && (exited || guest.consoleLog().slice(consoleFrom).includes("end Kernel panic")))
      return report;
    if (exited || Date.now() > deadline) return report;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** The interrupted context's frames: those after the NMI handling's. */
function interrupted(frames: readonly StackFrame[]): StackFrame[] {
  let last = -1;
  frames.forEach((f, i) => {
    if (NMI_FRAMES.test(f.fn)) last = i;
  });
  return frames.slice(last + 1);
}

function ripOf(event: ConsoleEvent): string | undefined {
  const rip = event.trace.map((l) => /^RIP: 00(10|33):(\S+)/.exec(l.trim())).find((m) => m);
  if (!rip) return undefined;
  return rip[1] === "33" ? "user space" : rip[2];
}

/** Whether a guest whose executor lost it is frozen, and if so where. */
export async function examineSilentGuest(guest: Examined): Promise<SilentGuest> {
  if (guest.qemuExit) return { kind: "answers" };
  if (await answers(guest)) return { kind: "answers" };
  if (guest.qemuExit) return { kind: "answers" };
  const from = guest.consoleLog().length;
  try {
    await (await guest.qmp()).execute("inject-nmi");
  } catch (err) {
    return {
      kind: "not-judged",
      reason: `the guest stopped answering SSH while QEMU ran, and the NMI to take its stack could not be sent: ${(err as Error).message}`,
    };
  }
  const report = await nmiReport(guest, from);
  if (!report)
    return {
      kind: "not-judged",
      reason: `the guest stopped answering SSH while QEMU ran, and an NMI brought no stack within ${NMI_WAIT_MS / 1000} s`,
    };
  const frames = interrupted(report.frames);
  const rip = ripOf(report);
  const where = rip ?? frames[0]?.fn ?? "an unknown place";
  if (rip === "user space")
    return {
      kind: "not-judged",
      reason:
        "the guest stopped answering SSH while QEMU ran, with its CPU in user space (an NMI found it there): not the kernel's doing",
    };
  if (
    frames.some((f) => IDLE_FRAMES.test(f.fn)) ||
    (rip !== undefined && IDLE_FRAMES.test(rip.split("+")[0] ?? ""))
  )
    return {
      kind: "not-judged",
      reason: `the guest stopped answering SSH while QEMU ran, with its CPU idle (an NMI found it in ${where}): not a freeze of the kernel`,
    };
  return { kind: "frozen", event: report, where };
}

/** The NMI panic as the console rule's evidence: a freeze, not a panic of the driver's. */
export function freezeEvent(frozen: { event: ConsoleEvent; where: string }): ConsoleEvent {
  return {
    ...frozen.event,
    kind: "freeze",
    text: `the guest froze: it stopped answering while QEMU ran; an NMI found its CPU in ${frozen.where}`,
  };
}

/** The panic the harness's own NMI causes: never a finding of its own (the freeze is). */
export function isNmiPanic(event: ConsoleEvent): boolean {
  return event.kind === "panic" && NMI_PANIC.test(event.text);
}
