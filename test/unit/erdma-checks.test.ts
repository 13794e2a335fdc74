// The erdma checks of `hil run` and the integration tests, on output captured from a real
// debian:6.12 guest (test/fixtures/erdma): parsers, the expectations a profile implies, the
// lifecycle-vs-trace match, and that each smoke check's verdict is honest (PASS on the real
// output, FAIL with evidence when something is off, SKIP without a device).
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { SMOKE_CHECKS, type SmokeContext } from "../../harness/probe/checks.ts";
import {
  compareDevinfo,
  dmesgProblems,
  expectedDevinfo,
  LIFECYCLE_TOOL,
  matchLifecycle,
  nodeGuidOf,
  parseIbvDevinfo,
  parseLifecycle,
  parseRdmaLink,
} from "../../harness/probe/expectations.ts";
import { type HwTraceEvent, parseHwTrace } from "../../harness/protocol/hw-trace.ts";
import { profileReflush } from "../../qemu/erdma/index.ts";

const FIXTURES = new URL("../fixtures/erdma/", import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, FIXTURES), "utf8");
const DEVINFO = fixture("ibv_devinfo-v-6.12.txt");
const LINK = fixture("rdma-link-6.12.txt");
const LIFECYCLE = fixture("lifecycle-6.12.txt");
const TRACE = fixture("hw-trace-lifecycle-6.12.jsonl");
const MAC = "52:54:00:12:34:56";
const RELEASE = "6.12.95";

t.test("rdma link and ibv_devinfo -v as the guest prints them", async (t) => {
  t.same(parseRdmaLink(LINK), [
    { device: "erdma_0", port: 1, state: "ACTIVE", physicalState: "LINK_UP", netdev: "eth0" },
  ]);
  const [dev] = parseIbvDevinfo(DEVINFO);
  t.equal(dev?.hcaId, "erdma_0");
  t.equal(dev?.attrs.vendor_part_id, "4223");
  t.equal(dev?.attrs.max_qp, "1023");
  t.equal(dev?.ports.length, 1);
  t.equal(dev?.ports[0]?.link_layer, "Ethernet");
  t.equal(nodeGuidOf(MAC), "5054:00ff:fe12:3456");
  t.same(parseIbvDevinfo("No IB devices found\n"), []);
});

t.test("the attributes a profile implies, through the driver's arithmetic", async (t) => {
  const [dev] = parseIbvDevinfo(DEVINFO);
  if (!dev) throw new Error("fixture");
  const want = expectedDevinfo(profileReflush, { mac: MAC, kernelRelease: RELEASE });
  t.same(compareDevinfo(dev, want), [], "the real output matches erdma-reflush");
  const bigger = { ...profileReflush, caps: { ...profileReflush.caps, qblock: 2, maxCqeLog2: 12 } };
  t.same(
    compareDevinfo(dev, expectedDevinfo(bigger, { mac: MAC, kernelRelease: RELEASE })),
    [
      "max_qp: got 1023, want 2047",
      "max_cq: got 2047, want 4095",
      "max_cqe: got 65536, want 4096",
      "max_mr: got 2048, want 4096",
    ],
    "another profile's numbers do not match",
  );
  const atomic = { ...profileReflush, caps: { ...profileReflush.caps, atomic: true } };
  t.equal(expectedDevinfo(atomic, { mac: MAC, kernelRelease: "7.2.13" }).atomic_cap, "ATOMIC_GLOB (2)");
  t.equal(
    expectedDevinfo(atomic, { mac: MAC, kernelRelease: "6.1.192" }).atomic_cap,
    "ATOMIC_NONE (0)",
    "6.1 knows no atomics",
  );
  t.same(
    compareDevinfo(
      dev,
      expectedDevinfo(profileReflush, { mac: "52:54:00:aa:bb:cc", kernelRelease: RELEASE }),
    ),
    ["node_guid: got 5054:00ff:fe12:3456, want 5054:00ff:feaa:bbcc"],
  );
});

t.test("dmesg: the driver's complaints and kernel warnings", async (t) => {
  t.same(dmesgProblems("[    1.0] erdma: loaded\n[    1.1] virtio_net virtio0 eth0: up\n"), []);
  t.same(dmesgProblems("[    2.0] erdma 0000:00:03.0: wait init done failed.\n"), [
    "[    2.0] erdma 0000:00:03.0: wait init done failed.",
  ]);
  const warn =
    "[    3.0] WARNING: CPU: 0 PID: 1 at drivers/infiniband/hw/erdma/erdma_cmdq.c:60 put_comp_wait+0x1/0x2\n";
  t.equal(dmesgProblems(warn).length, 1);
});

t.test("the lifecycle tool's report matches the trace", async (t) => {
  const steps = parseLifecycle(LIFECYCLE);
  t.equal(steps.length, 21);
  t.ok(steps.every((s) => s.ok));
  t.equal(steps.find((s) => s.step === "create_qp")?.fields.qpn, "1");
  const events = parseHwTrace(TRACE, { source: "hw-trace-lifecycle-6.12.jsonl" });
  const good = matchLifecycle(steps, events);
  t.same(good.problems, []);
  t.same(good.commands, [
    "REG_MR stag=0x100 rights=local_read,local_write,remote_read,remote_write",
    "REG_MR stag=0x200 rights=local_read,local_write",
    "CREATE_CQ cqn=1 depth=64",
    "CREATE_CQ cqn=2 depth=128",
    "CREATE_QP qpn=1 sqCqn=1 rqCqn=2",
    "MODIFY_QP qpn=1 to=ERROR",
    "DESTROY_QP qpn=1",
    "DESTROY_CQ cqn=2",
    "DESTROY_CQ cqn=1",
    "DEREG_MR stag=0x200",
    "DEREG_MR stag=0x100",
  ]);
  const edit = (fn: (e: HwTraceEvent) => HwTraceEvent | undefined) =>
    events.map((e) => fn({ ...e })).filter((e): e is HwTraceEvent => e !== undefined);
  const failed = edit((e) =>
    e.kind === "cmd" && e.name === "MODIFY_QP" ? { ...e, status: 6, statusName: "BAD_STATE" } : e,
  );
  t.match(matchLifecycle(steps, failed).problems, [/MODIFY_QP failed in the device: BAD_STATE/]);
  const lost = edit((e) =>
    e.kind === "cmd" && e.name === "DEREG_MR" && (e.detail as { stag: string }).stag === "0x100"
      ? undefined
      : e,
  );
  t.match(matchLifecycle(steps, lost).problems, [/10 object commands, want 11/]);
  const rights = edit((e) =>
    e.kind === "cmd" && e.name === "REG_MR" && (e.detail as { stag: string }).stag === "0x200"
      ? { ...e, detail: { ...(e.detail as object), rights: ["local_read"] } }
      : e,
  );
  t.match(matchLifecycle(steps, rights).problems, [
    /command 2 REG_MR: rights local_read, want local_read,local_write/,
  ]);
  const unarmed = edit((e) => (e.kind === "doorbell" && e.db === "cq" ? undefined : e));
  t.match(matchLifecycle(steps, unarmed).problems, [/no CQ doorbell arming CQ 1/]);
  const wrongQp = parseLifecycle(LIFECYCLE.replaceAll("qpn=1", "qpn=7"));
  t.ok(matchLifecycle(wrongQp, events).problems.some((p) => /qpn 1, the tool says 7/.test(p)));
  const toolFailed = parseLifecycle("ok round n=1 device=erdma_0\nFAIL create_qp: Input/output error\n");
  t.match(matchLifecycle(toolFailed, events).problems, [/the tool failed at create_qp: Input\/output error/]);
});

/** A guest session answering the commands the checks send with canned output. */
function fakeGuest(
  answers: Record<string, { stdout: string; exitCode?: number }>,
  onExec?: (cmd: string) => void,
) {
  return {
    async exec(command: string) {
      onExec?.(command);
      const a = Object.entries(answers).find(([k]) => command.startsWith(k))?.[1];
      return {
        exitCode: a?.exitCode ?? (a ? 0 : 127),
        stdout: a?.stdout ?? "",
        stderr: a ? "" : "not found",
      };
    },
    consoleLog: () => "",
  };
}

const probeCheck = SMOKE_CHECKS.find((c) => c.id === "erdma-probe");
const lifecycleCheck = SMOKE_CHECKS.find((c) => c.id === "verbs-lifecycle");

t.test("smoke check erdma-probe: PASS on the real output, FAIL with evidence otherwise", async (t) => {
  if (!probeCheck) throw new Error("no erdma-probe check");
  const ctx: SmokeContext = {
    release: RELEASE,
    device: { profileName: "erdma-reflush", profile: profileReflush, mac: MAC },
  };
  const real = {
    dmesg: { stdout: "[    1.0] clean\n" },
    "rdma link": { stdout: LINK },
    "cat /sys/class/net/eth0/address": { stdout: `${MAC}\n` },
    "ibv_devinfo -v": { stdout: DEVINFO },
  };
  const pass = await probeCheck.run(fakeGuest(real), ctx);
  t.equal(pass.verdict, "PASS", pass.reason);
  t.match(pass.reason, /erdma_0 bound to eth0/);
  const otherNic = await probeCheck.run(
    fakeGuest({ ...real, "cat /sys/class/net/eth0/address": { stdout: "52:54:00:00:00:01\n" } }),
    ctx,
  );
  t.equal(otherNic.verdict, "FAIL");
  t.match(otherNic.reason, /bound to eth0 \(52:54:00:00:00:01\), not the NIC with 52:54:00:12:34:56/);
  const noDevice = await probeCheck.run(
    fakeGuest({
      ...real,
      "rdma link": { stdout: "" },
      "ibv_devinfo -v": { stdout: "No IB devices found\n" },
    }),
    ctx,
  );
  t.equal(noDevice.verdict, "FAIL");
  t.match(noDevice.evidence, [/rdma link shows no erdma device/, /ibv_devinfo -v lists no erdma device/]);
  const dmesgErr = await probeCheck.run(
    fakeGuest({
      ...real,
      dmesg: { stdout: "[ 2.0] erdma 0000:00:03.0: ib_register_device failed: ret = -22\n" },
    }),
    ctx,
  );
  t.equal(dmesgErr.verdict, "FAIL");
  t.match(dmesgErr.reason, /^dmesg: .*ib_register_device failed/);
  const wrongAttrs = await probeCheck.run(fakeGuest(real), {
    ...ctx,
    device: { profileName: "x", profile: { ...profileReflush, fwVersion: 0x20003 }, mac: MAC },
  });
  t.equal(wrongAttrs.verdict, "FAIL");
  t.match(wrongAttrs.reason, /fw_ver: got 0\.1\.515, want 0\.2\.3/);
  const skip = await probeCheck.run(fakeGuest(real), { release: RELEASE });
  t.equal(skip.verdict, "SKIP");
});

t.test("smoke check verbs-lifecycle: the tool and the trace must agree", async (t) => {
  if (!lifecycleCheck) throw new Error("no verbs-lifecycle check");
  const dir = t.testdir({});
  const traceFile = join(dir, "hw-trace.jsonl");
  const probeLines =
    '{"t":1,"dev":"erdma","kind":"cmd","opcode":0,"submod":0,"name":"QUERY_DEVICE","cookie":0,"sqeIdx":4,"status":0,"statusName":"OK"}\n';
  const ctx: SmokeContext = {
    release: RELEASE,
    device: { profileName: "erdma-reflush", profile: profileReflush, mac: MAC, traceFile },
  };
  // the device server writes the round's events while the tool runs
  const running = (trace: string) => (cmd: string) => {
    if (cmd.startsWith(LIFECYCLE_TOOL)) appendFileSync(traceFile, trace);
  };
  writeFileSync(traceFile, probeLines);
  const pass = await lifecycleCheck.run(
    fakeGuest({ [LIFECYCLE_TOOL]: { stdout: LIFECYCLE } }, running(TRACE)),
    ctx,
  );
  t.equal(pass.verdict, "PASS", pass.reason);
  t.match(pass.reason, /21 steps passed; the trace shows 11 matching commands/);
  writeFileSync(traceFile, probeLines);
  const withoutDestroy = TRACE.split("\n")
    .filter((l) => !l.includes('"name":"DESTROY_QP"'))
    .join("\n");
  const fail = await lifecycleCheck.run(
    fakeGuest({ [LIFECYCLE_TOOL]: { stdout: LIFECYCLE } }, running(withoutDestroy)),
    ctx,
  );
  t.equal(fail.verdict, "FAIL");
  t.match(fail.reason, /the hardware trace disagrees: the trace has 10 object commands/);
  t.ok(
    fail.evidence?.some((l) => l.startsWith("trace: CREATE_QP")),
    "the trace's commands are the evidence",
  );
  const toolFail = await lifecycleCheck.run(
    fakeGuest({
      [LIFECYCLE_TOOL]: { stdout: "ok round n=1\nFAIL alloc_pd: Cannot allocate memory\n", exitCode: 1 },
    }),
    ctx,
  );
  t.equal(toolFail.verdict, "FAIL");
  t.match(toolFail.reason, /hil-verbs-lifecycle failed at alloc_pd: Cannot allocate memory/);
  const noTool = await lifecycleCheck.run(fakeGuest({}), ctx);
  t.equal(noTool.verdict, "FAIL");
  t.match(noTool.reason, /exited with 127/);
  const skip = await lifecycleCheck.run(fakeGuest({}), { release: RELEASE });
  t.equal(skip.verdict, "SKIP");
});
