// Two guests joined by siw on their fabric NICs, and RNBD (RTRS) as a workload: NVMe-oF across the
// siw pair moves checked data; RNBD meets a known bug on each driver (siw: rtrs-clt pins every
// connection to the first one's source port; erdma: its CM takes IPv4 only, rtrs-srv listens on
// IPv6), each an XFAIL naming its record; with the source port fixed by a series, the next failure
// on siw (no RDMA WRITE WITH IMMEDIATE) is a FAIL the record does not absorb.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { explainFailures } from "../support/verdicts.ts";

t.setTimeout(12 * 60 * 1000);

const SERIES = new URL("../../fixtures/series/rtrs-clt-src-port.mbox", import.meta.url).pathname;

type Obs = { ev: string; [k: string]: unknown };
type Rule = { rule: string; verdict: string; reason: string; knownBug?: unknown };
type Scen = { name: string; judgements: { verdict: string; rules: Rule[] }[]; observations?: Obs[] };

function scenario(dir: string, name: string): Scen | undefined {
  const v = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as { scenarios: Scen[] };
  return v.scenarios.find((s) => s.name === name);
}

const rule = (s: Scen | undefined, id: string) => s?.judgements[0]?.rules.find((r) => r.rule === id);

t.test("on siw: NVMe-oF across the pair passes; RNBD is the known rtrs-clt source-port bug", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--driver", "siw", "--scenario", "ulp-*-two-guests"],
    t,
  );
  t.equal(r.exitCode, 0, `${explainFailures(dir)}\n${r.stdout}${r.stderr}`.slice(0, 4000));
  t.match(
    r.stderr,
    /\[suite\] ulp-nvme-rdma-two-guests on two guests joined by siw on their fabric NICs: done/,
  );
  const nvme = scenario(dir, "ulp-nvme-rdma-two-guests");
  if (rule(nvme, "hang")?.verdict === "XFAIL") {
    // siw's accept race (fixtures/known-bugs.yaml), met now and then on a loaded host: named, with
    // the target's socket holding the bytes nobody read (test/integration/siw-accept-fpdu-race.test.ts)
    t.comment("this run met siw's accept race: the known-bug record named it");
    t.match(rule(nvme, "hang"), {
      knownBug: { id: "siw-accept-fpdu-before-socket-handoff" },
      reason: /ulp connect .* holds \d+ unread byte/,
    });
  } else {
    t.match(
      r.stdout,
      /^ulp-nvme-rdma-two-guests +PASS +ulp-data:1 ulp-steps:5 ulp-leak:1 hang:5 +every rule holds$/m,
      "no device model: no hw-complete, one count",
    );
    const io = nvme?.observations?.find((o) => o.ev === "ulp-step" && o.action === "io 1024 KiB");
    const data = io?.values as Record<string, string>;
    t.equal(data?.bytes, "1048576");
    t.equal(data?.["read-sha256"], data?.["written-sha256"], "the data read back as written");
  }

  const rnbd = scenario(dir, "ulp-rnbd-two-guests");
  t.equal(rnbd?.judgements[0]?.verdict, "XFAIL", r.stdout);
  const steps = rule(rnbd, "ulp-steps");
  t.match(steps, { verdict: "XFAIL", knownBug: { id: "rtrs-clt-iwarp-source-port" } });
  t.match(
    steps?.reason,
    /step 2 \(connect\) exited 1: map_device .* at ip:fd99::2 .*rdma_connect_locked\(\): -99/,
  );
  t.equal(rule(rnbd, "ulp-data")?.verdict, "SKIP", "no connection, no data: the record hides it");
  t.equal(rule(rnbd, "hang")?.verdict, "PASS", "every step returned");
  const up = rnbd?.observations?.find((o) => o.ev === "ulp-step" && o.action === "target-up");
  t.match(up, { exitCode: 0, values: { target: "rnbd", port: /^rtrs:\[::\]:\d+$/ } }, "the server listens");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("on erdma: RNBD is the known IPv4-only CM; rtrs-srv cannot listen", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(["run", "--scenario", "ulp-rnbd-two-guests"], t);
  t.equal(r.exitCode, 0, `${explainFailures(dir)}\n${r.stdout}${r.stderr}`.slice(0, 4000));
  const rnbd = scenario(dir, "ulp-rnbd-two-guests");
  const steps = rule(rnbd, "ulp-steps");
  t.match(steps, { verdict: "XFAIL", knownBug: { id: "erdma-cm-ipv4-only" } });
  t.match(
    steps?.reason,
    /step 1 \(target-up\) exited 1: rnbd_server loaded but RTRS cannot listen on port \d+: .*cma_listen_on_dev, error -97/,
  );
  t.equal(rule(rnbd, "hw-complete")?.verdict, "PASS", "the device's own WQEs all completed");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test(
  "siw with rtrs-clt's source port fixed: the next failure (no RDMA WRITE WITH IMMEDIATE) is a FAIL the record does not absorb",
  async (t) => {
    const { iso, dir, r } = await hilWithRunDir(
      ["run", "--driver", "siw", "--series", SERIES, "--scenario", "ulp-rnbd-two-guests"],
      t,
    );
    t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-3000));
    const rnbd = scenario(dir, "ulp-rnbd-two-guests");
    t.equal(rnbd?.judgements[0]?.verdict, "FAIL");
    const steps = rule(rnbd, "ulp-steps");
    t.equal(steps?.verdict, "FAIL");
    t.match(
      steps?.reason,
      /Read request failed: error=-22/,
      "rtrs posts RDMA WRITE WITH IMM, which siw refuses",
    );
    t.notMatch(steps?.reason, /rdma_connect_locked\(\): -99/, "the connections are established");
    t.match(steps?.reason, /does not describe/, "the known-bug record says it does not describe this one");
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("hil repro rtrs-clt-iwarp-source-port: the second connection's EADDRNOTAVAIL", async (t) => {
  const { iso, r } = await hilWithRunDir(["repro", "rtrs-clt-iwarp-source-port"], t);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-3000));
  t.match(r.stdout, /rtrs-clt-iwarp-source-port: REPRODUCES/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
