// Faults injected into the emulated erdma at run time through the device server's control channel,
// with the real Linux 6.12 driver and the in-kernel executor: a WQE completed with an error moves
// the QP to ERROR the hardware way (a QP_FATAL async event, the rest flushed); a dropped flush CQE
// is a completion the driver never sees, so ib_drain_qp's wait is never satisfied by it; the
// control channel reports the device's state. Every fault is in the hardware trace.
import { join } from "node:path";
import t from "tap";
import { type BootedGuest, bootPrepared } from "../../harness/boot.ts";
import { KverbsDriver } from "../../harness/executor/kverbs-driver.ts";
import { buildGuestToolsLayer } from "../../harness/image/guest-tools.ts";
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import { buildGuestModulesLayer } from "../../harness/image/kmod.ts";
import { buildKverbsModule } from "../../harness/image/kverbs-module.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { commandLine } from "../../harness/protocol/commands.ts";
import { readHwTrace } from "../../harness/protocol/hw-trace.ts";
import { completionsOf, recordsOf, WC_WR_FLUSH_ERR } from "../../harness/protocol/trace.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";

t.setTimeout(15 * 60 * 1000);

const IP = "10.0.2.15";
/** IB_WC_LOC_ACCESS_ERR (include/rdma/ib_verbs.h), what erdma maps SEND_STAG_INVALID_ERR to */
const WC_LOC_ACCESS_ERR = 8;
const SEND_STAG_INVALID_ERR = 10;

t.test("faults through the control channel, debian:6.12", async (t) => {
  const kernel = await buildKernel({ base: "debian:6.12", configs: [] });
  const mod = await buildKverbsModule(kernel);
  const [qemu, tools, layer] = await Promise.all([
    ensureQemu(),
    buildGuestToolsLayer(),
    buildGuestModulesLayer([mod]),
  ]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, layer] });
  const traceFile = join(t.testdir({}), "hw-trace.jsonl");
  let guest: BootedGuest | undefined;
  t.teardown(async () => {
    await guest?.dispose();
  });
  guest = await bootPrepared({ qemu, kernel, initrd: image.path }, { memoryMiB: 512, device: { traceFile } });
  const device = guest.device;
  if (!device) throw new Error("no device attached");
  const kv = await KverbsDriver.load(guest, mod, { inImage: true });
  const setup = await kv.run([
    commandLine("device", { addr: IP }),
    commandLine("pd", { name: "pd0", rkey: "global" }),
    commandLine("cq", { name: "cqa", depth: 256, poll: "direct" }),
    commandLine("cq", { name: "cqb", depth: 256, poll: "direct" }),
    commandLine("listen", { name: "L", addr: IP, port: 7474, qp: "b", pd: "pd0", scq: "cqb", rcq: "cqb" }),
    commandLine("connect", { name: "a", addr: IP, port: 7474, pd: "pd0", scq: "cqa", rcq: "cqa" }),
  ]);
  const qpn = (name: string) =>
    recordsOf(setup.records, "create").find((c) => c.kind === "qp" && c.name === name)?.qp_num;
  const qpa = qpn("a");
  const qpb = qpn("b");
  t.ok(qpa && qpb, `QPs ${qpa} and ${qpb}`);

  await t.test("error-wqe: the chosen WQE fails, the QP errs and flushes the rest", async (t) => {
    const armed = await device.control({
      op: "fault",
      fault: { kind: "error-wqe", qpn: qpa, queue: "sq", nth: 2, status: SEND_STAG_INVALID_ERR },
    });
    t.match(armed, { ok: true, id: 1 });
    // The device flushes what was posted when the error struck (erdma-reflush: up to the SQ's
    // producer index then; later posts wait for a REFLUSH). The SQ is held at its first doorbell
    // until all four WRs are posted, so WR 2 fails with 3 and 4 already behind it, however the
    // host's load spaces the four doorbells.
    const held = await device.control({
      op: "fault",
      fault: { kind: "stall-queue", qpn: qpa, queue: "sq", ms: 2000 },
    });
    t.match(held, { ok: true, id: 2 });
    const r = await kv.run(
      [
        commandLine("post_recv", { qp: "b", wr_id: 100, count: 8 }),
        commandLine("post_send", { qp: "a", wr_id: 1, count: 4, len: 64, signal: "all" }),
        commandLine("poll", { cq: "cqa", min: 4, timeout: 5000 }),
        commandLine("poll", { cq: "cqb", min: 1, timeout: 5000 }),
        // the async event comes through the AEQ interrupt, beside the polled completions
        commandLine("sleep", { ms: 500 }),
      ],
      { check: false },
    );
    t.same(
      completionsOf(r.records, "a", "sq").map((c) => [c.wr_id, c.status]),
      [
        [1, 0],
        [2, WC_LOC_ACCESS_ERR],
        [3, WC_WR_FLUSH_ERR],
        [4, WC_WR_FLUSH_ERR],
      ],
      "WR 1 runs, WR 2 fails as injected, 3 and 4 are flushed",
    );
    t.match(
      recordsOf(r.records, "async"),
      [{ qp: "a", event: /fatal/i, code: 1 }],
      "the driver reports IB_EVENT_QP_FATAL (1)",
    );
    const state = await device.control({ op: "snapshot" });
    const qps = (state as { state?: { qps?: Array<{ qpn: number; state: string }> } }).state?.qps ?? [];
    t.equal(qps.find((q) => q.qpn === qpa)?.state, "ERROR", "the device's own state says ERROR");
  });

  await t.test("drop-cqe: a flush completion the driver never sees", async (t) => {
    t.match(
      await device.control({ op: "fault", fault: { kind: "drop-cqe", qpn: qpb, queue: "rq", nth: 3 } }),
      {
        ok: true,
      },
    );
    const r = await kv.run(
      [
        commandLine("post_recv", { qp: "b", wr_id: 200, count: 4 }),
        commandLine("modify", { qp: "b", state: "ERR" }),
        commandLine("poll", { cq: "cqb", min: 100, timeout: 2000 }),
      ],
      { check: false },
    );
    const ids = completionsOf(r.records, "b", "rq").map((c) => c.wr_id);
    // 101..107 were still posted (WR 1 consumed 100), 200..203 joined them: eleven flushes, one dropped
    t.equal(ids.length, 10, "one RECV of the eleven outstanding never completes");
    t.notOk(ids.includes(103), "the third flushed RECV (wr 103) is the one dropped");
    t.same(await device.control({ op: "clear" }), { ok: true });
  });

  await guest.dispose();
  guest = undefined;
  const hw = readHwTrace(traceFile);
  const faults = hw.filter((e) => e.kind === "fault");
  t.same(
    faults.map((e) => `${e.action}:${(e.fault as { kind?: string } | undefined)?.kind ?? ""}`),
    [
      "armed:error-wqe",
      "armed:stall-queue",
      "fired:stall-queue",
      "fired:error-wqe",
      "armed:drop-cqe",
      "fired:drop-cqe",
      "cleared:",
    ],
    "every arming, firing and clearing is in the hardware trace",
  );
});
