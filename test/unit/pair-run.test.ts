// A ULP workload on two guests with a fake pair (no QEMU): the target's steps in the second guest
// on its fabric address, faults armed on the device the step names, both devices counted, the pair
// disposed of; a device server that died meanwhile makes the run the harness's fault; on siw, siw
// on each fabric NIC and no device; rnbd connects to the target's IPv6 address.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { bootPair, bootWiredPair } from "../../harness/boot.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { loadScenarioFile } from "../../harness/scenario/load.ts";
import { observePair } from "../../harness/suite/pair-run.ts";

type Reply = { exitCode: number; stdout: string; stderr: string };
const ok = (stdout = ""): Reply => ({ exitCode: 0, stdout, stderr: "" });

function fakePair(
  opts: { serverExit?: { code: number | null; signal: NodeJS.Signals | null }; hangOn?: string } = {},
) {
  const commands: string[][] = [[], []];
  const requests: Record<string, unknown>[] = [];
  let disposed = 0;
  const guest = (index: number) => ({
    index,
    fabricMac: `52:54:00:FA:B0:0${index + 1}`,
    pid: 1000 + index,
    qemuExit: undefined,
    consoleLog: () => "[    1.0] booted\n",
    async exec(command: string) {
      commands[index]?.push(command);
      if (opts.hangOn && command.includes(opts.hangOn)) return new Promise<Reply>(() => {});
      if (command.startsWith("for d in /sys/class/net/"))
        return command.includes(`"52:54:00:fa:b0:0${index + 1}"`) ? ok("eth1\n") : ok();
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
  const { server: _, ...wired } = pair;
  const bootWired = (async () => wired) as unknown as typeof bootWiredPair;
  return { boot, bootWired, commands, requests, disposed: () => disposed };
}

async function compiled(t: { testdir(): string }, workload = "nvme-rdma", fault = true, timeoutMs?: number) {
  const file = join(t.testdir(), "ulp-p.yaml");
  writeFileSync(
    file,
    [
      "description: d",
      `workload: ${workload}`,
      "guests: 2",
      "covers: [hang]",
      "profiles: [linux]",
      ...(timeoutMs ? [`timeout_ms: ${timeoutMs}`] : []),
      "steps:",
      "  - ulp: target-up",
      ...(fault ? ["  - fault: { kind: drop-cqe, on: peer, queue: rq, status: WR_FLUSH_ERR }"] : []),
      "  - ulp: connect",
      "  - ulp: target-down",
      "",
    ].join("\n"),
  );
  return compileScenario(await loadScenarioFile(file), { addr: "10.0.2.15", port: 7602 });
}

const opts = (boot: typeof bootPair, dir: string) => ({
  prepared: {} as never,
  driver: "erdma" as const,
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
      fake.commands.map((c) => c.slice(1, 3)),
      [
        ["ip -6 addr add fd99::1/64 dev eth1 nodad", "modprobe erdma"],
        ["ip -6 addr add fd99::2/64 dev eth1 nodad", "modprobe erdma"],
      ],
      "in each guest first: the fabric NIC's IPv6 address, then erdma",
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

t.test("on siw: siw on each guest's fabric NIC, no device; rnbd connects to the target's IPv6", async (t) => {
  const fake = fakePair();
  const out = await observePair(
    { ...opts(fake.boot, t.testdir()), driver: "siw", bootWired: fake.bootWired },
    await compiled(t, "rnbd", false),
  );
  t.equal(out.error, undefined);
  for (const [i, cmds] of fake.commands.entries()) {
    t.equal(cmds[1], `ip -6 addr add fd99::${i + 1}/64 dev eth1 nodad`);
    t.match(
      cmds[2],
      /^modprobe siw \|\| exit 3; rdma link add siw0 type siw netdev eth1 /,
      `siw on guest ${i + 1}'s fabric NIC`,
    );
    t.notOk(cmds.includes("modprobe erdma"));
  }
  const connect = fake.commands[0]?.find((c) => c.startsWith("sh ") && c.includes(" connect "));
  t.match(connect, /hil-ulp\.sh rnbd connect fd99::2 7602 /, "the host maps the target's IPv6 address");
  t.same(fake.requests, [], "no device to ask");
  t.equal(out.hwText, undefined, "no hardware trace on siw (hw-complete has nothing to judge)");
  t.equal(fake.disposed(), 1);
});

t.test("a guest without the fabric NIC: an error naming it, and the pair disposed of", async (t) => {
  const fake = fakePair();
  const out = await observePair(
    {
      ...opts(fake.boot, t.testdir()),
      driver: "siw",
      bootWired: async (...a) => {
        const pair = await fake.bootWired(...a);
        return {
          ...pair,
          guests: [pair.guests[0], { ...pair.guests[1], fabricMac: "52:54:00:00:00:09" }],
        } as never;
      },
    },
    await compiled(t, "rnbd", false),
  );
  t.match(out.error, /guest 2 has no NIC with the fabric MAC 52:54:00:00:00:09/);
  t.equal(fake.disposed(), 1);
});

t.test("the device server dies while a step waits: the run ends at once, the harness's fault", async (t) => {
  const fake = fakePair({ hangOn: " connect " });
  const server = (await fake.boot({} as never)).server as unknown as { exit?: unknown };
  setTimeout(() => {
    server.exit = { code: null, signal: "SIGKILL" };
  }, 300);
  const out = await observePair(opts(fake.boot, t.testdir()), await compiled(t, "nvme-rdma", false));
  t.match(out.harnessFault, /the device server \(pid 999\) was killed by SIGKILL while the scenario ran/);
  t.equal(out.error, out.harnessFault);
  t.same(out.stuck, [], "ended by the death, not by the step's watchdog: no hang is said of the driver");
  t.equal(out.wedged, false);
  t.equal(fake.disposed(), 1);
});

t.test("a step past its watchdog is the hang rule's evidence, as on one guest", async (t) => {
  const fake = fakePair({ hangOn: " connect " });
  const out = await observePair(opts(fake.boot, t.testdir()), await compiled(t, "nvme-rdma", false, 300));
  t.equal(out.error, undefined, "a hang is the driver's, not a broken run");
  t.equal(out.wedged, true);
  t.match(out.stuck, [{ ev: "stuck", op: "ulp connect", ms: 300 }]);
  t.match(
    out.observations.filter((o) => o.ev === "stuck"),
    [{ ev: "stuck", op: "ulp connect", ms: 300 }],
    "the stuck step is among the observations the rules judge",
  );
  t.equal(fake.disposed(), 1);
});
