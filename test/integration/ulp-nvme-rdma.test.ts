// NVMe over Fabrics on RDMA as a workload, end to end through `hil run --scenario 'ulp-*'`: the real
// nvmet-rdma and nvme-rdma of debian:6.12 (the ulp config fragment added by the run) over the
// emulated erdma device and over siw connect, move 1 MiB that reads back as written, disconnect and
// tear down with nothing left; a send WQE the device fails mid-I/O is armed and judged; on 6.1 with
// the 2022 hardware the disconnect hangs in ib_drain_qp (hil repro), with the stack.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { ULP_SCRIPT } from "../../harness/executor/ulp.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

type Obs = { ev: string; [k: string]: unknown };
type Scen = {
  name: string;
  judgements: { verdict: string; rules: { rule: string; verdict: string }[] }[];
  observations?: Obs[];
};

function verdicts(dir: string): { scenarios: Scen[]; kernel: string } {
  return JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
}

t.test(
  "hil run --scenario 'ulp-*' on erdma-reflush: data checked, teardown complete, the fault judged",
  async (t) => {
    const iso = isolate();
    const dir = join(t.testdir({}), "run");
    const r = await hil(["run", "--scenario", "ulp-*", "--run-dir", dir], iso.env);
    t.match(
      r.stderr,
      /7 ULP workload scenario\(s\) selected: the kernel gets --config ulp/,
      "the fragment is said",
    );
    t.match(
      r.stdout,
      /^ulp-nvme-rdma-io +PASS +ulp-data:1 ulp-steps:5 ulp-leak:2 hw-complete:\d{3,} hang:5 +every rule holds$/m,
      r.stdout,
    );
    t.match(
      r.stdout,
      /^ulp-nvme-rdma-lost-flush +XFAIL .*rule hw-complete: injected fault \(.*\): QP \d+ rq WQE \d+ \(flushed\): 1 completion\(s\) owed and never written \(a WR lost\)$/m,
      "the flush completion the device held back is named from the device's own trace",
    );
    const v = verdicts(dir);
    t.match(v.kernel, /debian:6\.12.*ulp/, "the kernel carries the ulp fragment");
    const io = v.scenarios.find((s) => s.name === "ulp-nvme-rdma-io");
    const steps = io?.observations?.filter((o) => o.ev === "ulp-step") ?? [];
    t.same(
      steps.map((s) => [s.action, s.exitCode]),
      [
        ["target-up", 0],
        ["connect", 0],
        ["io 1024 KiB", 0],
        ["disconnect", 0],
        ["target-down", 0],
      ],
      "every step ran and returned 0",
    );
    const data = steps[2]?.values as Record<string, string>;
    t.equal(data.bytes, "1048576", "1 MiB read back");
    t.equal(data["read-sha256"], data["written-sha256"], "the same data");
    t.match(
      String(steps[2]?.values && (steps[2].values as Record<string, string>).device),
      /^\/dev\/nvme\dn1$/,
    );
    const counted = io?.observations?.filter((o) => o.ev === "ulp-objects").map((o) => o.source);
    t.same(counted, ["kernel", "device"], "objects counted by rdma resource and by the device model");

    t.match(
      r.stdout,
      /^ulp-nvme-rdma-stall-sq +PASS +ulp-data:1 ulp-steps:5 ulp-leak:2 hw-complete:\d+ hang:5 +every rule holds$/m,
      "a send queue stalled for 2 s mid-I/O: late, intact, torn down",
    );
    // a lost completion interrupt: the device wrote every completion, nobody polls the unarmed CQ
    t.match(
      r.stdout,
      /^ulp-nvme-rdma-lost-irq +XFAIL +hang:3 hw-complete:\d+ +rule hang: injected fault \(a lost completion interrupt/m,
    );
    // across two guests: the host in the first connects to the target in the second over the fabric
    t.match(
      r.stdout,
      /^ulp-nvme-rdma-two-guests +PASS +ulp-data:1 ulp-steps:5 ulp-leak:2 hw-complete:\d{3,} hang:5 +every rule holds$/m,
    );
    t.match(
      r.stderr,
      /\[suite\] ulp-nvme-rdma-two-guests on two guests joined by the erdma fabric: done/,
      "the pair's progress",
    );
    const two = v.scenarios.find((s) => s.name === "ulp-nvme-rdma-two-guests");
    const connect = two?.observations?.find((o) => o.ev === "ulp-step" && o.action === "connect");
    t.match(connect?.values, { connected: /^instance=\d+,cntlid=\d+$/ });
    const twoHw = readFileSync(join(dir, "traces", "ulp-nvme-rdma-two-guests.hw.jsonl"), "utf8");
    t.match(twoHw, /"dev":"erdma0"/, "the host's device in the trace");
    t.match(twoHw, /"dev":"erdma1"/, "and the target's");
    const lostIrq = v.scenarios.find((s) => s.name === "ulp-nvme-rdma-lost-irq");
    t.match(
      String(lostIrq?.observations?.find((o) => o.ev === "stuck")?.stack),
      /ib_drain_qp|blk_wait_io/,
      "the stuck I/O or drain's stack",
    );
    const lostFlush = v.scenarios.find((s) => s.name === "ulp-nvme-rdma-lost-flush");
    t.same(
      lostFlush?.judgements[0]?.rules.filter((x) => x.verdict !== "PASS").map((x) => [x.rule, x.verdict]),
      [["hw-complete", "XFAIL"]],
      "only the device-side rule sees it: the ULP's steps, data and drains are fine",
    );

    // The QP the device failed mid-I/O is in ERROR; the ULP's recovery disconnects it (MODIFY_QP to
    // CLOSING, which the model refuses from ERROR), so erdma never arms its REFLUSH and the drain
    // that follows waits for a marker the device never completes: a hang, with the drain's stack
    const fault = v.scenarios.find((s) => s.name === "ulp-nvme-rdma-error-mid-io");
    const armed = fault?.observations?.find((o) => o.ev === "fault");
    t.match(armed?.spec, { kind: "error-wqe", queue: "sq" }, "the fault was armed on the device");
    const judged = fault?.judgements[0];
    t.equal(judged?.verdict, "FAIL");
    t.equal(judged?.rules.find((x) => x.rule === "hang")?.verdict, "FAIL", "the FAIL is the hang");
    const stuck = fault?.observations?.find((o) => o.ev === "stuck");
    t.match(String(stuck?.stack), /__ib_drain_sq/, "the blocked drain's stack is the evidence");
    t.match(String(stuck?.stack), /nvme_rdma/, "in nvme-rdma's teardown");
    const hwTrace = readFileSync(join(dir, "traces", "ulp-nvme-rdma-error-mid-io.hw.jsonl"), "utf8");
    const events = hwTrace
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Obs);
    const failedQp = (
      events.find((e) => e.kind === "fault" && e.action === "fired")?.context as { qpn?: number }
    )?.qpn;
    const refused = events.find(
      (e) => e.kind === "cmd" && e.name === "MODIFY_QP" && e.statusName === "BAD_STATE",
    );
    t.equal(refused?.reason, "ERROR -> CLOSING", "the device refused to move the failed QP to CLOSING");
    t.notOk(
      events.some(
        (e) => e.kind === "cmd" && e.name === "REFLUSH" && (e.detail as { qpn?: number })?.qpn === failedQp,
      ),
      `erdma sent no REFLUSH for the failed QP ${failedQp}`,
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("the same hardware error on a device that accepts MODIFY_QP CLOSING in ERROR: no hang", async (t) => {
  const iso = isolate();
  const dir = t.testdir({
    // a profile of one's own: erdma-reflush with the other answer (qemu/erdma/profile.ts closeInError)
    "erdma-close-in-error.json": JSON.stringify({
      name: "erdma-close-in-error",
      extends: "erdma-reflush",
      closeInError: "accept",
    }),
  });
  const run = join(dir, "run");
  const r = await hil(
    [
      "run",
      "--device-profile",
      join(dir, "erdma-close-in-error.json"),
      "--scenario",
      "ulp-nvme-rdma-error-mid-io",
      "--run-dir",
      run,
    ],
    iso.env,
  );
  const s = verdicts(run).scenarios.find((x) => x.name === "ulp-nvme-rdma-error-mid-io");
  const rules = Object.fromEntries(s?.judgements[0]?.rules.map((x) => [x.rule, x.verdict]) ?? []);
  t.equal(rules.hang, "PASS", `the error recovery's drain completes: ${r.stdout}`);
  t.equal(rules["ulp-steps"], "PASS", "every step returned what it meant");
  t.equal(rules["ulp-data"], "PASS", "the I/O's data is intact after the recovery");
  t.equal(rules["hw-complete"], "PASS", "every WQE the device took completed once");
  const hw = readFileSync(join(run, "traces", "ulp-nvme-rdma-error-mid-io.hw.jsonl"), "utf8");
  t.match(hw, /"accepted":"CLOSING in ERROR \(closeInError: accept\)"/, "the device accepted the disconnect");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test(
  "on a kernel without the ULP fragment the step script says it cannot run (exit 3), naming what is missing",
  async (t) => {
    const iso = isolate();
    // without its comments: dropbear refuses a command longer than 9000 bytes ("Unable to exec")
    const script = readFileSync(ULP_SCRIPT, "utf8")
      .split("\n")
      .filter((line) => !/^\s*#/.test(line))
      .join("\n");
    // the default kernel: no block layer, no configfs, no nvmet
    const r = await hil(
      [
        "boot",
        "--kernel",
        "debian:6.12",
        "--",
        "sh",
        "-c",
        script,
        "hil-ulp",
        "nvme-rdma",
        "target-up",
        "10.0.2.15",
        "7600",
        "hil-x",
        "0",
      ],
      iso.env,
    );
    t.equal(r.exitCode, 3, `${r.stdout}${r.stderr}`.slice(-2000));
    t.match(r.stderr, /cannot mount configfs on \/sys\/kernel\/config \(CONFIG_CONFIGFS_FS\)/);
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("the same workload on siw passes", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const r = await hil(
    ["run", "--driver", "siw", "--scenario", "ulp-nvme-rdma-io", "--run-dir", dir],
    iso.env,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-3000));
  t.match(
    r.stdout,
    /^ulp-nvme-rdma-io +PASS +ulp-data:1 ulp-steps:5 ulp-leak:1 hang:5/m,
    "no device model: one count, no hw-complete",
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("hil repro nvme-rdma-disconnect-hang-6.1: the disconnect hangs in ib_drain_qp", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const r = await hil(["repro", "nvme-rdma-disconnect-hang-6.1", "--run-dir", dir], iso.env);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(r.stdout, /REPRODUCES/);
  const stuck = verdicts(dir)
    .scenarios.find((s) => s.name === "ulp-nvme-rdma-io")
    ?.observations?.find((o) => o.ev === "stuck");
  t.equal(stuck?.op, "ulp disconnect", "the disconnect is the step that hung");
  t.match(String(stuck?.stack), /ib_drain_qp/);
  t.match(String(stuck?.stack), /nvme_rdma/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
