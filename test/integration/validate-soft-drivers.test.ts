// hil validate finds drain/flush bugs in the software drivers too, on real debian:6.12 guests: a
// mutant of the mutation campaign (fixtures/mutants) per driver, each on one scenario that catches
// it. siw's receive-queue flush that starts one past the oldest receive leaves that receive
// uncompleted through ib_drain_qp; rxe's ERR transition that wakes only the requester leaves the
// receives outstanding at ERR unflushed. Both: a new FAIL naming the WR, exit 1, nothing left behind.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

const NEVER_COMPLETED = String.raw`qp rq WR \d+ \(posted in RTS\) never completed though qp ended in ERR`;

t.test("siw: the oldest receive skipped by the flush is a new FAIL of rules 5 and 9", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    [
      "validate",
      "--driver",
      "siw",
      "--series",
      "fixtures/mutants/siw-rq-flush-skips-oldest.mbox",
      "--scenario",
      "drain-rq-outstanding",
    ],
    t,
  );
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    new RegExp(
      `^drain-rq-outstanding\\s+(?:[\\w-]+,)*linux(?:,[\\w-]+)*\\s+PASS\\s+FAIL\\s+NEW FAIL\\s+rule 5: ${NEVER_COMPLETED}`,
      "m",
    ),
  );
  t.match(r.stdout, /^\s+rule 9: PASS -> FAIL\s+qp rq WR \d+ had not completed when ib_drain_qp returned/m);
  const patched = JSON.parse(readFileSync(join(dir, "patched", "verdicts.json"), "utf8"));
  t.match(
    patched.series?.patches?.[0]?.subject,
    /^\[MUTANT\] RDMA\/siw: /,
    "the patched run carries the series",
  );
  t.equal(patched.driver, "siw");
  t.match(r.stdout, /^hil validate: REGRESSION: [1-9]\d* new FAIL, 0 fixed/m);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("rxe: receives outstanding at ERR left unflushed are a new FAIL of rule 5", async (t) => {
  const { iso, r } = await hilWithRunDir(
    [
      "validate",
      "--driver",
      "rxe",
      "--series",
      "fixtures/mutants/rxe-err-transition-no-recv-flush.mbox",
      "--scenario",
      "partial-post-rq-overflow",
    ],
    t,
  );
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^partial-post-rq-overflow\s+(?:[\w-]+,)*linux(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule \d: /m,
  );
  t.match(r.stdout, new RegExp(`^\\s+rule 5: PASS -> FAIL\\s+${NEVER_COMPLETED}`, "m"));
  t.match(r.stdout, /^hil validate: REGRESSION: [1-9]\d* new FAIL, 0 fixed/m);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
