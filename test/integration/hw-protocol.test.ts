// Rule hw-protocol on a real guest (Linux 6.12, the emulated erdma with erdma-reflush, the kernel
// executor): scenario destroy-during-flush moves a QP to ERROR and destroys it while its reflush is
// due. Upstream erdma_destroy_qp cancels that reflush before DESTROY_QP, and the rule holds; with
// fixtures/series/erdma-reflush-after-destroy.mbox the driver sends it after DESTROY_QP, the
// device refuses a REFLUSH for a QP it no longer has, and hw-protocol FAILs under every rule set,
// naming the REFLUSH and the QP (a QP the executor created, by its number: the QP under test, or
// its peer when the peer's reflush is the one still due at its destroy). Nothing is left running or
// on disk.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { readHwTrace } from "../../harness/protocol/hw-trace.ts";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { ruleOf, scenarioOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

const SCENARIO = "destroy-during-flush";
const REFLUSH_AFTER_DESTROY = "fixtures/series/erdma-reflush-after-destroy.mbox";

/** The QP numbers the kernel executor's trace gives the scenario's QPs (qp and peer). */
function qpnsOf(dir: string): number[] {
  const lines = readFileSync(join(dir, "traces", `${SCENARIO}.jsonl`), "utf8").split("\n");
  const qpns: number[] = [];
  for (const line of lines) {
    if (!line.includes('"kind":"qp"')) continue;
    const r = JSON.parse(line) as { ev?: string; kind?: string; name?: string; qp_num?: number };
    if (r.ev === "create" && r.kind === "qp" && typeof r.qp_num === "number") qpns.push(r.qp_num);
  }
  if (qpns.length === 0) throw new Error(`no create of a QP in ${dir}`);
  return qpns;
}

t.test("upstream 6.12: the reflush is cancelled before DESTROY_QP, hw-protocol holds", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(["run", "--kernel", "debian:6.12", "--scenario", SCENARIO], t);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  const s = scenarioOf(dir, SCENARIO);
  for (const profile of ["ib", "iwarp-rdmac", "linux"]) {
    const rule = ruleOf(s, profile, "hw-protocol");
    t.equal(rule?.verdict, "PASS", `${profile}: ${rule?.reason}`);
    t.ok((rule?.judged ?? 0) > 0, `${profile}: the device's commands and doorbells were checked`);
  }
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("a REFLUSH after DESTROY_QP: hw-protocol FAILs naming the command and the QP", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--kernel", "debian:6.12", "--series", REFLUSH_AFTER_DESTROY, "--scenario", SCENARIO],
    t,
  );
  t.equal(r.exitCode, 1, `a FAIL exits 1\n${`${r.stdout}${r.stderr}`.slice(-4000)}`);
  t.match(
    r.stdout,
    /verbs-lifecycle\s+PASS|verbs-lifecycle PASS/,
    "the probe's user QPs never flush: untouched",
  );
  const qpns = qpnsOf(dir);
  const named = /^REFLUSH for QP (\d+) after DESTROY_QP of QP \1 \(t=[\d.]+\): NOT_FOUND/;
  const namedQp = (reason: string) => {
    const m = named.exec(reason);
    return m ? Number(m[1]) : undefined;
  };
  t.match(
    r.stdout,
    new RegExp(`^${SCENARIO}\\s+FAIL\\s+FAIL\\s+FAIL\\s.*rule hw-protocol: REFLUSH for QP \\d+`, "m"),
  );
  const s = scenarioOf(dir, SCENARIO);
  for (const profile of ["ib", "iwarp-rdmac", "linux"]) {
    const rule = ruleOf(s, profile, "hw-protocol");
    t.equal(rule?.verdict, "FAIL", `${profile}: ${rule?.reason}`);
    t.ok(
      rule?.problems?.some((p) => qpns.includes(namedQp(p.reason) ?? -1)),
      `${profile}: a problem names the REFLUSH and one of the executor's QPs ${qpns.join(", ")}: ${rule?.problems?.map((p) => p.reason).join(" | ")}`,
    );
  }
  const qpn = ruleOf(s, "linux", "hw-protocol")
    ?.problems?.map((p) => namedQp(p.reason))
    .find((n) => n !== undefined && qpns.includes(n));
  // the device's own trace: DESTROY_QP of the QP, then the REFLUSH it refused for that QP
  const hw = readHwTrace(join(dir, "traces", `${SCENARIO}.hw.jsonl`));
  const cmds = hw.flatMap((e) => ("src" in e || e.kind !== "cmd" ? [] : [e]));
  const destroyed = cmds.findIndex((c) => c.name === "DESTROY_QP" && c.detail?.qpn === qpn && c.status === 0);
  const refused = cmds.findIndex(
    (c) =>
      c.name === "REFLUSH" && c.statusName === "NOT_FOUND" && c.object?.kind === "qp" && c.object.id === qpn,
  );
  t.ok(destroyed >= 0 && refused > destroyed, `REFLUSH of QP ${qpn} refused after its DESTROY_QP`);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
