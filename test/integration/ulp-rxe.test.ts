// The kernel's ULPs over soft-RoCE, as a user runs them: `hil run --driver rxe --scenario ...` with
// ULP workloads builds (or finds) debian:6.12 with both fragments, guest/kconfig/rxe.config from the
// driver and ulp.config from the workloads, links rdma_rxe to the NIC the workload runs on (the
// guest's own in one guest, the fabric NIC in each guest of a pair) and runs the real nvmet-rdma and
// nvme-rdma in one guest, and rnbd_server and rnbd_client (RTRS) across two. Each moves 1 MiB that
// reads back as written, every step returns and nothing is left; RNBD, a known bug on siw and erdma
// (tests in ulp-rnbd.test.ts), passes over RoCE. No device model: no hw-complete, one object count.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(40 * 60 * 1000);

type Obs = { ev: string; [k: string]: unknown };
type Rule = { rule: string; verdict: string; reason: string };
type Scen = {
  name: string;
  judgements: { profile: string; verdict: string; rules: Rule[] }[];
  observations?: Obs[];
};
type RunRecord = { driver: string; kernel: string; job: { spec: { configs?: string[] } }; scenarios: Scen[] };

const SCENARIOS = ["ulp-nvme-rdma-io", "ulp-rnbd-two-guests"];

t.test("hil run --driver rxe: NVMe-oF in one guest and RNBD across two, over soft-RoCE", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--driver", "rxe", "--scenario", SCENARIOS.join(",")],
    t,
  );
  t.comment(r.stdout);
  t.equal(r.exitCode, 0, `exits 0\n${r.stderr.slice(-3000)}`);
  t.match(r.stderr, /--driver rxe: the kernel gets --config rxe/, "the driver's fragment is said");
  t.match(
    r.stderr,
    /2 ULP workload scenario\(s\) selected: the kernel gets --config ulp/,
    "and the workloads'",
  );
  t.match(
    r.stderr,
    /\[suite\] ulp-rnbd-two-guests on two guests joined by rxe on their fabric NICs: done/,
    "the pair is joined by rxe",
  );
  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as RunRecord;
  t.equal(record.driver, "rxe");
  t.same(record.job.spec.configs, ["rxe", "ulp"], "both fragments, the driver's first");
  t.match(record.kernel, /config rxe, ulp/);
  t.same(
    record.scenarios.map((s) => s.name),
    SCENARIOS,
  );
  for (const s of record.scenarios) {
    t.same(
      s.judgements.map((j) => [j.profile, j.verdict]),
      [["linux", "PASS"]],
      `${s.name}: PASS under linux`,
    );
    const rules = Object.fromEntries(s.judgements[0]?.rules.map((x) => [x.rule, x.verdict]) ?? []);
    t.match(
      rules,
      { "ulp-steps": "PASS", "ulp-data": "PASS", "ulp-leak": "PASS", hang: "PASS", console: "PASS" },
      `${s.name}: every step returned, the data is intact, nothing left, no hang`,
    );
    t.equal(rules["hw-complete"], "SKIP", `${s.name}: no device model, no device-side rule`);
    const steps = s.observations?.filter((o) => o.ev === "ulp-step") ?? [];
    t.same(
      steps.map((o) => o.exitCode),
      [0, 0, 0, 0, 0],
      `${s.name}: five steps, each exited 0`,
    );
    const io = steps[2]?.values as Record<string, string> | undefined;
    t.equal(io?.bytes, "1048576", `${s.name}: 1 MiB read back`);
    t.equal(io?.["read-sha256"], io?.["written-sha256"], `${s.name}: as written`);
  }
  const rnbd = record.scenarios.find((s) => s.name === "ulp-rnbd-two-guests");
  const up = rnbd?.observations?.find((o) => o.ev === "ulp-step" && o.action === "target-up");
  t.match(
    up?.values,
    { target: "rnbd", port: /^rtrs:\[::\]:\d+$/ },
    "rtrs-srv listens on IPv6, over RoCE v2",
  );
  const connect = rnbd?.observations?.find((o) => o.ev === "ulp-step" && o.action === "connect");
  t.match(connect?.values, { device: /^\/dev\/rnbd\d+$/ }, "the client mapped the device");
  // the one-guest run links rxe0 to eth0; the pair's guests to their fabric NICs
  const files = readdirSync(dir).filter((f) => /^console(-\d+)?\.log$/.test(f));
  t.equal(files.length, 3, `a console for the guest and one for each guest of the pair: ${files.join(", ")}`);
  const consoles = files.map((f) => readFileSync(join(dir, f), "utf8"));
  t.match(consoles.join("\n"), /infiniband rxe0: added eth0/, "rxe0 on the guest's NIC");
  t.match(consoles.join("\n"), /infiniband rxe0: added eth1/, "rxe0 on a fabric NIC");
  for (const [i, text] of consoles.entries())
    t.notMatch(
      text,
      /WARNING: CPU|BUG: |Oops|INFO: task .* blocked/,
      `console ${i + 1}: no warning, bug or hang`,
    );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
});
