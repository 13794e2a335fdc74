// The cases of the QP in ERROR on the emulated erdma, per behaviour profile, with the real upstream driver and
// the in-kernel executor (hil_kverbs). A loopback RC pair connects over rdma_cm; QP b gets
// outstanding work on both queues (RECVs, and SENDs that wait because a has posted no RECV, half
// of them unsignaled: each profile with `recvNotPosted: "wait"`, since by default the device
// terminates a connection whose SEND finds no RECV, RFC 5041 7.2), is moved to ERROR, and then gets more RECVs and SENDs posted in ERROR.
// - erdma-reflush on Linux 6.12 (REFLUSH since 6.2) and ib-compliant: everything flushes, in order,
//   one completion per WR, unsignaled included, and ib_drain_qp returns.
// - erdma-2022 on Linux 6.1: only what was outstanding at the error flushes; the WRs posted in
//   ERROR never complete and ib_drain_qp does not return: the worker is stuck in the drain, which
//   the test sees through its timeout and stack, and the guest is then killed cleanly.
import { writeFileSync } from "node:fs";
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
import { completionsOf, postedWrs, WC_WR_FLUSH_ERR } from "../../harness/protocol/trace.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { processGone } from "./guest.ts";

const GUEST_IP = "10.0.2.15";

export interface FlushProfileCase {
  base: "debian:6.1" | "debian:6.12";
  profile: string;
  /** WRs posted in ERROR are flushed, and the drain returns */
  flushesPostsInError: boolean;
}

async function bootWithKverbs(base: FlushProfileCase["base"], profile: string, traceFile: string) {
  const kernel = await buildKernel({ base, configs: [] });
  const mod = await buildKverbsModule(kernel);
  const layer = await buildGuestModulesLayer([mod]);
  const [qemu, tools] = await Promise.all([ensureQemu(), buildGuestToolsLayer()]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, layer] });
  const guest = await bootPrepared(
    { qemu, kernel, initrd: image.path },
    { memoryMiB: 512, device: { profile, traceFile } },
  );
  return { guest, mod, kernel };
}

/** One test per case: the pair, the QP moved to ERROR, posts in ERROR, the flushes and the drain. */
export function flushProfileCases(cases: readonly FlushProfileCase[]): void {
  for (const c of cases) {
    t.test(`${c.profile} on ${c.base}`, async (t) => {
      const traceFile = join(t.testdir({}), "hw-trace.jsonl");
      let guest: BootedGuest | undefined;
      t.teardown(async () => {
        await guest?.dispose();
      });
      // the profile under test, but a SEND that finds no RECV waits for one instead of terminating
      const waiting = join(t.testdir({}), `${c.profile}-wait.json`);
      writeFileSync(
        waiting,
        JSON.stringify({
          name: `${c.profile}-wait`,
          extends: c.profile,
          description: `${c.profile}, with SENDs that wait for a RECV`,
          source: "test/support/erdma-flush-profile-cases.ts",
          recvNotPosted: "wait",
        }),
      );
      const booted = await bootWithKverbs(c.base, waiting, traceFile);
      guest = booted.guest;
      const qemuPid = guest.pid;
      const serverPid = guest.device?.pid ?? 0;
      const kv = await KverbsDriver.load(guest, booted.mod, { inImage: true });

      const setup = await kv.run([
        commandLine("device", { addr: GUEST_IP }),
        commandLine("pd", { name: "pd0", rkey: "global" }),
        commandLine("cq", { name: "cqa", depth: 256, poll: "direct" }),
        commandLine("cq", { name: "cqb", depth: 256, poll: "direct" }),
        commandLine("listen", {
          name: "L",
          addr: GUEST_IP,
          port: 7471,
          qp: "b",
          pd: "pd0",
          scq: "cqb",
          rcq: "cqb",
        }),
        commandLine("connect", { name: "a", addr: GUEST_IP, port: 7471, pd: "pd0", scq: "cqa", rcq: "cqa" }),
        // data first: the pair works
        commandLine("post_recv", { qp: "b", wr_id: 100, count: 4 }),
        commandLine("post_send", { qp: "a", wr_id: 1, count: 4, len: 512, signal: "last" }),
        commandLine("poll", { cq: "cqb", min: 4, timeout: 10000 }),
        commandLine("poll", { cq: "cqa", min: 1, timeout: 10000 }),
      ]);
      t.equal(setup.done.length, 10, "the pair connects and moves data");
      t.same(
        completionsOf(setup.records, "b", "rq").map((x) => [x.wr_id, x.status, x.byte_len]),
        [100, 101, 102, 103].map((id) => [id, 0, 512]),
        "four RECVs complete with the payload length",
      );

      const outstanding = await kv.run(
        [
          commandLine("post_recv", { qp: "b", wr_id: 1000, count: 8 }),
          // a has no RECV posted: these SENDs stay outstanding on b's SQ
          commandLine("post_send", { qp: "b", wr_id: 500, count: 4, len: 64, signal: 2 }),
          commandLine("modify", { qp: "b", state: "ERR" }),
          commandLine("post_recv", { qp: "b", wr_id: 2000, count: 3 }),
          commandLine("post_send", { qp: "b", wr_id: 600, count: 2, len: 64, signal: "none" }),
          commandLine("poll", { cq: "cqb", min: 17, timeout: 4000 }),
        ],
        { check: false },
      );
      t.ok(
        postedWrs(outstanding.records)
          .filter((w) => w.qp === "b")
          .every((w) => w.rc === 0),
        "every post returns 0, in ERROR too (IB 11.4.1.1)",
      );
      const rq = completionsOf(outstanding.records, "b", "rq");
      const sq = completionsOf(outstanding.records, "b", "sq");
      const before = { rq: [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007], sq: [500, 501, 502, 503] };
      const inError = { rq: [2000, 2001, 2002], sq: [600, 601] };
      const want = c.flushesPostsInError
        ? { rq: [...before.rq, ...inError.rq], sq: [...before.sq, ...inError.sq] }
        : before;
      t.same(
        rq.map((x) => x.wr_id),
        want.rq,
        "RECV flushes: in posting order, once each",
      );
      t.same(
        sq.map((x) => x.wr_id),
        want.sq,
        "SEND flushes: in posting order, unsignaled included",
      );
      t.ok(
        [...rq, ...sq].every((x) => x.status === WC_WR_FLUSH_ERR),
        "all WR_FLUSH_ERR",
      );

      const hw = readHwTrace(traceFile, { lenient: true });
      const flushes = hw.filter((e) => e.kind === "flush");
      t.ok(flushes.length > 0, "the hardware trace records the flushes");
      if (c.profile === "erdma-reflush") {
        t.ok(
          hw.some((e) => e.kind === "reflush" && e.mode === "honour"),
          "the driver's REFLUSH is honoured",
        );
        t.ok(
          flushes.some((e) => e.limit === "reflush"),
          "and bounds a flush",
        );
      }

      const drain = await kv.run([commandLine("drain", { qp: "b", which: "qp" })], {
        check: false,
        timeoutMs: 8000,
      });
      if (c.flushesPostsInError) {
        t.notOk(drain.stuck, "ib_drain_qp returns");
        t.equal(drain.done[0]?.rc, 0);
      } else {
        t.ok(drain.stuck, "ib_drain_qp does not return");
        t.match(
          drain.stuck?.stack ?? "",
          /ib_drain|__ib_drain_sq|wait_for_completion/,
          "the worker is stuck in the drain",
        );
        t.equal(drain.done.length, 0);
      }
      await guest.dispose();
      guest = undefined;
      t.ok(await processGone(qemuPid), "QEMU is gone");
      t.ok(await processGone(serverPid), "the device server is gone");
    });
  }
}
