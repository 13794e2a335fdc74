// The harness's judgement of a guest that stopped answering, on real NMI panics of the harness's
// kernels (test/fixtures/console/nmi-*.log, captured by test/support/console-capture.ts): the
// guest answers no command, the NMI "prints" the captured report and QEMU ends, as it does when
// suite/freeze.ts sends inject-nmi to a real guest. An idle CPU is not a freeze; a CPU spinning in
// a module's init is, with the spinning function as where it froze.
import t from "tap";
import { examineSilentGuest, freezeEvent } from "../../harness/suite/freeze.ts";
import { readGolden } from "../support/console-golden.ts";

type Exit = { exitCode: number | null; signal: NodeJS.Signals | null };

/** A guest that answers nothing and, on inject-nmi, prints `report` and ends (panic=-1). */
function silentGuest(report: string, boot = "[    0.000000] Linux version 6.12\n") {
  let log = boot;
  let exit: Exit | undefined;
  const sent: string[] = [];
  return {
    sent,
    guest: {
      exec: async () => {
        throw new Error("ssh: connection timed out");
      },
      qmp: async () => ({
        execute: async (command: string) => {
          sent.push(command);
          log += report;
          exit = { exitCode: 0, signal: null };
          return {};
        },
      }),
      get qemuExit() {
        return exit;
      },
      consoleLog: () => log,
    },
  };
}

/** The captured report without the golden file's header line. */
const reportOf = (name: string) => readGolden(name).log.split("\n").slice(1).join("\n");

t.test("an NMI that finds the CPU idle: not a freeze of the kernel", async (t) => {
  const { guest, sent } = silentGuest(reportOf("nmi-idle-6.12"));
  const found = await examineSilentGuest(guest as never);
  t.same(sent, ["inject-nmi"], "the harness asked for the CPU's stack");
  t.equal(found.kind, "not-judged");
  if (found.kind !== "not-judged") return;
  t.match(
    found.reason,
    /stopped answering SSH while QEMU ran, with its CPU idle \(an NMI found it in \S+\): not a freeze of the kernel/,
  );
});

t.test("an NMI that finds the CPU spinning in a module: frozen there", async (t) => {
  const { guest } = silentGuest(reportOf("nmi-spin-6.12"));
  const found = await examineSilentGuest(guest as never);
  t.equal(found.kind, "frozen");
  if (found.kind !== "frozen") return;
  t.match(found.where, /^hil_spin_forever\+0x[0-9a-f]+\/0x[0-9a-f]+$/, "the RIP below the NMI");
  t.ok(
    found.event.frames.some((f) => f.fn === "hil_spin_init" && f.reliable),
    "the walk goes on below the registers to the module's init",
  );
  t.match(freezeEvent(found).text, /^the guest froze: .* an NMI found its CPU in hil_spin_forever/);
});
