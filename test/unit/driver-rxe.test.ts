// The rxe driver's plumbing (harness/scenario/drivers.ts): soft-RoCE runs without a device, linked
// to the guest NIC by the software-link script, judged under the ib and linux rule sets only, its
// kernel given guest/kconfig/rxe.config by the job; device options and profiles are refused with it.
import { existsSync } from "node:fs";
import t from "tap";
import { askedBackend, chooseDevice, impliedDevice, takesProfile } from "../../harness/backend/registry.ts";
import { seriesJobSpec } from "../../harness/cli/series-job-spec.ts";
import { addSoftLink, softLinkScript } from "../../harness/executor/soft-link.ts";
import { readFragment, resolveFragmentPath } from "../../harness/kernel/kconfig.ts";
import { DRIVERS } from "../../harness/scenario/axes.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import {
  DRIVER_FACTS,
  isSoftwareDriver,
  profilesOnDriver,
  SOFTWARE_DRIVERS,
  softLinkOf,
} from "../../harness/scenario/drivers.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import { profilesFor } from "../../harness/suite/options.ts";
import { planScenario, planSteps } from "../../harness/suite/plan.ts";
import { type JobSpec, kernelRequestOf, withDriverConfig } from "../../harness/workflows/job/job.ts";

const scenario = (lines: string[]) =>
  parseScenario(["description: d", "covers: [9]", ...lines].join("\n"), "s.yaml");

t.test("rxe is a software driver of the RoCE transport: ib and linux, never iwarp-rdmac", async (t) => {
  t.ok(DRIVERS.includes("rxe"));
  t.same([...SOFTWARE_DRIVERS].sort(), ["rxe", "siw"]);
  t.ok(isSoftwareDriver("rxe"));
  t.notOk(isSoftwareDriver("erdma"));
  t.notOk(isSoftwareDriver(undefined));
  t.equal(DRIVER_FACTS.rxe.transport, "roce");
  t.same(softLinkOf("rxe"), { module: "rdma_rxe", type: "rxe", device: "rxe0" });
  t.equal(softLinkOf("erdma"), undefined, "erdma is a device's driver");
  const all = ["ib", "iwarp-rdmac", "linux"] as const;
  t.same(profilesOnDriver(all, "rxe"), ["ib", "linux"]);
  t.same(profilesOnDriver(all, "siw"), [...all], "siw keeps its rule sets");
  t.same(profilesOnDriver(all, "erdma"), [...all], "erdma keeps its rule sets");
  const s = scenario(["steps: [ { drain: {} } ]"]);
  t.same(s.drivers, ["siw", "erdma", "rxe"], "a scenario that names no drivers runs on rxe too");
  t.same(profilesFor(s, undefined, "rxe"), ["ib", "linux"]);
  t.same(profilesFor(s, ["iwarp-rdmac", "linux"], "rxe"), ["linux"], "--rules picks among them");
  t.same(profilesFor(s, ["iwarp-rdmac"], "rxe"), [], "nothing left: the queue makes it a SKIP");
  t.same(profilesFor(s, undefined, "siw"), [...all]);
});

t.test("rxe: no device; a device option or a profile with it is one clear error", async (t) => {
  t.equal(impliedDevice("rxe"), undefined);
  t.notOk(takesProfile("rxe"));
  t.equal(askedBackend({ device: true }, { driver: "rxe" }).kind, "none");
  t.throws(() => chooseDevice({ device: true, deviceProfile: "erdma-2022" }, { driver: "rxe" }), {
    name: "HilError",
    message: "--device-profile sets the emulated erdma device's behaviour; --driver rxe attaches none",
  });
  t.throws(() => chooseDevice({ device: true, deviceSocket: "/nonexistent.sock" }, { driver: "rxe" }), {
    name: "HilError",
    message: /--driver rxe runs soft-RoCE without a device; --device-socket attaches one|\/nonexistent\.sock/,
  });
  t.throws(() => chooseDevice({ device: true, deviceRtl: true }, { driver: "rxe" }), {
    name: "HilError",
    message: "--driver rxe runs soft-RoCE without a device; --device-rtl attaches one",
  });
  t.throws(
    () => seriesJobSpec({ kernel: "debian:6.12", config: [], driver: "rxe", deviceProfile: "x" }, "*"),
    {
      message: /--driver rxe attaches none/,
    },
  );
});

t.test("the kernel of an rxe job gets guest/kconfig/rxe.config, once", async (t) => {
  const spec: JobSpec = { kernel: "debian:6.12", driver: "rxe", executor: "kernel", scenarios: "*" };
  t.same(withDriverConfig(spec).configs, ["rxe"]);
  t.same(withDriverConfig({ ...spec, configs: ["smp"] }).configs, ["rxe", "smp"], "first, beside others");
  t.same(withDriverConfig({ ...spec, configs: ["rxe"] }).configs, ["rxe"], "named: not twice");
  t.same(
    withDriverConfig({ ...spec, configs: ["/somewhere/guest/kconfig/rxe.config"] }).configs,
    ["/somewhere/guest/kconfig/rxe.config"],
    "named by path: not twice",
  );
  t.equal(withDriverConfig({ ...spec, driver: "siw" }).configs, undefined, "siw: base.config has it");
  t.equal(withDriverConfig({ ...spec, driver: "erdma" }).configs, undefined);
  const fragment = resolveFragmentPath(DRIVER_FACTS.rxe.config ?? "");
  t.ok(existsSync(fragment), "the fragment is shipped");
  const asked = readFragment(fragment, "rxe").requests.map((r) => `${r.name}=${r.value}`);
  t.ok(asked.includes("RDMA_RXE=m"), "it asks for the module");
  t.same(
    kernelRequestOf(withDriverConfig(spec)).configs,
    ["rxe"],
    "a shipped fragment's name, as --config rxe",
  );
});

t.test(
  "the link script loads rdma_rxe and links rxe0 to the NIC; a kernel without it is named",
  async (t) => {
    const link = softLinkOf("rxe");
    if (!link) throw new Error("rxe has a link");
    const script = softLinkScript(link, "eth1");
    t.match(script, /^modprobe rdma_rxe \|\| exit 3; rdma link add rxe0 type rxe netdev eth1 \|\| exit 1; /);
    t.match(script, /\/sys\/class\/infiniband\/rxe0/);
    const shell = (exitCode: number, stderr = "") => {
      const ran: string[] = [];
      return {
        ran,
        exec: async (command: string) => {
          ran.push(command);
          return { exitCode, stdout: "", stderr };
        },
        copyTo: async () => {},
      };
    };
    const ok = shell(0);
    t.equal(await addSoftLink(ok, link), "rxe0");
    t.match(ok.ran[0], /netdev eth0 /, "eth0 by default");
    await t.rejects(addSoftLink(shell(3, "modprobe: module rdma_rxe not found"), link), {
      name: "HilError",
      message: "the guest kernel cannot load rdma_rxe (the rxe driver)",
      detail: /module rdma_rxe not found\n.*--driver rxe adds guest\/kconfig\/rxe\.config \(--config rxe\)/,
    });
    await t.rejects(addSoftLink(shell(1, "error: netdev not found"), link, "eth9"), {
      name: "HilError",
      message: "cannot add the rxe link rxe0 on eth9",
      detail: "error: netdev not found",
    });
  },
);

t.test("rxe has no device model: a fault step is a SKIP that says so", async (t) => {
  const s = scenario([
    "steps:",
    "  - post_send: { count: 2 }",
    "  - fault: { kind: drop-cqe, queue: sq, wr_id: 1001 }",
  ]);
  const target = { driver: "rxe" as const, executor: "kernel" as const };
  t.same(planScenario(s, target), { run: true });
  const compiled = compileScenario(s, { addr: "10.0.2.15", port: 7600, driver: "rxe" });
  t.match(planSteps(compiled, target), {
    run: false,
    verdict: "SKIP",
    reason: /fault drop-cqe needs the device model's fault injection; rxe has no device model$/,
  });
  const off = scenario(["steps: [ { drain: {} } ]", "skip_on:", "  - driver: rxe", "    why: not on rxe"]);
  t.same(planScenario(off, target), { run: false, verdict: "SKIP", reason: "not here: not on rxe" });
  t.same(planScenario(off, { ...target, driver: "siw" }), { run: true }, "skip_on names its driver only");
});
