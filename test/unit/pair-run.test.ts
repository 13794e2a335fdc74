// A ULP workload on two guests with a fake pair (no QEMU): the target's steps in the second guest
// on its fabric address, faults armed on the device the step names, both devices counted, the pair
// disposed of; a device server that died meanwhile makes the run the harness's fault.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { bootPair } from "../../harness/boot.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { loadScenarioFile } from "../../harness/scenario/load.ts";
import { observePair } from "../../harness/suite/pair-run.ts";

type Reply = { exitCode: number; stdout: string; stderr: string };
const ok = (stdout = ""): Reply => ({ exitCode: 0, stdout, stderr: "" });

function fakePair(opts: { serverExit?: { code: number | null; signal: NodeJS.Signals | null } } = {}) {
  const commands: string[][] = [[], []];
  const requests: Record<string, unknown>[] = [];
  let disposed = 0;
  const guest = (index: number) => ({
    index,
    pid: 1000 + index,
    qemuExit: undefined,
    consoleLog: () => "[    1.0] booted\n",
    async exec(command: string) {
      commands[index]?.push(command);
      return command === "rdma resource show" ? ok("0: erdma_0: qp 0\n") : ok();
    },
    async copyTo() {},
  });
  const pair = {
    guests: [guest(0), guest(1)],
    fabricIps: ["10.99.0.1", "10.99.0.2"],
    server: {
      pid: 999,
      exit: opts.serverExit,
      devices: [{ name: "erdma0" }, { name: "erdma1" }],
      async control(req: Record<string, unknown>) {
        requests.push(req);
        // the host's QP connects to the target's port, the target's accepted on it
        const qps = [
          { qpn: 2, connection: { sport: 40000, dport: 7602 } },
          { qpn: 3, connection: { sport: 7602, dport: 40000 } },
        ];
        return req.op === "snapshot" ? { ok: true, state: { qps, cqs: [], mrs: [] } } : { ok: true, id: 1 };
      },
    },
    async dispose() {
      disposed++;
    },
  };
  const boot = (async () => pair) as unknown as typeof bootPair;
  return { boot, commands, requests, disposed: () => disposed };
}

async function compiled(t: { testdir(): string }) {
  const file = join(t.testdir(), "ulp-p.yaml");
  writeFileSync(
    file,
    [
      "description: d",
      "workload: nvme-rdma",
      "guests: 2",
      "drivers: [erdma]",
      "covers: [hang]",
      "profiles: [linux]",
      "steps:",
      "  - ulp: target-up",
      "  - fault: { kind: drop-cqe, on: peer, queue: rq, status: WR_FLUSH_ERR }",
      "  - ulp: connect",
      "  - ulp: target-down",
      "",
    ].join("\n"),
  );
  return compileScenario(await loadScenarioFile(file), { addr: "10.0.2.15", port: 7602 });
}

const opts = (boot: typeof bootPair, dir: string) => ({
  prepared: {} as never,
  consoles: [join(dir, "c1.log"), join(dir, "c2.log")] as const,
  hwTraces: [join(dir, "none-1.jsonl"), join(dir, "none-2.jsonl")] as const,
  boot,
});

t.test(
  "the target in the second guest on its fabric address, the fault on the target's device",
  async (t) => {
    const fake = fakePair();
    const out = await observePair(opts(fake.boot, t.testdir()), await compiled(t));
    const steps = (i: number) => fake.commands[i]?.filter((c) => c.startsWith("sh ")) ?? [];
    t.same(
      steps(1).map((c) => c.split(" ")[3]),
      ["target-up", "target-down"],
      "the target's steps in the second guest",
    );
    t.same(
      steps(0).map((c) => c.split(" ")[3]),
      ["connect"],
    );
    t.match(steps(0)[0], / 10\.99\.0\.2 7602 /, "the host connects to the second guest's fabric address");
    t.same(
      fake.commands.map((c) => c[0]),
      ["modprobe erdma", "modprobe erdma"],
      "erdma loaded in each guest first",
    );
    t.match(
      fake.requests.find((r) => r.op === "fault"),
      {
        device: "erdma1",
        fault: { kind: "drop-cqe", queue: "rq", syndrome: 15, qpn: 3 },
      },
    );
    t.same(
      fake.requests.filter((r) => r.op === "snapshot").map((r) => r.device),
      ["erdma0", "erdma1", "erdma1", "erdma0", "erdma1"],
      "both devices counted before and after; the target's device asked for its QP",
    );
    t.match(
      out.observations.find((o) => o.ev === "fault"),
      { spec: { device: "erdma1" } },
    );
    t.equal(out.error, undefined);
    t.equal(out.hwText, "", "no trace files: an empty trace, not a crash");
    t.equal(fake.disposed(), 1, "the pair is disposed of");
  },
);

t.test("a device server that died while the scenario ran: the harness's fault", async (t) => {
  const fake = fakePair({ serverExit: { code: null, signal: "SIGKILL" } });
  const out = await observePair(opts(fake.boot, t.testdir()), await compiled(t));
  t.match(out.harnessFault, /the device server \(pid 999\) was killed by SIGKILL while the scenario ran/);
  t.equal(out.error, out.harnessFault);
  t.equal(fake.disposed(), 1);
});
