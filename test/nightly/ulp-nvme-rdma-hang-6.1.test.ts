// hil repro nvme-rdma-disconnect-hang-6.1, as a user types it: NVMe over Fabrics on RDMA on Linux 6.1
// (the ulp config fragment) with the erdma 2022 hardware: the disconnect hangs in ib_drain_qp, and
// the stuck step's stack is kept as evidence.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

type Obs = { ev: string; [k: string]: unknown };

function verdicts(dir: string): { scenarios: { name: string; observations?: Obs[] }[] } {
  return JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
}

t.test("hil repro nvme-rdma-disconnect-hang-6.1: the disconnect hangs in ib_drain_qp", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(["repro", "nvme-rdma-disconnect-hang-6.1"], t);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(r.stdout, /REPRODUCES/);
  const stuck = verdicts(dir)
    .scenarios.find((s) => s.name === "ulp-nvme-rdma-io")
    ?.observations?.find((o) => o.ev === "stuck");
  t.equal(stuck?.op, "ulp disconnect", "the disconnect is the step that hung");
  t.match(String(stuck?.stack), /ib_drain_qp/);
  t.match(String(stuck?.stack), /nvme_rdma/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
