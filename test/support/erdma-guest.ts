/**
 * The erdma device model meets the real driver: one guest per kernel version (erdma-6.1,
 * erdma-6.12, erdma-7.2 test files call erdmaGuestTest). A device server process with the default
 * profile, the unmodified upstream driver, rdma-core 44 from bookworm and the guest tool
 * hil-verbs-lifecycle; every claim is checked in dmesg, `rdma link`, `ibv_devinfo -v` and the
 * hardware trace.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { type BootedGuest, bootPrepared, DEFAULT_GUEST_MAC, prepareGuest } from "../../harness/boot.ts";
import { parseConsole } from "../../harness/console/parse.ts";
import {
  compareDevinfo,
  dmesgProblems,
  expectedDevinfo,
  LIFECYCLE_TOOL,
  matchLifecycle,
  parseIbvDevinfo,
  parseLifecycle,
  parseRdmaLink,
} from "../../harness/probe/expectations.ts";
import { eventsOf, type HwTraceEvent, readHwTrace } from "../../harness/protocol/hw-trace.ts";
import { loadProfile } from "../../qemu/erdma/profile-file.ts";
import { isolatedTmp } from "./cli.ts";
import { processGone } from "./guest.ts";

const PROFILE = "erdma-reflush";

function cmds(events: readonly HwTraceEvent[]) {
  return eventsOf(events, "cmd");
}

/** The trace so far (the device server is still writing it). */
function traceNow(file: string, from = 0): HwTraceEvent[] {
  return readHwTrace(file, { from, lenient: true });
}

/** Trace events from byte `from` once `done` holds for them (the server writes asynchronously). */
async function traceUntil(
  file: string,
  from: number,
  done: (events: HwTraceEvent[]) => boolean,
): Promise<HwTraceEvent[]> {
  let events: HwTraceEvent[] = [];
  for (let i = 0; i < 50; i++) {
    events = traceNow(file, from);
    if (done(events)) break;
    await sleep(100);
  }
  return events;
}

/** bytes of the trace so far: later reads start here */
function traceSize(file: string): number {
  return readFileSync(file).length;
}

function ourDirs(): string[] {
  return readdirSync(tmpdir()).filter((n) => n.startsWith("hil-erdma-"));
}

export function erdmaGuestTest(base: "debian:6.1" | "debian:6.12" | "debian:7.2"): void {
  t.setTimeout(30 * 60 * 1000);

  t.test(`${base}: the erdma driver probes on the model; the control path works`, async (t) => {
    const profile = loadProfile(PROFILE);
    const prepared = await prepareGuest({ base, configs: [] });
    const release = prepared.kernel.release;
    const dir = t.testdir({});
    const traceFile = join(dir, "hw-trace.jsonl");
    // a private TMPDIR: other tests' device dirs are not ours to count
    const iso = isolatedTmp(t);
    t.teardown(() => rmSync(iso.tmp, { recursive: true, force: true }));
    const dirsBefore = ourDirs();
    let guest: BootedGuest | undefined;
    t.teardown(async () => {
      await guest?.dispose();
    });
    guest = await bootPrepared(prepared, {
      memoryMiB: 512,
      device: { profile: PROFILE, traceFile },
      keepConsole: process.env.HIL_KEEP_CONSOLE
        ? join(process.env.HIL_KEEP_CONSOLE, `console-erdma-${base.replace(":", "-")}.log`)
        : undefined,
    });
    const g = guest;
    const device = g.device;
    if (!device) throw new Error("no device attached");
    t.comment(
      `guest ${release}: first SSH command after ${g.timings.firstCommandMs} ms (${g.timings.accel})`,
    );

    await t.test("probe: no error or WARN in dmesg; the probe sequence in the trace", async (t) => {
      const dmesg = await g.exec("dmesg");
      t.same(dmesgProblems(dmesg.stdout), [], "dmesg has no erdma error and no WARN/BUG");
      t.same(
        parseConsole(g.consoleLog()).map((e) => e.text),
        [],
        "the console is clean",
      );
      const events = traceNow(traceFile);
      const reads = events.filter((e) => e.kind === "reg-read").map((e) => e.name);
      t.equal(reads[0], "VERSION", "the driver reads VERSION first");
      t.ok(reads.includes("NETDEV_MAC_L") && reads.includes("NETDEV_MAC_H"), "and the NIC's MAC");
      const init = eventsOf(events, "reg-write").find((e) => e.name === "DEV_CTRL");
      t.equal(init?.value, "0x2", "DEV_CTRL.INIT");
      t.ok(
        events.some((e) => e.kind === "state" && e.object === "device" && e.to === "initialized"),
        "INIT_DONE after the CMDQ/AEQ registers were latched",
      );
      const probe = cmds(events);
      const names = probe.map((c) => c.name);
      t.ok(names.includes("CREATE_EQ"), "CREATE_EQ for the completion EQs");
      t.ok(names.includes("QUERY_DEVICE") && names.includes("QUERY_FW_INFO"), "QUERY_DEVICE, QUERY_FW_INFO");
      t.same(
        probe.filter((c) => c.status !== 0).map((c) => c.name),
        [],
        `every probe command completed OK: ${names.join(" ")}`,
      );
      t.same(
        events.filter((e) => ["warn", "internal-error", "dma-fault"].includes(e.kind)),
        [],
        "no device warning, fault or internal error",
      );
      // figures: from the VERSION read to the last probe command's completion
      const first = events.find((e) => e.kind === "reg-read" && e.name === "VERSION");
      const last = probe.at(-1);
      if (first && last) t.comment(`probe: ${(last.t - first.t).toFixed(1)} ms from VERSION to ${last.name}`);
    });

    await t.test("rdma link: erdma bound to the virtio-net interface", async (t) => {
      const r = await g.exec("rdma link show");
      t.equal(r.exitCode, 0, r.stderr);
      const link = parseRdmaLink(r.stdout).find((l) => l.device.startsWith("erdma"));
      t.ok(link, `rdma link: ${r.stdout.trim()}`);
      t.equal(link?.state, "ACTIVE");
      t.equal(link?.physicalState, "LINK_UP");
      t.ok(link?.netdev, "bound to a netdev");
      const driver = await g.exec(`basename $(readlink /sys/class/net/${link?.netdev}/device/driver)`);
      t.equal(driver.stdout.trim(), "virtio_net", `${link?.netdev} is the virtio-net NIC`);
      const mac = await g.exec(`cat /sys/class/net/${link?.netdev}/address`);
      t.equal(mac.stdout.trim(), DEFAULT_GUEST_MAC, "with the MAC the model reports");
    });

    await t.test("ibv_devinfo -v lists it with the attributes the model reports", async (t) => {
      const r = await g.exec("ibv_devinfo -v");
      t.equal(r.exitCode, 0, r.stderr);
      const hca = parseIbvDevinfo(r.stdout).find((d) => d.hcaId.startsWith("erdma"));
      if (!hca) {
        t.fail(`no erdma device in ibv_devinfo:\n${r.stdout}`);
        return;
      }
      const want = expectedDevinfo(profile, { mac: DEFAULT_GUEST_MAC, kernelRelease: release });
      t.same(compareDevinfo(hca, want), [], `ibv_devinfo ${hca.hcaId} matches ${PROFILE}`);
      const ceqs = cmds(traceNow(traceFile)).filter((c) => c.name === "CREATE_EQ").length;
      t.equal(Number(hca.attrs.num_comp_vectors), ceqs, "one completion vector per CEQ the driver created");
    });

    await t.test(
      "verbs objects: PD, MRs, CQs and a QP created and destroyed; the trace shows it",
      async (t) => {
        const from = traceSize(traceFile);
        const r = await g.exec(LIFECYCLE_TOOL, { timeoutMs: 60_000 });
        t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`);
        const steps = parseLifecycle(r.stdout);
        t.same(
          steps.filter((s) => !s.ok),
          [],
          "every step succeeded",
        );
        const qp = steps.find((s) => s.step === "query_qp");
        t.equal(qp?.fields.state, "INIT", "a new iWARP QP is IDLE (INIT to verbs)");
        t.equal(steps.filter((s) => s.step === "query_qp").at(-1)?.fields.state, "ERR", "then ERROR");
        const events = await traceUntil(
          traceFile,
          from,
          (ev) => cmds(ev).filter((c) => c.name === "DEREG_MR").length >= 2,
        );
        const match = matchLifecycle(steps, events);
        t.same(match.problems, [], "the trace shows the matching commands");
        t.comment(`trace: ${match.commands.join(" | ")}`);
        const qpn = Number(steps.find((s) => s.step === "create_qp")?.fields.qpn);
        const qpStates = eventsOf(events, "state")
          .filter((e) => e.object === "qp" && e.id === qpn)
          .map((e) => `${e.from}->${e.to}`);
        t.same(qpStates, ["none->IDLE", "IDLE->ERROR", "ERROR->destroyed"], "the QP's states in the device");
        const mrStates = eventsOf(events, "state")
          .filter((e) => e.object === "mr")
          .map((e) => e.to);
        t.same(mrStates, ["valid", "valid", "deregistered", "deregistered"], "MRs valid, then gone");
        t.same(
          events.filter((e) => ["warn", "internal-error", "dma-fault"].includes(e.kind)),
          [],
          "no device warning, fault or internal error",
        );
      },
    );

    await t.test("commands per second through the CMDQ", async (t) => {
      const from = traceSize(traceFile);
      const rounds = 20;
      const r = await g.exec(`${LIFECYCLE_TOOL} -r ${rounds}`, { timeoutMs: 120_000 });
      t.equal(r.exitCode, 0, r.stdout.split("\n").slice(-5).join("\n"));
      const events = await traceUntil(
        traceFile,
        from,
        (ev) => cmds(ev).filter((c) => c.name === "DEREG_MR").length >= 2 * rounds,
      );
      const list = cmds(events);
      t.equal(list.length, 11 * rounds, `${rounds} rounds of 11 commands`);
      t.ok(
        list.every((c) => c.status === 0),
        "all OK",
      );
      const span = (list.at(-1)?.t ?? 0) - (list[0]?.t ?? 0);
      // the device's share: CMDQ doorbell to the command's CQE written
      const service: number[] = [];
      let rung: number | undefined;
      for (const e of events) {
        if (e.kind === "doorbell" && e.db === "cmdq-sq") rung = e.t;
        if (e.kind === "cqe" && e.cq === "cmdq" && rung !== undefined) {
          service.push(e.t - rung);
          rung = undefined;
        }
      }
      const mean = service.reduce((a, b) => a + b, 0) / Math.max(1, service.length);
      t.comment(
        `device service time (CMDQ doorbell to CQE): mean ${mean.toFixed(2)} ms, max ${Math.max(...service).toFixed(2)} ms over ${service.length} commands`,
      );
      t.comment(
        `CMDQ: ${list.length} commands in ${span.toFixed(0)} ms of trace = ${((list.length * 1000) / span).toFixed(0)} commands/s (userspace verbs, event mode)`,
      );
    });

    await t.test("CONF_MTU follows the netdev's MTU", async (t) => {
      const from = traceSize(traceFile);
      const r = await g.exec("ip link set eth0 mtu 1400 && ip link set eth0 mtu 1500");
      t.equal(r.exitCode, 0, r.stderr);
      const events = await traceUntil(
        traceFile,
        from,
        (ev) => cmds(ev).filter((c) => c.name === "CONF_MTU").length >= 2,
      );
      t.same(
        cmds(events)
          .filter((c) => c.name === "CONF_MTU")
          .map((c) => [c.status, c.detail?.mtu]),
        [
          [0, 1400],
          [0, 1500],
        ],
      );
    });

    await t.test("remove and probe again: DESTROY_EQ, DEV_CTRL reset, a fresh init", async (t) => {
      const from = traceSize(traceFile);
      const r = await g.exec(
        `rmmod erdma && time modprobe erdma && sleep 0.5 && rdma link show && ${LIFECYCLE_TOOL}`,
        {
          timeoutMs: 60_000,
        },
      );
      t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`);
      t.match(r.stdout, /link erdma_\d+\/1 state ACTIVE/, "the device is back");
      const real = /real\s+(\S+ ?\S*)/.exec(r.stderr)?.[1];
      if (real) t.comment(`modprobe erdma (probe included) in the guest: ${real}`);
      const events = await traceUntil(
        traceFile,
        from,
        (ev) => cmds(ev).filter((c) => c.name === "DEREG_MR").length >= 2,
      );
      const names = cmds(events).map((c) => c.name);
      t.ok(names.indexOf("DESTROY_EQ") >= 0, "remove destroys the CEQs");
      t.ok(
        events.some(
          (e) => e.kind === "state" && e.object === "device" && String(e.to).startsWith("reset (DEV_CTRL"),
        ),
        "and resets the device",
      );
      t.ok(names.lastIndexOf("CREATE_EQ") > names.indexOf("DESTROY_EQ"), "the second probe sets up again");
      t.ok(
        cmds(events).every((c) => c.status === 0),
        "every command OK",
      );
      const dmesg = await g.exec("dmesg");
      t.same(dmesgProblems(dmesg.stdout), [], "dmesg still clean");
    });

    const pid = device.pid;
    const socket = device.socketPath;
    await g.dispose();
    guest = undefined;
    t.same(device.exit, { code: 0, signal: null }, "the device server exited cleanly");
    t.ok(await processGone(pid), "no device server process left");
    t.notOk(existsSync(socket), "its socket is gone");
    t.same(
      ourDirs().filter((d) => !dirsBefore.includes(d)),
      [],
      "no device temp dir left",
    );
  });

  t.test(`${base}: a device with EXTEND_DB and ATOMIC (newer firmware)`, async (t) => {
    // the default profile plus two capabilities the driver versions treat differently
    const dir = t.testdir({
      "erdma-extdb.json": JSON.stringify({
        name: "erdma-extdb",
        extends: PROFILE,
        caps: { extendDb: true, atomic: true },
      }),
    });
    const profileFile = join(dir, "erdma-extdb.json");
    const profile = loadProfile(profileFile);
    const prepared = await prepareGuest({ base, configs: [] });
    const release = prepared.kernel.release;
    const traceFile = join(dir, "hw-trace.jsonl");
    const guest = await bootPrepared(prepared, {
      memoryMiB: 512,
      device: { profile: profileFile, traceFile },
    });
    t.teardown(() => guest.dispose());
    const oldDriver = release.startsWith("6.1.");
    const info = parseIbvDevinfo((await guest.exec("ibv_devinfo -v")).stdout).find((d) =>
      d.hcaId.startsWith("erdma"),
    );
    t.ok(info, "ibv_devinfo lists it");
    if (info) {
      t.same(
        compareDevinfo(info, expectedDevinfo(profile, { mac: DEFAULT_GUEST_MAC, kernelRelease: release })),
        [],
        `attributes (atomic_cap ${info.attrs.atomic_cap})`,
      );
    }
    const from = traceSize(traceFile);
    const r = await guest.exec(LIFECYCLE_TOOL, { timeoutMs: 60_000 });
    t.equal(r.exitCode, 0, r.stdout);
    const events = await traceUntil(
      traceFile,
      from,
      (ev) =>
        cmds(ev).filter((c) => c.name === (oldDriver ? "DEREG_MR" : "FREE_DB")).length >= (oldDriver ? 2 : 1),
    );
    t.same(matchLifecycle(parseLifecycle(r.stdout), events).problems, [], "the lifecycle matches the trace");
    const all = cmds(traceNow(traceFile)).map((c) => c.name);
    if (oldDriver) {
      t.notOk(
        all.includes("CONF_DEVICE") || all.includes("ALLOC_DB"),
        "6.1 knows neither CONF_DEVICE nor ALLOC_DB",
      );
    } else {
      t.ok(all.includes("CONF_DEVICE"), "CONF_DEVICE during probe");
      const alloc = cmds(events).find((c) => c.name === "ALLOC_DB");
      t.ok(alloc, "ALLOC_DB for the user context");
      t.ok(all.includes("FREE_DB"), "FREE_DB when it closes");
      // rdma-core arms the CQ on the page in ALLOC_DB's RDB field: it must decode as a CQ doorbell
      const cqPage = Number(alloc?.detail?.rdb);
      t.ok(
        events.some(
          (e) =>
            e.kind === "doorbell" &&
            e.db === "cq" &&
            (e.detail as { page?: number } | undefined)?.page === cqPage,
        ),
        `the CQ armed through the context's own doorbell page ${cqPage}`,
      );
    }
    t.same(
      traceNow(traceFile).filter((e) => ["warn", "internal-error", "dma-fault"].includes(e.kind)),
      [],
      "no device warning, fault or internal error",
    );
    t.same(dmesgProblems((await guest.exec("dmesg")).stdout), [], "dmesg clean");
  });
}
