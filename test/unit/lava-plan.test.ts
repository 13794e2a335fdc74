// What a LAVA job runs, planned on the host from the shipped scenarios, and the runner's scripts
// (checked by the shell that will run them: dash -n and busybox-like sh -n).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { buildLavaPlan, LAVA_SETTLE_WAIT_MS } from "../../harness/lava/plan.ts";
import { lavaRunnerFiles } from "../../harness/lava/runner.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";

const KERNEL = { describe: "debian:6.12", release: "6.12.95", base: "debian:6.12" };

t.test(
  "the plan: fault scenarios left out, hangs last, a settle that waits for every posted WR",
  async (t) => {
    const scenarios = await selectScenarios(
      "drain-qp-idle,drain-sq-full,fault-drop-flush-cqe,destroy-during-flush",
    );
    const plan = buildLavaPlan(scenarios, {
      hil: "0.0.0",
      kernel: KERNEL,
      driver: "erdma",
      deviceProfile: "erdma-reflush",
    });
    t.same(
      plan.notPlanned.map((s) => [s.name, s.verdict]),
      [["fault-drop-flush-cqe", "SKIP"]],
    );
    t.match(plan.notPlanned[0]?.reason, /no control channel to arm device faults/);
    t.same(
      plan.scenarios.map((s) => s.id),
      ["001", "002", "003"],
    );
    const full = plan.scenarios.find((s) => s.name === "drain-sq-full");
    t.ok(full);
    const [first, second] = full?.batches ?? [[], []];
    t.equal(first[0]?.index, -1, "the setup first");
    t.equal(first[0]?.stopOnFailure, true);
    t.same(
      second.map((g) => g.sent[0]?.phase),
      ["settle", "teardown"],
    );
    const posted = full?.batches[0].flatMap((g) => g.sent).filter((c) => c.kind === "post_send").length ?? 0;
    t.ok(posted > 0);
    for (const line of second[0]?.lines ?? [])
      t.match(line, new RegExp(`min=\\d+ .*timeout=${LAVA_SETTLE_WAIT_MS}|min=\\d+`));
    t.ok(
      (second[0]?.lines ?? []).every((l) => /\bmin=([1-9]\d*)\b/.test(l)),
      "each CQ waits for the WRs the scenario posts",
    );
    const again = buildLavaPlan(scenarios, {
      hil: "0.0.0",
      kernel: KERNEL,
      driver: "erdma",
      deviceProfile: "erdma-reflush",
    });
    t.equal(again.digest, plan.digest, "the same plan, the same digest");
    const other = buildLavaPlan(scenarios.slice(0, 2), { hil: "0.0.0", kernel: KERNEL, driver: "erdma" });
    t.not(other.digest, plan.digest);
  },
);

t.test("a scenario whose hang is foreseen runs last", async (t) => {
  const scenarios = await selectScenarios("*");
  const plan = buildLavaPlan(scenarios, {
    hil: "0.0.0",
    kernel: KERNEL,
    driver: "erdma",
    deviceProfile: "erdma-2022",
  });
  const hangs = plan.scenarios.map((s) => (s.scenario.expect_fail?.rules ?? []).map(String).includes("hang"));
  const firstHang = hangs.indexOf(true);
  if (firstHang >= 0)
    t.ok(hangs.slice(firstHang).every(Boolean), "nothing that should return runs after a hang");
  t.ok(plan.scenarios.length > 10);
});

t.test("no scenario is an error", async (t) => {
  t.throws(() => buildLavaPlan([], { hil: "0", kernel: KERNEL, driver: "erdma" }), /no scenario/);
});

t.test("the runner's scripts parse in a POSIX shell", async (t) => {
  const scenarios = await selectScenarios("drain-qp-idle,shared-cq-two-qps");
  const plan = buildLavaPlan(scenarios, { hil: "0.0.0", kernel: KERNEL, driver: "erdma" });
  const files = lavaRunnerFiles(plan);
  t.same([...files.keys()].sort(), [
    "plan.txt",
    "run.sh",
    "s/001-a.sh",
    "s/001-b.sh",
    "s/002-a.sh",
    "s/002-b.sh",
  ]);
  t.equal(files.get("plan.txt"), "001 drain-qp-idle\n002 shared-cq-two-qps\n");
  t.match(files.get("run.sh"), new RegExp(`say plan ${plan.digest} 2`));
  const dir = mkdtempSync(join(tmpdir(), "hil-lava-sh-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of files) {
    if (!name.endsWith(".sh")) continue;
    const f = join(dir, name.replace("/", "_"));
    writeFileSync(f, text);
    t.doesNotThrow(() => execFileSync("sh", ["-n", f], { stdio: "pipe" }), `${name} parses`);
  }
});

t.test("a siw or rxe job adds its software link before the scenarios; an erdma job does not", async (t) => {
  const scenarios = await selectScenarios("drain-qp-idle");
  const siw = lavaRunnerFiles(buildLavaPlan(scenarios, { hil: "0", kernel: KERNEL, driver: "siw" })).get(
    "run.sh",
  );
  t.match(siw, /rdma link add siw0 type siw netdev "\$\{SIW_NETDEV:-eth0\}"/);
  const erdma = lavaRunnerFiles(buildLavaPlan(scenarios, { hil: "0", kernel: KERNEL, driver: "erdma" })).get(
    "run.sh",
  );
  t.notMatch(erdma, /rdma link add/);
  const rxe = lavaRunnerFiles(buildLavaPlan(scenarios, { hil: "0", kernel: KERNEL, driver: "rxe" })).get(
    "run.sh",
  );
  t.match(
    rxe,
    /modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "\$\{RXE_NETDEV:-eth0\}"/,
    "an rxe job links rxe0",
  );
  const plan = buildLavaPlan(scenarios, { hil: "0", kernel: KERNEL, driver: "rxe" });
  t.same(
    plan.scenarios.map((s) => s.profiles),
    [["ib", "linux"]],
    "judged under the rule sets of RoCE",
  );
});
