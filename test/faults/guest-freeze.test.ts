// A guest that stops answering while QEMU runs, on real debian:6.12 guests: one frozen by a kernel
// module that spins with preemption off (guest/testmods/hil_spin) is found frozen, with the NMI's
// stack naming the spinning function, and QEMU ends; one whose SSH server is killed while its CPU
// idles (stopped with SIGSTOP) is not called frozen (the kernel did not stop answering).
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import { prepareGuest, withGuest } from "../../harness/boot.ts";
import { buildGuestModule } from "../../harness/image/kmod.ts";
import { examineSilentGuest, freezeEvent } from "../../harness/suite/freeze.ts";
import { type Isolation, isolatedTmp, leftovers } from "../support/cli.ts";
import { faultTable } from "./table.ts";

t.setTimeout(20 * 60 * 1000);

const table = faultTable(import.meta.url);

/** What the guest left once it was disposed of: a row's leftovers, asserted empty. */
function expectNothingLeft(t: Test, iso: Isolation): string[] {
  const left = leftovers(iso);
  t.same(left, { processes: [], entries: [] }, "no QEMU and no temp dir left");
  return [...left.processes, ...left.entries];
}

const SPIN_SOURCE = fileURLToPath(new URL("../../guest/testmods/hil_spin/", import.meta.url));
const prepared = await prepareGuest({ base: process.env.HIL_TEST_KERNEL ?? "debian:6.12", configs: [] });

t.test("a CPU spinning in the kernel: frozen, with the spinning function in the NMI's stack", async (t) => {
  const row = table.row(t, "a CPU of the guest spinning in the kernel (hil_spin)");
  row.exit = "- (library: examineSilentGuest)";
  const spin = await buildGuestModule(prepared.kernel, SPIN_SOURCE, { name: "hil_spin" });
  const iso = isolatedTmp(t);
  await withGuest(prepared, { device: false }, async (guest) => {
    await guest.copyTo(spin.path, "/tmp/hil_spin.ko");
    const frozeAt = Date.now();
    // the command never returns: the guest stops in insmod
    await guest.exec("insmod /tmp/hil_spin.ko", { timeoutMs: 5000 }).catch(() => undefined);
    const found = await examineSilentGuest(guest);
    row.ms = Date.now() - frozeAt;
    row.verdict =
      found.kind === "frozen" ? `FAIL (console rule): ${freezeEvent(found).text}` : `${found.kind}`;
    t.equal(found.kind, "frozen", found.kind === "not-judged" ? found.reason : "frozen");
    if (found.kind !== "frozen") return;
    t.match(found.where, /hil_spin_forever/, "the CPU is where the module spins");
    t.ok(
      found.event.frames.some((f) => f.fn === "hil_spin_init"),
      "the interrupted task's frames lead back to the module's init",
    );
    const event = freezeEvent(found);
    t.equal(event.kind, "freeze");
    t.match(
      event.text,
      /^the guest froze: it stopped answering while QEMU ran; an NMI found its CPU in hil_spin_forever/,
    );
    t.equal(guest.qemuExit?.exitCode, 0, "the NMI's panic ended QEMU (panic=-1, -no-reboot)");
  });
  row.leftovers = expectNothingLeft(t, iso);
});

t.test("a guest whose SSH server stopped while its CPU idles is not frozen", async (t) => {
  const row = table.row(t, "the guest's SSH server stopped (SIGSTOP) while its CPU idles");
  row.exit = "- (library: examineSilentGuest)";
  const iso = isolatedTmp(t);
  await withGuest(prepared, { device: false }, async (guest) => {
    const stoppedAt = Date.now();
    // every dropbear (the listener and the session serving the harness's connection) stopped,
    // not killed: init would start a new one
    await guest.exec("kill -STOP $(pidof dropbear)", { timeoutMs: 5000 }).catch(() => undefined);
    const found = await examineSilentGuest(guest);
    row.ms = Date.now() - stoppedAt;
    row.verdict = found.kind === "not-judged" ? `ERROR (not judged): ${found.reason}` : found.kind;
    t.equal(found.kind, "not-judged");
    if (found.kind !== "not-judged") return;
    t.match(
      found.reason,
      /stopped answering SSH while QEMU ran, with its CPU idle \(an NMI found it in \S+\): not a freeze of the kernel/,
    );
  });
  row.leftovers = expectNothingLeft(t, iso);
});
