// The cases of the in-kernel verbs executor (guest/kverbs, hil_kverbs.ko) in real guests on soft-iWARP: built
// for the guest kernel without warnings, carried in by an initramfs layer, loaded after siw is
// attached to eth0. Through its debugfs files it connects a loopback RC pair over rdma_cm (a
// listener and a connecting id on the guest's own address), moves SEND/RECV payloads and an RDMA
// WRITE, then runs the drain scenario: receives posted, the QP moved to ERROR with ib_modify_qp,
// ib_drain_qp called. The trace must show every outstanding RECV flushed (IB_WC_WR_FLUSH_ERR), in
// posting order, exactly once, before the drain returned. A command past its time leaves the
// worker thread stuck (its stack collected), not the harness. Nothing is left behind: no verbs
// objects, no module, no thread, no QEMU, no temp dir.
import { existsSync } from "node:fs";
import t from "tap";
import { addSiwLink, KverbsDriver } from "../../harness/executor/kverbs-driver.ts";
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import { buildGuestModulesLayer } from "../../harness/image/kmod.ts";
import { buildKverbsModule } from "../../harness/image/kverbs-module.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { commandLine } from "../../harness/protocol/commands.ts";
import {
  completionsOf,
  postedWrs,
  recordsOf,
  type TraceRecord,
  WC_SUCCESS,
  WC_WR_FLUSH_ERR,
} from "../../harness/protocol/trace.ts";
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { processGone } from "./guest.ts";
import { checkEightSendsReceived } from "./send-recv-checks.ts";

const GUEST_IP = "10.0.2.15";
const PORT = 7471;

function cqeIds(records: readonly TraceRecord[], qp: string, q: "sq" | "rq"): number[] {
  return completionsOf(records, qp, q).map((c) => c.wr_id);
}

/** One test of the module on each of the kernel bases (`debian:<version>`), on siw. */
export function kverbsOnSiw(kernels: readonly string[]): void {
  for (const base of kernels) {
    t.test(`hil_kverbs on siw, ${base}`, async (t) => {
      const kernel = await buildKernel({ base, configs: [] });
      const mod = await buildKverbsModule(kernel);
      t.same(mod.warnings, [], `hil_kverbs.ko builds for ${kernel.release} without warnings`);
      const layer = await buildGuestModulesLayer([mod]);
      const [qemu, initrd] = await Promise.all([
        ensureQemu(),
        buildInitramfs(kernel, { extraLayers: [layer] }),
      ]);

      let guest: Guest | undefined;
      let qemuPid = 0;
      let workDir = "";
      t.teardown(async () => {
        await guest?.dispose();
      });
      guest = await startGuest({
        qemu,
        kernel: kernel.bzImage,
        initrd: initrd.path,
        memoryMiB: 512,
        onQemuStarted: (info) => {
          qemuPid = info.pid;
          workDir = info.workDir;
        },
      });
      const g = guest;
      t.equal(await addSiwLink(g), "siw0");
      const kv = await KverbsDriver.load(g, mod, { inImage: true });
      const status = await kv.status();
      t.equal(status.release, kernel.release, "the module runs in the kernel it was built for");
      t.ok(status.pid > 0, `worker thread pid ${status.pid}`);

      await t.test("a loopback RC pair connects over rdma_cm", async (t) => {
        const r = await kv.run([
          commandLine("device", { addr: GUEST_IP }),
          commandLine("pd", { name: "pd0", rkey: "global" }),
          commandLine("cq", { name: "cqa", depth: 256, poll: "direct" }),
          commandLine("cq", { name: "cqb", depth: 256, poll: "softirq" }),
          commandLine("listen", {
            name: "L",
            addr: GUEST_IP,
            port: PORT,
            qp: "b",
            pd: "pd0",
            scq: "cqb",
            rcq: "cqb",
            sq: 64,
            rq: 64,
          }),
          commandLine("connect", {
            name: "a",
            addr: GUEST_IP,
            port: PORT,
            pd: "pd0",
            scq: "cqa",
            rcq: "cqa",
          }),
          commandLine("query", { qp: "a" }),
          commandLine("query", { qp: "b" }),
        ]);
        t.equal(r.done.length, 8, "every command done");
        t.equal(recordsOf(r.records, "device")[0]?.name, "siw0", "the address resolves to siw0");
        const established = recordsOf(r.records, "cm").filter((c) => c.event === "ESTABLISHED");
        t.same(established.map((c) => c.id).sort(), ["a", "b"], "both ends ESTABLISHED");
        t.ok(
          recordsOf(r.records, "cm").some((c) => c.id === "L" && c.event === "CONNECT_REQUEST"),
          "the listener saw the request",
        );
        for (const q of recordsOf(r.records, "query")) {
          // siw in 6.1 does not fill qp_state in ib_query_qp: the module traces "UNSET" then
          if (q.state === "UNSET") t.comment(`${q.qp}: this siw does not report qp_state`);
          else t.equal(q.state, "RTS", `${q.qp} in RTS`);
        }
      });

      await t.test("SEND/RECV moves the payloads; WRITE completes", async (t) => {
        const r = await kv.run([
          commandLine("post_recv", { qp: "b", wr_id: 100, count: 8 }),
          commandLine("post_send", { qp: "a", wr_id: 1, count: 8, len: 256, signal: 4 }),
          commandLine("poll", { cq: "cqa", min: 2, timeout: 10000 }),
          commandLine("poll", { cq: "cqb", min: 8, timeout: 10000 }),
          commandLine("post_send", { qp: "a", op: "write", wr_id: 50, count: 2, len: 128 }),
          commandLine("poll", { cq: "cqa", min: 2, timeout: 10000 }),
        ]);
        const recvs = completionsOf(r.records, "b", "rq");
        checkEightSendsReceived(t, recvs);
        t.same(
          cqeIds(r.records, "a", "sq"),
          [4, 8, 50, 51],
          "only the signaled sends complete, then the writes",
        );
        t.ok(
          completionsOf(r.records, "a", "sq").every((c) => c.status === WC_SUCCESS),
          "send queue completions all SUCCESS",
        );
        t.same(
          completionsOf(r.records, "a", "sq")
            .slice(2)
            .map((c) => c.opcode_name),
          ["RDMA_WRITE", "RDMA_WRITE"],
        );
      });

      await t.test(
        "fast registration: an unsignaled REG_MR then a signaled SEND; LOCAL_INV; SEND_WITH_INV",
        async (t) => {
          // the storage pattern of the 2022 thread: fast-register a buffer (unsignaled), then a signaled send
          const r = await kv.run([
            commandLine("post_recv", { qp: "b", wr_id: 800, count: 2 }),
            commandLine("post_send", { qp: "a", op: "reg_mr", wr_id: 710, mr: 0, signal: "none" }),
            commandLine("post_send", { qp: "a", wr_id: 711, len: 64 }),
            commandLine("poll", { cq: "cqa", min: 1, timeout: 10000 }),
            commandLine("post_send", { qp: "a", op: "local_inv", wr_id: 712, mr: 0 }),
            commandLine("post_send", {
              qp: "a",
              op: "reg_mr",
              wr_id: 713,
              mr: 1,
              access: "local_write",
              len: 512,
            }),
            commandLine("poll", { cq: "cqa", min: 2, timeout: 10000 }),
            // b registers its MR 2; a's SEND_WITH_INV asks b's side to invalidate it
            commandLine("post_send", { qp: "b", op: "reg_mr", wr_id: 720, mr: 2 }),
            // b's REG_MR is local and done at once; cqb is polled once, at the end, for all three
            commandLine("sleep", { ms: 200 }),
            commandLine("post_send", { qp: "a", op: "send_inv", wr_id: 714, mr: 2, len: 32 }),
            commandLine("poll", { cq: "cqa", min: 1, timeout: 10000 }),
            commandLine("poll", { cq: "cqb", min: 3, timeout: 10000 }),
          ]);
          const posts = recordsOf(r.records, "post").filter((p) => p.qp === "a");
          t.same(
            posts.map((p) => [p.op, p.wr_id, p.mr, p.access]),
            [
              ["reg_mr", 710, 0, "local_write,remote_read,remote_write"],
              ["send", 711, undefined, undefined],
              ["local_inv", 712, 0, undefined],
              ["reg_mr", 713, 1, "local_write"],
              ["send_inv", 714, 2, undefined],
            ],
            "the post records name the op, the MR and the access",
          );
          t.same(
            completionsOf(r.records, "a", "sq").map((c) => [c.wr_id, c.status_name, c.opcode_name]),
            [
              [711, "SUCCESS", "SEND"],
              [712, "SUCCESS", "LOCAL_INV"],
              [713, "SUCCESS", "REG_MR"],
              [714, "SUCCESS", "SEND"],
            ],
            "the unsignaled REG_MR has no completion; the signaled ones complete in order",
          );
          const mrs = recordsOf(r.records, "mr");
          t.same(
            mrs.map((m) => [m.qp, m.mr, m.action]),
            [
              ["a", 0, "alloc"],
              ["a", 0, "map"],
              ["a", 1, "alloc"],
              ["a", 1, "map"],
              ["b", 2, "alloc"],
              ["b", 2, "map"],
            ],
            "each MR allocated on first use, mapped for each REG_MR",
          );
          for (const n of [0, 1]) {
            const alloc = mrs.find((m) => m.qp === "a" && m.mr === n && m.action === "alloc");
            const map = mrs.find((m) => m.qp === "a" && m.mr === n && m.action === "map");
            t.equal(
              map?.rkey,
              (((alloc?.rkey ?? 0) & ~0xff) | (((alloc?.rkey ?? 0) + 1) & 0xff)) >>> 0,
              `MR ${n}: ib_update_fast_reg_key bumped the key byte (${alloc?.rkey} -> ${map?.rkey})`,
            );
          }
          const bMap = mrs.find((m) => m.qp === "b" && m.mr === 2 && m.action === "map");
          t.same(
            completionsOf(r.records, "b", "sq").map((c) => [c.wr_id, c.status_name, c.opcode_name]),
            [[720, "SUCCESS", "REG_MR"]],
          );
          const recvs = completionsOf(r.records, "b", "rq");
          t.same(
            recvs.map((c) => [c.wr_id, c.status_name, c.byte_len]),
            [
              [800, "SUCCESS", 64],
              [801, "SUCCESS", 32],
            ],
          );
          t.equal(recvs[1]?.inv, bMap?.rkey, "the receive reports the rkey the SEND_WITH_INV invalidated");
          t.equal(recvs[0]?.inv, undefined, "a plain SEND invalidates nothing");
        },
      );

      await t.test(
        "bad=<i>: the i-th WR of each call is refused; the WRs before it are posted",
        async (t) => {
          const dev = recordsOf(kv.records, "device")[0];
          t.ok(
            (dev?.max_send_sge ?? 0) > 0 && (dev?.max_recv_sge ?? 0) > 0,
            "the device record has its SGE limits",
          );
          const r = await kv.run(
            [
              commandLine("post_recv", { qp: "b", wr_id: 900, count: 6, batch: 3, bad: 1 }),
              commandLine("post_send", { qp: "a", wr_id: 950, count: 4, bad: 2 }),
              commandLine("poll", { cq: "cqa", min: 2, timeout: 10000 }),
              commandLine("poll", { cq: "cqb", min: 2, timeout: 10000 }),
            ],
            { check: false },
          );
          t.same(
            r.done.map((d) => [d.op, d.rc]),
            [
              ["post_recv", -22],
              ["post_send", -22],
              ["poll", 0],
              ["poll", 0],
            ],
            "the posts fail with EINVAL (too many SGEs), the polls get what was posted",
          );
          t.same(
            recordsOf(r.records, "post").map((p) => [p.queue, p.wr_id, p.count, p.invalid]),
            [
              ["rq", 900, 3, 1],
              ["rq", 903, 3, 1],
              ["sq", 950, 4, 2],
            ],
            "each call made its WR invalid",
          );
          t.same(
            recordsOf(r.records, "post_ret").map((p) => [p.rc, p.bad]),
            [
              [-22, 1],
              [-22, 1],
              [-22, 2],
            ],
            "post_ret's bad is the index of the invalid WR",
          );
          const posted = postedWrs(r.records);
          t.same(
            posted.filter((w) => w.accepted).map((w) => w.wrId),
            [900, 903, 950, 951],
            "the WRs before *bad_wr were posted",
          );
          t.same(
            posted.filter((w) => w.invalid).map((w) => w.wrId),
            [901, 904, 952],
          );
          t.same(
            completionsOf(r.records, "b", "rq").map((c) => [c.wr_id, c.status_name]),
            [
              [900, "SUCCESS"],
              [903, "SUCCESS"],
            ],
            "the posted receives take the two sends, in order",
          );
          t.same(
            completionsOf(r.records, "a", "sq").map((c) => [c.wr_id, c.status_name]),
            [
              [950, "SUCCESS"],
              [951, "SUCCESS"],
            ],
            "and only the posted sends complete",
          );
        },
      );

      await t.test(
        "drain: outstanding receives are flushed in order before ib_drain_qp returns",
        async (t) => {
          const N = 16;
          const r = await kv.run(
            [
              commandLine("post_recv", { qp: "b", wr_id: 1000, count: N, batch: 5 }),
              commandLine("modify", { qp: "b", state: "ERR" }),
              commandLine("drain", { qp: "b", which: "qp" }),
              commandLine("query", { qp: "b" }),
              // posted in ERROR: flushed too (IB 11.4.1.1, C10-42)
              commandLine("post_recv", { qp: "b", wr_id: 2000, count: 3 }),
              commandLine("poll", { cq: "cqb", min: 3, timeout: 10000 }),
            ],
            { timeoutMs: 60_000 },
          );
          t.ok(
            r.done.every((d) => d.rc === 0),
            "every command returned 0",
          );
          const posted = postedWrs(r.records).filter((w) => w.qp === "b" && w.queue === "rq");
          t.equal(posted.length, N + 3);
          t.ok(
            posted.every((w) => w.accepted && w.rc === 0),
            "every post returned 0",
          );
          const flushed = completionsOf(r.records, "b", "rq");
          t.same(
            flushed.map((c) => c.wr_id),
            posted.map((w) => w.wrId),
            "each RECV completed exactly once, in posting order",
          );
          t.ok(
            flushed.every((c) => c.status === WC_WR_FLUSH_ERR && c.status_name === "WR_FLUSH_ERR"),
            "all with IB_WC_WR_FLUSH_ERR",
          );
          t.ok(
            flushed.every((c) => c.cq === "cqb"),
            "on the receive CQ",
          );
          const qpNum = recordsOf(kv.records, "create").find(
            (c) => c.kind === "qp" && c.name === "b",
          )?.qp_num;
          t.ok(
            flushed.every((c) => c.qp_num === qpNum),
            `qp_num ${qpNum}`,
          );
          const modify = r.records.findIndex((x) => x.ev === "modify");
          const modifyRet = r.records.findIndex((x) => x.ev === "modify_ret");
          const drain = r.records.findIndex((x) => x.ev === "drain");
          const drainRet = r.records.findIndex((x) => x.ev === "drain_ret");
          t.ok(modify >= 0 && modifyRet > modify && drain > modifyRet, "ERROR transition before the drain");
          t.ok(drainRet > drain, "ib_drain_qp returned");
          const lastOfDrained = r.records.reduce(
            (last, x, i) => (x.ev === "cqe" && x.qp === "b" && x.wr_id < 2000 ? i : last),
            -1,
          );
          t.ok(lastOfDrained < drainRet, "the outstanding receives completed before the drain returned");
          const state = recordsOf(r.records, "query")[0]?.state;
          if (state !== "UNSET") t.equal(state, "ERR", "b in ERR");
          t.same(
            recordsOf(r.records, "destroy").filter((d) => d.kind === "qp"),
            [],
            "no QP destroyed yet",
          );
        },
      );

      await t.test(
        "drain sq: sends posted in ERROR are flushed, unsignaled ones too, in order",
        async (t) => {
          const r = await kv.run(
            [
              commandLine("modify", { qp: "a", state: "ERR" }),
              commandLine("post_send", { qp: "a", wr_id: 3000, count: 4, signal: "none" }),
              commandLine("post_send", { qp: "a", wr_id: 3004, count: 2, signal: "all" }),
              commandLine("drain", { qp: "a", which: "sq" }),
            ],
            { timeoutMs: 60_000 },
          );
          const posted = postedWrs(r.records).filter((w) => w.qp === "a");
          t.same(
            posted.map((w) => [w.wrId, w.signaled, w.accepted]),
            [
              [3000, false, true],
              [3001, false, true],
              [3002, false, true],
              [3003, false, true],
              [3004, true, true],
              [3005, true, true],
            ],
            "posting in ERROR returns 0",
          );
          const flushed = completionsOf(r.records, "a", "sq");
          t.same(
            flushed.map((c) => c.wr_id),
            [3000, 3001, 3002, 3003, 3004, 3005],
            "every send completed once, in posting order, unsignaled ones too",
          );
          t.ok(
            flushed.every((c) => c.status === WC_WR_FLUSH_ERR && c.cq === "cqa"),
            "IB_WC_WR_FLUSH_ERR on the send CQ",
          );
          const drainRet = r.records.findIndex((x) => x.ev === "drain_ret");
          const lastCqe = r.records.reduce((last, x, i) => (x.ev === "cqe" ? i : last), -1);
          t.ok(drainRet > lastCqe, "ib_drain_sq returned after them (it polled the direct CQ itself)");
        },
      );

      await t.test("a command past its time leaves the worker stuck, with its stack", async (t) => {
        const r = await kv.run([commandLine("sleep", { ms: 4000 })], { timeoutMs: 500, check: false });
        t.ok(r.stuck, "reported stuck");
        t.equal(r.stuck?.status.busy?.op, "sleep");
        t.match(r.stuck?.stack ?? "", /msleep|schedule/, "the worker's kernel stack");
        const rmmod = await g.exec("rmmod hil_kverbs");
        t.not(rmmod.exitCode, 0, "rmmod is refused while a command runs");
        t.match(rmmod.stdout + rmmod.stderr, /in use|busy|temporarily unavailable/i, "module in use");
        const later = await kv.run([], { timeoutMs: 20_000 });
        t.equal(later.status.idle, true, "and it finishes later");
        t.equal(later.done[0]?.op, "sleep");
      });

      await t.test("bad commands are refused with the reason", async (t) => {
        await t.rejects(kv.run(["post_send qp=a bogus=1"]), { message: /refused/, detail: /unknown key/ });
        await t.rejects(kv.run(["frobnicate"]), { message: /refused/, detail: /unknown operation/ });
        await t.rejects(kv.run(["post_send qp=a count=2"]), {
          message: /refused/,
          detail: /post_send qp=a count=2: a required key is missing: wr_id=$/,
        });
        await t.rejects(kv.run(["post_send qp=nosuch wr_id=1"]), {
          message: /failed/,
          detail: /no QP nosuch/,
        });
      });

      await t.test("nothing is left behind", async (t) => {
        await kv.unload();
        const destroyed = recordsOf(kv.records, "destroy");
        t.same(
          destroyed.map((d) => `${d.kind}:${d.name}`).sort(),
          ["cq:cqa", "cq:cqb", "device:siw0", "listen:L", "pd:pd0", "qp:a", "qp:b"],
          "reset destroyed every object",
        );
        t.ok(
          destroyed.filter((d) => d.kind === "qp").every((d) => d.unfinished_count === 0),
          "no QP had unfinished WRs",
        );
        t.same(
          recordsOf(kv.records, "mr")
            .filter((m) => m.action === "dereg")
            .map((m) => [m.qp, m.mr, m.rc]),
          [
            ["a", 0, 0],
            ["a", 1, 0],
            ["b", 2, 0],
          ],
          "the fast-registration MRs were deregistered with their QPs",
        );
        const res = await g.exec("rdma resource show");
        t.match(res.stdout, /siw0: pd 0 cq 0 qp 0 cm_id 0 mr 0/, "no verbs objects left on siw0");
        const del = await g.exec("rdma link delete siw0 && rmmod siw && ! [ -e /sys/class/infiniband/siw0 ]");
        t.equal(del.exitCode, 0, `siw0 deleted, siw unloaded ${del.stderr}`);
        const log = g.consoleLog();
        t.notMatch(
          log,
          /WARNING:|BUG:|Oops|hung_task|blocked for more than/,
          "no kernel warnings on the console",
        );
      });

      await guest.dispose();
      guest = undefined;
      t.ok(await processGone(qemuPid), "QEMU is gone");
      t.notOk(existsSync(workDir), "the guest's run dir is gone");
    });
  }
}
