// The suite on several guests side by side (`--guests n`), without a guest: a fake boot and a
// scripted executor. Each guest takes the next scenario when free, a scenario's repetitions stay on
// one guest, foreseen hangs run last, each boot keeps its own console; the verdicts are the ones one
// guest gives; the probe stage runs once, on the first guest, and when it fails no scenario runs on
// any guest; a guest that breaks stops the others and every guest is shut down. And the option's
// bad input, through the real CLI.
import t, { type Test } from "tap";
import type { Scenario } from "../../harness/scenario/schema.ts";
import { defaultGuests, unitsOf } from "../../harness/suite/guests.ts";
import { suiteResults } from "../../harness/suite/results.ts";
import { runSuite } from "../../harness/suite/suite.ts";
import type { CheckResult } from "../../harness/verdict.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { type Act, fakeSuite, PREPARED, runFakeSuite, scenario } from "../support/fake-suite.ts";

function suite(
  t: Test,
  scenarios: Scenario[],
  script: (name: string, nth: number) => Act,
  extra: { guests?: number; repeat?: number; probe?: () => Promise<CheckResult[]> } = {},
  bootConsole?: (boot: number) => string,
) {
  return runFakeSuite(t.testdir({}), scenarios, script, extra, bootConsole);
}

const SIX = ["a", "b", "c", "d", "e", "f"].map((n) => scenario(`drain-${n}`));
const verdictsOf = (r: Awaited<ReturnType<typeof suite>>["report"]) =>
  suiteResults(r).map((x) => `${x.id} ${x.verdict}`);

t.test("two guests share the scenarios; the verdicts and their order are one guest's", async (t) => {
  const one = await suite(t, SIX, () => "pass");
  const two = await suite(t, SIX, () => "pass", { guests: 2 });
  t.equal(two.fakes.boots, 2, "two guests booted");
  t.same(new Set(two.fakes.runs.map((r) => r.guest)), new Set([1, 2]), "both ran scenarios");
  t.same(verdictsOf(two.report), verdictsOf(one.report), "the same verdicts, in the plan's order");
  t.same(
    two.fakes.consoles.map((c) => c.replace(/^.*\//, "")).sort(),
    ["console-2.log", "console.log"],
    "each guest keeps its own console",
  );
  t.equal(two.fakes.disposed, 2, "both guests shut down");
  const ports = two.fakes.runs.map((r) => r.port);
  t.equal(new Set(ports).size, SIX.length, "each scenario keeps its own port");
});

t.test("a boot the probe stage did not judge is judged with the first scenario on its guest", async (t) => {
  const warn =
    "[    3.0] WARNING: CPU: 0 PID: 1 at drivers/infiniband/hw/erdma/erdma_main.c:60 erdma_probe+0x1/0x2\n";
  const slowUnpack = [
    "[   48.4] INFO: task swapper:1 blocked for more than 10 seconds.",
    "[   48.4] Call Trace:",
    "[   48.4]  <TASK>",
    "[   48.4]  __schedule+0x67a/0x6c8",
    "[   48.5]  populate_rootfs+0x38/0x3b",
    "[   48.5]  do_one_initcall+0xbd/0x1c6",
    "[   48.5]  </TASK>",
    "",
  ].join("\n");
  const passing = async (): Promise<CheckResult[]> => [
    { id: "probe", title: "erdma probes", verdict: "PASS", reason: "ok" },
  ];
  const consoleVerdicts = (r: Awaited<ReturnType<typeof suite>>) =>
    r.report.scenarios.map((s) => {
      const on = r.fakes.runs.find((x) => x.scenario === s.name)?.guest;
      const rule = s.judgements[0]?.rules.find((x) => x.rule === "console");
      return `${s.name}@${on} ${rule?.verdict}`;
    });
  // the second guest's boot warned; the first guest's boot was the probe stage's to judge
  const warned = await suite(
    t,
    SIX.slice(0, 4),
    () => "pass",
    { guests: 2, probe: passing },
    (boot) => (boot === 1 ? warn : warn + slowUnpack),
  );
  const firstOn2 = warned.fakes.runs.find((r) => r.guest === 2)?.scenario;
  t.ok(firstOn2, "the second guest ran a scenario");
  for (const line of consoleVerdicts(warned)) {
    const failed = line.startsWith(`${firstOn2}@2 `);
    t.match(line, failed ? / FAIL$/ : / PASS$/, failed ? "the boot's WARN, once" : "not judged again");
  }
  const evidence = warned.report.scenarios
    .find((s) => s.name === firstOn2)
    ?.judgements[0]?.rules.find((x) => x.rule === "console")?.evidence;
  t.match(evidence?.join("\n"), /erdma_probe/, "the WARN is the evidence");
  t.notMatch(evidence?.join("\n"), /populate_rootfs/, "a slow initramfs unpack is not a finding");
  // without a probe stage even the first boot is judged so
  const unprobed = await suite(
    t,
    SIX.slice(0, 2),
    () => "pass",
    {},
    () => warn,
  );
  t.same(consoleVerdicts(unprobed), ["drain-a@1 FAIL", "drain-b@1 PASS"]);
});

t.test("no more guests than scenarios", async (t) => {
  const { fakes } = await suite(t, SIX.slice(0, 1), () => "pass", { guests: 4 });
  t.equal(fakes.boots, 1);
});

t.test("a scenario's repetitions run in a row on one guest", async (t) => {
  const { fakes, report } = await suite(t, SIX.slice(0, 3), () => "pass", { guests: 2, repeat: 3 });
  for (const s of ["drain-a", "drain-b", "drain-c"]) {
    const on = fakes.runs.filter((r) => r.scenario === s).map((r) => r.guest);
    t.equal(on.length, 3, s);
    t.equal(new Set(on).size, 1, `${s}: one guest`);
  }
  t.equal(
    report.stability?.every((x) => !x.flaky),
    true,
  );
});

t.test("a hang wedges its guest: the next scenario on that guest boots another", async (t) => {
  const { fakes, report } = await suite(t, SIX, (name) => (name === "drain-a" ? "hang" : "pass"), {
    guests: 2,
  });
  const at = fakes.runs.findIndex((r) => r.scenario === "drain-a");
  const wedged = fakes.runs[at]?.guest;
  t.notOk(
    fakes.runs.slice(at + 1).some((r) => r.guest === wedged),
    "nothing more ran on the guest drain-a wedged",
  );
  t.equal(fakes.boots, 3, "one reboot, for drain-a's guest");
  t.equal(fakes.disposed, 3);
  t.equal(report.scenarios[0]?.judgements[0]?.verdict, "FAIL", "the hang judged");
  t.same(
    report.scenarios.map((s) => s.name),
    SIX.map((s) => s.name),
    "reported in the plan's order",
  );
});

t.test("the probe stage runs once, on the first guest; when it fails nothing runs anywhere", async (t) => {
  let probes = 0;
  const failing = async (): Promise<CheckResult[]> => {
    probes++;
    await new Promise((r) => setTimeout(r, 20));
    return [{ id: "probe", title: "erdma probes", verdict: "FAIL", reason: "no erdma_0" }];
  };
  const { fakes, report } = await suite(t, SIX, () => "pass", { guests: 3, probe: failing });
  t.equal(probes, 1);
  t.equal(fakes.runs.length, 0, "no scenario ran on any guest");
  t.equal(fakes.disposed, fakes.boots, "every guest booted was shut down");
  t.equal(report.scenarios.length, SIX.length);
  t.ok(
    report.scenarios.every(
      (s) => s.outcome?.verdict === "MISS" && /probes stage failed \(probe: FAIL/.test(s.outcome.reason),
    ),
    "each scenario a MISS naming the check",
  );

  const passing = async (): Promise<CheckResult[]> => {
    probes++;
    return [{ id: "probe", title: "erdma probes", verdict: "PASS", reason: "ok" }];
  };
  const ok = await suite(t, SIX, () => "pass", { guests: 3, probe: passing });
  t.equal(probes, 2, "once more, for the second suite");
  t.equal(ok.fakes.runs.length, SIX.length);
});

t.test("a guest whose run breaks is rebooted; the others go on", async (t) => {
  const { fakes, report } = await suite(
    t,
    SIX,
    (name, nth) => (name === "drain-b" && nth === 1 ? "break" : "pass"),
    {
      guests: 2,
    },
  );
  t.equal(report.scenarios.find((s) => s.name === "drain-b")?.outcome?.verdict, "ERROR");
  t.equal(fakes.runs.length, SIX.length, "every scenario ran");
  t.equal(fakes.disposed, fakes.boots, "every guest shut down");
});

t.test(
  "a guest whose boot fails stops the suite: the other guests are shut down, the error told",
  async (t) => {
    const dir = t.testdir({});
    const { fakes, opts } = fakeSuite(() => "pass");
    const boot: typeof opts.boot = async (p, o) => {
      if (fakes.boots === 1) {
        fakes.boots++;
        throw new Error("QEMU exited: cannot allocate memory");
      }
      return opts.boot(p, o);
    };
    await t.rejects(
      runSuite({
        prepared: PREPARED,
        scenarios: SIX,
        runDir: dir,
        driver: "erdma",
        executor: "kernel",
        deviceProfile: "erdma-reflush",
        guests: 2,
        ...opts,
        boot,
      }),
      /cannot allocate memory/,
    );
    t.equal(fakes.disposed, 1, "the guest that booted was shut down");
    t.ok(fakes.runs.length < SIX.length, "the suite stopped");
  },
);

t.test("the units: repetitions together, order kept; the default count", async (t) => {
  t.same(
    unitsOf(["a", "a", "b", "c", "c", "a"], (x) => x),
    [["a", "a"], ["b"], ["c", "c"], ["a"]],
  );
  t.equal(defaultGuests(1), 1);
  t.equal(defaultGuests(2), 2);
  t.equal(defaultGuests(64), 4);
});

t.test("--guests: bad input is one error naming the option, nothing left behind", async (t) => {
  const iso = isolate();
  for (const bad of ["0", "17", "two", "1.5"]) {
    const r = await hil(["run", "--guests", bad], iso.env);
    t.equal(r.exitCode, 2, bad);
    t.match(r.stderr, /--guests/, `${bad}: names the option`);
    t.match(r.stderr, /from 1 to 16/);
  }
  const sock = await hil(["run", "--guests", "2", "--device-socket", "/nonexistent.sock"], iso.env);
  t.equal(sock.exitCode, 2, sock.stderr);
  t.match(
    sock.stderr,
    /--guests 2: the device of --device-socket or --device-pci can be given to one guest only/,
  );
  const target = await hil(["run", "--guests", "2", "--target", "ssh://root@127.0.0.1:1"], iso.env);
  t.equal(target.exitCode, 2, target.stderr);
  t.match(target.stderr, /--guests does not go with --target/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
