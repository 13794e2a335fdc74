// siw's passive side leaves the peer's first message unread when it arrives before siw_accept has
// handed the socket to the QP, through its real path: nvme-rdma connecting across two guests over
// siw. With the window widened (fixtures/series/siw-accept-fpdu-race-widen.mbox) every connection
// meets it: hil repro says REPRODUCES, the host's connect hangs in its Fabrics Connect, and the hang's
// evidence names the target's TCP socket holding the unread bytes. With the fix on top of the same
// widening the scenario passes; unprovoked, the same evidence is the known-bug record's XFAIL.
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { explainFailures, ruleOf, scenarioOf } from "../support/verdicts.ts";

t.setTimeout(10 * 60 * 1000);

const SCENARIO = "ulp-nvme-rdma-two-guests";
const WIDENED = "fixtures/series/siw-accept-fpdu-race-widen.mbox";
const WIDENED_FIXED = "fixtures/series/siw-accept-fpdu-race-widen-fixed.mbox";

t.test("hil repro siw-accept-fpdu-race: the target's socket holds the host's Connect, unread", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(["repro", "siw-accept-fpdu-race"], t);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-3000));
  t.match(r.stdout, /siw-accept-fpdu-race: REPRODUCES/);
  const s = scenarioOf(dir, SCENARIO);
  t.equal(s.judgements[0]?.verdict, "FAIL");
  const stuck = s.observations?.filter((o) => o.ev === "stuck") ?? [];
  t.equal(stuck.length, 1, "one step hung");
  t.match(stuck[0], { op: "ulp connect" }, "the connect");
  const hang = ruleOf(s, "linux", "hang");
  t.match(
    hang?.reason,
    /^ulp connect \(step 2\) did not return within \d+ ms; its task is D .*; the target's TCP connection 10\.99\.0\.2:7600 from 10\.99\.0\.1:\d+ holds \d+ unread byte\(s\)$/,
  );
  t.match(
    hang?.evidence?.join("\n"),
    /nvmf_connect_(admin|io)_queue/,
    "waiting for its Fabrics Connect's answer",
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("the fix on top of the same widened window: the scenario passes", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--driver", "siw", "--series", WIDENED_FIXED, "--scenario", SCENARIO],
    t,
  );
  t.equal(r.exitCode, 0, `${explainFailures(dir)}\n${r.stdout}${r.stderr}`.slice(0, 4000));
  t.match(r.stdout, new RegExp(`^${SCENARIO} +PASS .* every rule holds$`, "m"));
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test(
  "with the window widened, hil run names the known-bug record: an XFAIL, the run exits 0",
  async (t) => {
    const { iso, dir, r } = await hilWithRunDir(
      ["run", "--driver", "siw", "--series", WIDENED, "--scenario", SCENARIO],
      t,
    );
    t.equal(r.exitCode, 0, `${explainFailures(dir)}\n${r.stdout}${r.stderr}`.slice(0, 4000));
    const s = scenarioOf(dir, SCENARIO);
    t.match(ruleOf(s, "linux", "hang"), {
      verdict: "XFAIL",
      knownBug: { id: "siw-accept-fpdu-before-socket-handoff" },
    });
    t.equal(ruleOf(s, "linux", "ulp-data")?.verdict, "SKIP", "no data moved: the record hides it");
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);
