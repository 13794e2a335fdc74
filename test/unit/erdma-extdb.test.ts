// Extended doorbell pages as the real driver and rdma-core use them (found with Linux 6.12/7.2 and
// rdma-core 44 in a guest): the page in ALLOC_DB's RDB field (63:48) is mapped as the context's CQ
// doorbell page, the one in the CDB field (47:32) as its RQ doorbell page.
import t from "tap";
import { profileReflush } from "../../qemu/erdma/index.ts";
import { setupErdma } from "../doubles/erdma-driver.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

const extDbProfile = { ...profileReflush, caps: { ...profileReflush.caps, extendDb: true } };
const RQDB_SPACE = 4096 + 384 * 1024;
const CQDB_SPACE = RQDB_SPACE + 96 * 1024;

for (const version of ["6.12", "7.2"] as const) {
  t.test(`${version}: a CQ armed on the RDB page, an RQ doorbell on the CDB page`, async (t) => {
    const { host, dev, drv } = await setupErdma({ version, profile: extDbProfile });
    const a = await drv.allocDb();
    t.equal(a.out.status, 0, "ALLOC_DB");
    t.ok(a.rdb << 12 >= CQDB_SPACE, `RDB page ${a.rdb} lies in the CQ doorbell space`);
    t.ok(a.cdb << 12 >= RQDB_SPACE && a.cdb << 12 < CQDB_SPACE, `CDB page ${a.cdb} lies in the RQ space`);
    const { cq } = await drv.createCq(64);
    // rdma-core's erdma_notify_cq: CQN 55:32, ARM 31, at (cqn % 512) * 8 in the context's CQ page
    const cqDbOffset = (a.rdb << 12) + (cq.cqn % 512) * 8;
    dev.bar0Write(cqDbOffset, 8, (BigInt(cq.cqn) << 32n) | (1n << 31n));
    await dev.idle();
    const db = host.ofKind("doorbell").at(-1);
    t.equal(db?.db, "cq", "decoded as a CQ doorbell");
    t.equal(db?.id, cq.cqn, "for this CQ");
    t.equal(dev.state.cqs.get(cq.cqn)?.armed, "all", "the CQ is armed");
    // an RQ doorbell on the CDB page is an RQ doorbell
    dev.bar0Write(a.cdb << 12, 8, (7n << 32n) | 1n);
    await dev.idle();
    t.equal(host.ofKind("doorbell").at(-1)?.db, "rq", "decoded as an RQ doorbell");
    t.equal(host.ofKind("internal-error").length, 0);
  });
}

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
