import t from "tap";
import {
  ERDMA_BARS,
  ERDMA_PCI_IDENTITY,
  ErdmaDevice,
  parseMac,
  profileReflush,
} from "../../qemu/erdma/index.ts";
import { setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { FakeHost, traceSchemaProblems } from "../doubles/fake-guest.ts";

const DEV_CTRL = 0x10;
const DEV_ST = 0x14;

function device(opts: { manual?: boolean; mac?: string; rocev2?: boolean } = {}) {
  const host = new FakeHost({ manual: opts.manual ?? false });
  const dev = new ErdmaDevice({
    host,
    mac: opts.mac ?? "02:aa:bb:cc:dd:ee",
    ...(opts.rocev2 ? { profile: { ...profileReflush, protocol: "rocev2" as const } } : {}),
  });
  return { host, dev };
}

/** Programs the CMDQ and AEQ registers as erdma_cmdq_init/erdma_aeq_init do (6.12 sizes). */
function programQueues(
  host: FakeHost,
  dev: ErdmaDevice,
  o: { sqDepth?: number; aeqDepth?: number; sq?: bigint } = {},
) {
  const m = host.dma;
  const sqDepth = o.sqDepth ?? 512;
  const w32 = (off: number, v: number) => dev.bar0Write(off, 4, v);
  const w64 = (off: number, v: bigint) => dev.bar0Write(off, 8, v);
  const aeq = m.alloc(4096 * 16);
  w32(0x44, Number(aeq >> 32n));
  w32(0x40, Number(aeq & 0xffffffffn));
  w32(0x48, o.aeqDepth ?? 4096);
  w64(0x78, m.alloc(8, 8));
  const sq = o.sq ?? m.alloc(sqDepth * 32);
  w32(0x24, Number(sq >> 32n));
  w32(0x20, Number(sq & 0xffffffffn));
  w32(0x30, sqDepth);
  w64(0x60, m.alloc(8, 8));
  const cq = m.alloc(sqDepth * 32);
  w32(0x2c, Number(cq >> 32n));
  w32(0x28, Number(cq & 0xffffffffn));
  w64(0x68, m.alloc(8, 8));
  const eq = m.alloc(128 * 16);
  w32(0x3c, Number(eq >> 32n));
  w32(0x38, Number(eq & 0xffffffffn));
  w32(0x34, 128);
  w64(0x70, m.alloc(8, 8));
  return { sq, cq, eq, aeq };
}

t.test("PCI identity and BARs are what the driver matches", async (t) => {
  t.equal(ERDMA_PCI_IDENTITY.vendorId, 0x1ded);
  t.equal(ERDMA_PCI_IDENTITY.deviceId, 0x107f);
  t.equal(ERDMA_BARS.bar0.index, 0);
  t.equal(ERDMA_BARS.msix.index, 2);
  t.ok(ERDMA_BARS.bar0.size >= 0x79000 + 4096, "BAR0 holds the CQ doorbell space");
  const { dev } = device();
  t.equal(dev.msixVectors, 32);
});

t.test("identity registers: version, protocol, MAC, group number", async (t) => {
  const { dev } = device({ mac: "52:54:00:ab:cd:ef" });
  t.not(dev.bar0Read(0x0, 4), 0, "VERSION is non-zero (a zero means non-functional, erdma_main.c:290)");
  t.equal(dev.bar0Read(0xc, 4), 0, "DEV_PROTO iWARP");
  t.equal(dev.bar0Read(0x18, 4), 0x00abcdef);
  t.equal(dev.bar0Read(0x1c, 4), 0x5254);
  t.equal(dev.bar0Read(0x4c, 4), 0, "GRP_NUM 0: 6.1 disables direct WQE");
  t.equal(dev.bar0Read(0x18, 1), 0xef, "byte reads take the addressed byte");
  t.equal(dev.bar0Read(0x1a, 2), 0x00ab);
  t.equal(dev.bar0Read(0x18, 8), 0x5254_00ab_cdefn, "a 64-bit read covers L and H");
  t.equal(device({ rocev2: true }).dev.bar0Read(0xc, 4), 1, "DEV_PROTO RoCEv2");
});

t.test("MAC parsing", async (t) => {
  t.equal(parseMac("52-54-00-12-34-56"), 0x525400123456n);
  t.equal(parseMac(new Uint8Array([1, 2, 3, 4, 5, 6])), 0x010203040506n);
  t.equal(parseMac(0x0200_0000_0001n), 0x0200_0000_0001n);
  t.throws(() => parseMac("52:54:00:12:34"), RangeError);
  t.throws(() => parseMac("zz:54:00:12:34:56"), RangeError);
  t.throws(() => parseMac(new Uint8Array(5)), RangeError);
  t.throws(() => parseMac(1n << 48n), RangeError);
  t.throws(() => new ErdmaDevice({ host: new FakeHost(), mac: "nope" }), RangeError);
  t.throws(
    () => new ErdmaDevice({ host: new FakeHost(), mac: 1n, profile: { ...profileReflush, version: 0 } }),
    RangeError,
  );
});

t.test("INIT latches the queues and sets INIT_DONE during the write", async (t) => {
  const { host, dev } = device({ manual: true });
  t.equal(dev.bar0Read(DEV_ST, 4), 1, "RESET_DONE after power-on");
  programQueues(host, dev);
  dev.bar0Write(DEV_CTRL, 4, 2);
  t.equal(dev.bar0Read(DEV_ST, 4), 3, "INIT_DONE without running deferred work");
  t.equal(host.deferredCount, 0, "INIT needs no deferred work");
  t.ok(dev.initialized);
  dev.bar0Write(DEV_CTRL, 4, 2);
  t.ok(host.ofKind("warn").some((e) => /INIT while initialized/.test(e.message)));
  dev.bar0Write(0x30, 4, 64);
  t.ok(
    host.ofKind("warn").some((e) => /after INIT/.test(e.message)),
    "late queue register writes are reported",
  );
  t.equal(dev.bar0Read(0x30, 4), 64, "config registers read back");
});

t.test("INIT refuses bad queue configuration: INIT_DONE stays clear", async (t) => {
  const cases: Array<[string, (h: FakeHost, d: ErdmaDevice) => void]> = [
    ["depth not a power of two", (h, d) => programQueues(h, d, { sqDepth: 500 })],
    ["AEQ depth 0", (h, d) => programQueues(h, d, { aeqDepth: 0 })],
    ["SQ outside guest memory", (h, d) => programQueues(h, d, { sq: 0x10n })],
    ["nothing programmed", () => {}],
    [
      "CQ unmapped",
      (h, d) => {
        const q = programQueues(h, d);
        h.dma.unmap(q.cq, 4096);
      },
    ],
    [
      "doorbell record unmapped",
      (h, d) => {
        programQueues(h, d);
        d.bar0Write(0x70, 8, 0x20n);
      },
    ],
  ];
  for (const [name, setup] of cases) {
    const { host, dev } = device();
    setup(host, dev);
    dev.bar0Write(DEV_CTRL, 4, 2);
    t.equal(dev.bar0Read(DEV_ST, 4), 1, `${name}: no INIT_DONE`);
    t.notOk(dev.initialized, name);
    t.ok(
      host.ofKind("state").some((e) => e.to === "init-failed"),
      `${name}: traced`,
    );
  }
});

t.test("DEV_CTRL.RESET and reset() return the device to power-on state", async (t) => {
  const { host, dev, drv } = await setupErdma({ version: "6.12" });
  await drv.createCq(64);
  t.equal(dev.state.cqs.size, 1);
  dev.bar0Write(DEV_CTRL, 4, 1);
  t.equal(dev.bar0Read(DEV_ST, 4), 1, "RESET_DONE, INIT_DONE cleared");
  t.equal(dev.state.cqs.size, 0, "objects are gone");
  t.equal(dev.bar0Read(0x30, 4), 0, "queue registers cleared");
  t.notOk(dev.initialized);
  programQueues(host, dev);
  dev.bar0Write(DEV_CTRL, 4, 3);
  t.equal(dev.bar0Read(DEV_ST, 4), 1, "RESET and INIT in one write: the reset clears what INIT needs");
  programQueues(host, dev);
  dev.bar0Write(DEV_CTRL, 4, 2);
  t.ok(dev.initialized, "the device initialises again after a reset");
  dev.reset("flr");
  t.notOk(dev.initialized);
  t.ok(host.ofKind("state").some((e) => e.object === "device" && /flr/.test(e.to)));
});

t.test("a reset drops queued work: no completion is written afterwards", async (t) => {
  const { host, dev } = device({ manual: true });
  const q = programQueues(host, dev);
  dev.bar0Write(DEV_CTRL, 4, 2);
  // one QUERY_FW_INFO SQE, doorbell at pi 4
  host.dma.setU64(q.sq, (1n << 24n) | (2n << 16n) | (3n << 52n) | 4n);
  dev.bar0Write(0x200, 8, 4n);
  t.equal(host.deferredCount, 1, "the doorbell only queued work");
  t.equal(host.dma.reads, 0, "and touched no guest memory");
  const pending = dev.submit("probe", async () => 1);
  dev.reset();
  await t.rejects(pending, /dropped by a device reset/);
  host.runDeferred();
  await dev.idle();
  t.equal(host.dma.writes, 0, "no CQE after the reset");
  t.equal(host.dma.u64(q.cq), 0n);
});

t.test("register reads never touch guest memory; doorbell writes defer it", async (t) => {
  const { host, dev, drv } = await setupErdma({ version: "6.12" });
  const reads = host.dma.reads;
  const writes = host.dma.writes;
  for (let off = 0; off < 0x400; off += 4) dev.bar0Read(off, 4);
  dev.bar0Read(0x80, 8);
  t.equal(host.dma.reads, reads);
  t.equal(host.dma.writes, writes);
  const { cq } = await drv.createCq(8);
  const before = host.dma.writes;
  drv.notifyCq(cq);
  dev.bar0Write(0x200, 8, BigInt(drv.sq.pi));
  t.equal(host.dma.writes, before, "arming a CQ and ringing the CMDQ write nothing during the access");
  await dev.idle();
});

t.test("statistics registers are 64-bit counters", async (t) => {
  const { dev } = device();
  dev.counters.set(0xc0, 0x1_0000_0002n);
  t.equal(dev.bar0Read(0xc0, 8), 0x1_0000_0002n);
  t.equal(dev.bar0Read(0xc0, 4), 2);
  t.equal(dev.bar0Read(0xc4, 4), 1);
  dev.bar0Write(0xc0, 4, 5);
  t.equal(dev.bar0Read(0xc0, 8), 0x1_0000_0002n, "read-only");
});

t.test("64-bit registers and doorbells written as two 32-bit halves", async (t) => {
  const { dev, host, drv } = await setupErdma({ version: "6.12" });
  dev.bar0Write(DEV_CTRL, 4, 1);
  programQueues(host, dev);
  dev.bar0Write(0x60, 4, 0x1234);
  dev.bar0Write(0x64, 4, 0x1);
  t.equal(dev.bar0Read(0x60, 8), 0x1_0000_1234n);
  // back to a working device, then arm a CQ with two 32-bit writes (low half latched, high half rings)
  const fresh = await setupErdma({ version: "6.12" });
  const { cq } = await fresh.drv.createCq(8);
  const db = (BigInt(cq.cqn) << 32n) | (1n << 31n);
  fresh.dev.bar0Write(0x79000, 4, Number(db & 0xffffffffn));
  t.equal(fresh.dev.state.cqs.get(cq.cqn)?.armed, "no", "the low half alone does not ring");
  fresh.dev.bar0Write(0x79004, 4, Number(db >> 32n));
  t.equal(fresh.dev.state.cqs.get(cq.cqn)?.armed, "all", "the high half rings with the latched low half");
  fresh.dev.bar0Write(0x79000, 2, 0);
  t.ok(fresh.host.ofKind("warn").some((e) => /sub-dword doorbell/.test(e.message)));
  t.ok(drv);
});

t.test("bad accesses are refused without throwing", async (t) => {
  const { dev, host } = device();
  t.equal(dev.bar0Read(0x3, 4), 0, "unaligned");
  t.equal(dev.bar0Read(1 << 20, 4), 0, "beyond BAR0");
  t.equal(dev.bar0Read(0, 3 as 4), 0, "size 3");
  t.equal(dev.bar0Read(0x8, 8), 0n, "8-byte reads of unaligned offsets return 0n");
  t.equal(dev.bar0Read(-4, 8), 0n);
  dev.bar0Write(0x11, 4, 1);
  dev.bar0Write(0x10, 2, 1);
  dev.bar0Write(0x0, 4, 1);
  dev.bar0Write(0x500, 4, 1);
  t.equal(dev.bar0Read(0x0, 4), profileReflush.version, "VERSION is read-only");
  t.equal(dev.bar0Read(0x500, 4), 0, "unknown registers read 0");
  t.equal(dev.bar0Read(0x1000, 8), 0n, "doorbells are write-only");
  t.equal(dev.bar0Read(0x1000, 4), 0);
  t.ok(host.ofKind("warn").length >= 6);
  t.equal(host.ofKind("internal-error").length, 0);
});

t.test("doorbells before INIT_DONE are ignored", async (t) => {
  const { dev, host } = device();
  dev.bar0Write(0x200, 8, 4n);
  dev.bar0Write(0x5f000, 8, (1n << 32n) | 1n);
  await dev.idle();
  t.equal(host.ofKind("warn").filter((e) => /before INIT_DONE/.test(e.message)).length, 2);
  t.equal(host.dma.reads, 0);
});

t.test("every register access is traced, named and JSON-serialisable", async (t) => {
  const { dev, host } = device();
  dev.bar0Read(0x14, 4);
  dev.bar0Write(0x30, 4, 256);
  dev.bar0Write(0x108, 8, 0x8000_0000n);
  dev.bar0Write(0x61000, 8, 1n);
  const r = host.ofKind("reg-read")[0];
  t.match(r, { name: "DEV_ST", offset: 0x14, size: 4, value: "0x1", dev: "erdma" });
  t.match(host.ofKind("reg-write")[0], { name: "CMDQ_DEPTH", value: "0x100" });
  t.match(host.ofKind("reg-write")[1], { name: "CEQ_DB[1]", size: 8 });
  t.match(host.ofKind("reg-write")[2], { name: "DB_SPACE" });
  t.ok(host.events.every((e) => typeof e.t === "number"));
});

t.test("a host whose defer() runs jobs at once still gets no DMA inside a register access", async (t) => {
  const host = new FakeHost();
  host.defer = (job: () => void) => job();
  const dev = new ErdmaDevice({ host, mac: "02:00:00:00:00:02" });
  const q = programQueues(host, dev);
  dev.bar0Write(DEV_CTRL, 4, 2);
  host.dma.setU64(q.sq, (1n << 24n) | (2n << 16n) | (3n << 52n) | 4n);
  const reads = host.dma.reads;
  dev.bar0Write(0x200, 8, 4n);
  t.equal(host.dma.reads, reads, "nothing read during the doorbell write");
  await dev.idle();
  t.ok(host.dma.reads > reads, "the SQE was fetched afterwards");
  t.equal(host.ofKind("cmd")[0]?.name, "QUERY_FW_INFO");
});

t.test("a failing trace sink or interrupt path does not take the device down", async (t) => {
  const { host, dev, drv } = await setupErdma({ version: "7.2" });
  host.trace = () => {
    throw new Error("sink down");
  };
  t.equal((await drv.post(R.queryFwInfo())).status, 0);
  const seen: string[] = [];
  host.trace = (e) => seen.push(e.kind);
  host.raiseMsix = () => {
    throw new Error("eventfd gone");
  };
  await t.rejects(drv.post(R.queryFwInfo()), /timed out/);
  t.ok(seen.includes("internal-error"), "a host failure is reported as such");
  t.equal(dev.bar0Read(0x14, 4), 3);
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
