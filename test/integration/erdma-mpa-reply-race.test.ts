// erdma's lost MPA reply, through its real path: nvme-rdma connecting across two guests. With the
// race's window widened (fixtures/series/erdma-mpa-reply-race-widen.mbox) every connection loses
// its reply: hil repro says REPRODUCES, the host's connect fails after erdma's 10 s MPA reply
// timeout, and the device model saw the target's QP reach RTS for a connection whose host side never
// did. With the fix on top of the same widening the scenario passes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { eventsOf, readHwTrace } from "../../harness/protocol/hw-trace.ts";
import { type ConnectionTuple, mirrors } from "../../qemu/erdma/fabric.ts";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(10 * 60 * 1000);

const SCENARIO = "ulp-nvme-rdma-two-guests";
type Obs = { ev: string; [k: string]: unknown };
type Scen = {
  name: string;
  judgements: { verdict: string; rules: { rule: string; reason: string; evidence?: string[] }[] }[];
  observations?: Obs[];
};
type Conn = ConnectionTuple;

function scenario(dir: string): Scen | undefined {
  const v: { scenarios: Scen[] } = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
  return v.scenarios.find((s) => s.name === SCENARIO);
}

/** The connections each device's QPs reached RTS with (MODIFY_QP to RTS carries the tuple). */
function rtsConnections(dir: string, dev: string): Conn[] {
  return eventsOf(readHwTrace(join(dir, "traces", `${SCENARIO}.hw.jsonl`)), "cmd")
    .filter((e) => e.dev === dev && e.name === "MODIFY_QP" && e.status === 0)
    .flatMap((e) => {
      const d = e.detail as { to?: string; connection?: Conn } | undefined;
      return d?.to === "RTS" && d.connection ? [d.connection] : [];
    });
}

t.test(
  "hil repro erdma-mpa-reply-race: the host's connect never sees the reply its target sent",
  async (t) => {
    const { iso, dir, r } = await hilWithRunDir(["repro", "erdma-mpa-reply-race"], t);
    t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-3000));
    t.match(r.stdout, /erdma-mpa-reply-race: REPRODUCES/);
    const s = scenario(dir);
    t.equal(s?.judgements[0]?.verdict, "FAIL");
    const connect = s?.observations?.find((o) => o.ev === "ulp-step" && o.action === "connect");
    t.equal(connect?.exitCode, 1, "the host's connect failed");
    t.ok(Number(connect?.ms) >= 10_000, `after erdma's 10 s MPA reply timeout (${connect?.ms} ms)`);
    t.same(
      s?.observations?.filter((o) => o.ev === "stuck"),
      [],
      "within its 30 s watchdog: no hang",
    );
    const steps = s?.judgements[0]?.rules.find((r) => r.rule === "ulp-steps");
    t.match(
      steps?.reason,
      /^step 2 \(connect\) exited 1: .*reach RTS on one side only( \(and \d+ more\))?$/,
      "the verdict says it is half open",
    );
    t.match(
      steps?.evidence?.join("\n"),
      /hw: erdma1 QP \d+ reached RTS on 10\.99\.0\.2:\d+ <-> 10\.99\.0\.1:\d+; no QP reached RTS on its other side/,
    );
    const target = rtsConnections(dir, "erdma1");
    const host = rtsConnections(dir, "erdma0");
    t.ok(target.length > 0, "the target's QP reached RTS: it accepted and sent its reply");
    t.ok(
      target.some((c) => !host.some((h) => mirrors(c, h))),
      `a connection the target is in RTS on, whose host side never reached RTS (target ${JSON.stringify(target)}, host ${JSON.stringify(host)})`,
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("the fix on top of the same widened window: the scenario passes", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--series", "fixtures/series/erdma-mpa-reply-race-widen-fixed.mbox", "--scenario", SCENARIO],
    t,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-3000));
  t.match(r.stdout, new RegExp(`^${SCENARIO} +PASS .* every rule holds$`, "m"));
  const host = rtsConnections(dir, "erdma0");
  const target = rtsConnections(dir, "erdma1");
  t.ok(
    host.length > 0 && host.every((h) => target.some((c) => mirrors(c, h))),
    "every connection reached RTS on both sides",
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
