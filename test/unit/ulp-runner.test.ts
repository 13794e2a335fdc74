// The ULP runner against a scripted guest (no QEMU): each step's command and what it reported,
// the objects counted before and after (kernel and device), faults handed to the hook, the barrier;
// a step past its watchdog is a hang with the stacks the guest gave, and nothing runs after it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { ExecutorGuest } from "../../harness/executor/executor.ts";
import { ULP_SCRIPT, UlpRunner } from "../../harness/executor/ulp.ts";
import type { Observation } from "../../harness/protocol/observations.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { loadScenarioFile } from "../../harness/scenario/load.ts";

type Reply = { exitCode: number; stdout: string; stderr: string };

/** A guest that answers each command from a script; "hang" never answers. */
function scriptedGuest(answer: (command: string) => Reply | "hang") {
  const commands: string[] = [];
  const copies: string[] = [];
  const guest: ExecutorGuest = {
    async exec(command) {
      commands.push(command);
      const a = answer(command);
      return a === "hang" ? new Promise<Reply>(() => {}) : a;
    },
    async copyTo(local, remote) {
      copies.push(`${local} -> ${remote}`);
    },
  };
  return { guest, commands, copies };
}

const ok = (stdout = ""): Reply => ({ exitCode: 0, stdout, stderr: "" });

async function compiled(t: { testdir(): string }, steps: string, timeout = 10_000) {
  const file = join(t.testdir(), "ulp-r.yaml");
  writeFileSync(
    file,
    `description: d\nworkload: nvme-rdma\ncovers: [hang]\nprofiles: [linux]\ntimeout_ms: ${timeout}\nsteps:\n${steps}`,
  );
  return compileScenario(await loadScenarioFile(file), { addr: "10.0.2.15", port: 7601 });
}

t.test("steps run in order, report what they printed; objects counted before and after", async (t) => {
  let counted = 0;
  const { guest, commands, copies } = scriptedGuest((c) => {
    if (c === "rdma resource show")
      return ok(counted++ === 0 ? "0: erdma_0: pd 0 cq 0 qp 0 mr 0\n" : "0: erdma_0: pd 0 cq 2 qp 0 mr 0\n");
    if (c.includes(" io "))
      return ok("hil-ulp written-sha256=aa bytes=4096\nhil-ulp read-sha256=aa bytes=4096\n");
    if (c.includes(" connect ")) return { exitCode: 1, stdout: "", stderr: "connect failed\n" };
    return ok();
  });
  const faults: number[] = [];
  const c = await compiled(
    t,
    "  - ulp: target-up\n  - ulp: connect\n  - fault: { kind: lose-irq }\n  - ulp: { io: { kib: 4 } }\n",
  );
  const device = [
    { qp: 1, cq: 1, mr: 0 },
    { qp: 1, cq: 1, mr: 0 },
  ];
  const out = await new UlpRunner(guest).run(c, {
    barrier: 7,
    fault: async (step) => {
      faults.push(step.index);
      return { ev: "fault", step: step.index, kind: "lose-irq", spec: { kind: "lose-irq" } };
    },
    deviceObjects: async () => device.shift(),
  });
  t.same(copies, [`${ULP_SCRIPT} -> /tmp/hil-ulp.sh`]);
  t.same(
    commands.filter((x) => x.startsWith("sh ")),
    [
      "sh /tmp/hil-ulp.sh nvme-rdma target-up 10.0.2.15 7601 hil-ulp-r-7601 0",
      "sh /tmp/hil-ulp.sh nvme-rdma connect 10.0.2.15 7601 hil-ulp-r-7601 0",
      "sh /tmp/hil-ulp.sh nvme-rdma io 10.0.2.15 7601 hil-ulp-r-7601 4",
    ],
    "a failed step does not stop the run: the rules judge it",
  );
  t.same(faults, [2], "the fault step went to the hook, in its place");
  t.equal(out.wedged, false);
  t.equal(out.barrier, true);
  t.equal(commands.at(-1), 'echo "hil-mark 7" > /dev/kmsg', "the barrier comes last");
  const steps = out.observations.filter((o) => o.ev === "ulp-step");
  t.match(steps, [
    { action: "target-up", exitCode: 0, expect: 0 },
    { action: "connect", exitCode: 1, stderr: "connect failed" },
    { action: "io 4 KiB", values: { "written-sha256": "aa", "read-sha256": "aa", bytes: "4096" } },
  ]);
  t.same(
    out.observations.filter((o) => o.ev === "ulp-objects"),
    [
      {
        ev: "ulp-objects",
        before: { pd: 0, cq: 0, qp: 0, mr: 0 },
        after: { pd: 0, cq: 2, qp: 0, mr: 0 },
        source: "kernel",
      },
      {
        ev: "ulp-objects",
        before: { qp: 1, cq: 1, mr: 0 },
        after: { qp: 1, cq: 1, mr: 0 },
        source: "device",
      },
    ],
  );
});

t.test(
  "a step past its watchdog: a hang with the guest's stacks, the guest wedged, nothing after it",
  async (t) => {
    const { guest, commands } = scriptedGuest((c) => {
      if (c === "rdma resource show") return ok("0: erdma_0: qp 0\n");
      if (c.includes(" disconnect ")) return "hang";
      if (c.includes("/proc/[0-9]*"))
        return ok(
          [
            "task 150 step sh D (disk sleep)",
            "[<0>] __ib_drain_sq+0x11a/0x124 [ib_core]",
            "[<0>] ib_drain_qp+0xa/0x1a [ib_core]",
            "end",
          ].join("\n"),
        );
      return ok();
    });
    const c = await compiled(t, "  - ulp: connect\n  - ulp: disconnect\n  - ulp: target-down\n", 200);
    const started = Date.now();
    const out = await new UlpRunner(guest).run(c, { barrier: 1 });
    t.ok(Date.now() - started < 5000, "the watchdog, not the guest, ended the step");
    t.equal(out.wedged, true);
    t.same(
      out.stuck.map((s) => [s.step, s.op, s.ms, s.state]),
      [[1, "ulp disconnect", 200, "D (disk sleep) (sh, pid 150)"]],
    );
    t.match(out.stuck[0]?.stack, /^\[<0>\] __ib_drain_sq.*\n\[<0>\] ib_drain_qp/);
    t.notOk(
      commands.some((x) => x.includes("target-down") || x.includes("hil-mark")),
      "no step, no count and no barrier after the hang",
    );
    t.match(
      commands.find((x) => x.includes("/proc/[0-9]*")),
      /cat \/tmp\/hil-ulp\/step\.pid[\s\S]*echo w > \/proc\/sysrq-trigger/,
      "the step's pid file, then sysrq-w for the kernel log",
    );
    t.notOk(
      out.observations.some((o: Observation) => o.ev === "ulp-objects"),
      "objects are not counted in a wedged guest",
    );
  },
);

t.test("the script cannot be copied: the run broke, nothing ran", async (t) => {
  const commands: string[] = [];
  const guest: ExecutorGuest = {
    async exec(command) {
      commands.push(command);
      return ok();
    },
    async copyTo() {
      throw new Error("cannot copy hil-ulp.sh to the guest's /tmp/hil-ulp.sh");
    },
  };
  const out = await new UlpRunner(guest).run(await compiled(t, "  - ulp: connect\n"));
  t.match(out.error, /cannot copy hil-ulp\.sh/);
  t.same(commands, []);
});

t.test(
  "a guest that cannot run the workload (exit 3: a module missing) breaks the run: no verdict on the driver",
  async (t) => {
    const { guest, commands } = scriptedGuest((c) => {
      if (c.includes(" target-up "))
        return { exitCode: 3, stdout: "", stderr: "modprobe nvmet-rdma failed (CONFIG_NVME_TARGET_RDMA)" };
      return ok("0: erdma_0: qp 0\n");
    });
    const out = await new UlpRunner(guest).run(await compiled(t, "  - ulp: target-up\n  - ulp: connect\n"));
    t.equal(
      out.error,
      "step 1 (target-up): the guest cannot run the nvme-rdma workload: modprobe nvmet-rdma failed (CONFIG_NVME_TARGET_RDMA)",
    );
    t.notOk(
      commands.some((x) => x.includes(" connect ")),
      "nothing runs after it",
    );
  },
);

t.test(
  "two guests: the target's steps in the second, the host's in the first, objects counted in both",
  async (t) => {
    const host = scriptedGuest((c) => (c === "rdma resource show" ? ok("0: erdma_0: qp 1\n") : ok()));
    const target = scriptedGuest((c) => (c === "rdma resource show" ? ok("0: erdma_0: qp 2\n") : ok()));
    const c = await compiled(
      t,
      "  - ulp: target-up\n  - ulp: connect\n  - ulp: { io: { kib: 4 } }\n  - ulp: disconnect\n  - ulp: target-down\n",
    );
    const out = await new UlpRunner(host.guest, target.guest).run({
      ...c,
      endpoint: { addr: "10.99.0.2", port: 7601 },
    });
    const verbs = (cmds: string[]) => cmds.filter((x) => x.startsWith("sh ")).map((x) => x.split(" ")[3]);
    t.same(verbs(target.commands), ["target-up", "target-down"]);
    t.same(verbs(host.commands), ["connect", "io", "disconnect"]);
    t.match(
      host.commands.find((x) => x.includes(" connect ")),
      / 10\.99\.0\.2 7601 /,
      "the host connects to the target's address",
    );
    t.equal(host.copies.length + target.copies.length, 2, "the script copied into each guest");
    t.match(
      out.observations.find((o) => o.ev === "ulp-objects"),
      { source: "kernel", before: { qp: 3 }, after: { qp: 3 } },
    );
  },
);

t.test(
  "rdma resource that fails or counts nothing: no kernel count, so ulp-leak has nothing to vouch with",
  async (t) => {
    for (const reply of [{ exitCode: 1, stdout: "", stderr: "rdma: not found" }, ok("")]) {
      const { guest } = scriptedGuest((c) => (c === "rdma resource show" ? reply : ok()));
      const out = await new UlpRunner(guest).run(await compiled(t, "  - ulp: connect\n"), {
        deviceObjects: async () => ({ qp: 0, mr: 0 }),
      });
      t.same(
        out.observations.filter((o) => o.ev === "ulp-objects").map((o) => o.source),
        ["device"],
        `exit ${reply.exitCode}: the device's count only`,
      );
    }
  },
);

t.test(
  "a sleep step waits and runs nothing; a step whose channel closed without a status breaks the run",
  async (t) => {
    const { guest, commands } = scriptedGuest((c) => {
      if (c === "rdma resource show") return ok("0: erdma_0: qp 0\n");
      if (c.includes(" connect ")) return { exitCode: -1, stdout: "", stderr: "" };
      return ok();
    });
    const started = Date.now();
    const out = await new UlpRunner(guest).run(
      await compiled(t, "  - ulp: target-up\n  - sleep: 120\n  - ulp: connect\n  - ulp: disconnect\n"),
    );
    t.ok(Date.now() - started >= 120, "the sleep waited");
    t.same(
      commands.filter((x) => x.startsWith("sh ")).map((x) => x.split(" ")[3]),
      ["target-up", "connect"],
      "no command for the sleep; nothing after the lost status",
    );
    t.equal(
      out.error,
      "step 3 (connect): the guest's SSH channel closed without the step's exit status",
      "an ERROR, not a ulp-steps FAIL of the driver",
    );
    t.notOk(out.observations.some((o) => o.ev === "ulp-step" && o.action === "connect"));
  },
);
