/**
 * Fuzz: random register accesses, doorbells, mutated and random commands, resets and guest
 * memory vanishing, for a bounded time. Nothing may escape the device, nothing may hang, and the
 * device may never reach outside the guest memory the host maps. ERDMA_FUZZ_SEED reproduces a run;
 * ERDMA_FUZZ_MS changes its length (default 3000).
 */
import t from "tap";
import { type DriverVersion, QpState, setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const seed = Number(process.env.ERDMA_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));
const durationMs = Number(process.env.ERDMA_FUZZ_MS ?? 3000);

t.test(`fuzz (seed ${seed})`, async (t) => {
  const rnd = mulberry32(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const u64 = () => (BigInt(int(2 ** 32)) << 32n) | BigInt(int(2 ** 32));
  const version = pick<DriverVersion>(["6.1", "6.12", "7.2"]);
  const s = await setupErdma({ version, trace: "counts", memSize: 8 << 20 });
  const { dev, drv, host } = s;
  const m = host.dma;

  // some real objects for commands and doorbells to hit
  const { cq } = await drv.createCq(64);
  const { qp } = await drv.createQp({ scq: cq, rcq: cq, maxSendWr: 16, maxRecvWr: 16 });
  await drv.modifyQp(qp, QpState.RTS, {
    cookie: 1,
    sip: 1,
    dip: 2,
    sport: 3,
    dport: 4,
    sendNxt: 5,
    recvNxt: 6,
  });
  await drv.getDmaMr(1);

  const scratch = Array.from({ length: 8 }, () => m.alloc(16384));
  const addr = (): bigint =>
    pick([
      () => pick(scratch) + BigInt(int(16384)),
      () => u64(),
      () => m.base + BigInt(int(m.buf.length)),
      () => m.end - BigInt(int(64)),
      () => 0n,
    ])();
  const q = (): R.QueueMtt => ({
    pageShift: 12 + int(10),
    level: int(2) as 0 | 1,
    count: int(6),
    offset: int(2) ? 0 : int(1 << 14),
    entries: [addr(), addr(), addr(), addr()],
    cqn: pick([cq.cqn, int(4096)]),
    dbrec: addr(),
  });
  const validish = (): Uint8Array =>
    pick([
      () => R.queryDevice(),
      () => R.queryFwInfo(),
      () => R.confMtu(int(70000)),
      () => R.confDevice(int(64), rnd() < 0.5),
      () => R.getStats({ target: addr(), length: int(300) }),
      () => R.allocDb(int(8)),
      () => R.freeDb({ sdb: int(256), rdb: int(256), cdb: int(256) }),
      () => R.createEq({ eqn: int(40), vector: int(40), depthLog: int(20), qbuf: addr(), dbrec: addr() }),
      () => R.destroyEq({ eqn: int(40), vector: int(40) }),
      () =>
        R.createCq({
          cqn: int(3000),
          depthLog: int(20),
          eqn: int(5),
          pageShift: 12 + int(16),
          qbuf: addr(),
          mttCount: int(5),
          level: int(2) as 0 | 1,
          dbrec: addr(),
          firstPageOffset: int(2) ? 0 : int(1 << 20),
          ...(rnd() < 0.1 ? { cdb: int(256) } : {}),
        }),
      () => R.destroyCq(pick([cq.cqn, int(3000)])),
      () =>
        R.createQp(version, {
          qpn: int(1100),
          pd: int(100),
          sqDepthLog: int(17),
          rqDepthLog: int(15),
          sq: q(),
          rq: q(),
          type: int(3),
        }),
      () => R.destroyQp(pick([qp.qpn, int(1100)])),
      () =>
        R.modifyQp(
          pick([qp.qpn, int(1100)]),
          int(9),
          rnd() < 0.5
            ? {
                cookie: int(1e9),
                sip: int(1e9),
                dip: int(1e9),
                sport: int(65536),
                dport: int(65536),
                sendNxt: 1,
                recvNxt: 2,
              }
            : undefined,
        ),
      () => R.reflush({ qpn: pick([qp.qpn, int(1100)]), sqPi: int(70000), rqPi: int(70000) }),
      () =>
        R.regMr({
          stag: int(2 ** 28),
          pd: int(100),
          type: int(4) as 0,
          access: int(32),
          valid: rnd() < 0.5,
          pageShift: int(40),
          level: int(4),
          count: int(2 ** 20),
          va: u64(),
          size: u64() >> BigInt(int(64)),
          phys: [addr(), addr(), addr(), addr()],
          ...(rnd() < 0.3 ? { version1: { mttPageField: int(8) } } : {}),
        }),
      () => R.deregMr(int(2 ** 28)),
      () => R.setGid({ index: int(40), del: rnd() < 0.5, gid: new Uint8Array(16) }),
      () => R.createAh({ pdn: int(9), ahn: int(4000) }),
      () => R.destroyAh({ pdn: int(9), ahn: int(4000) }),
      () => R.queryQp(int(1100)),
      () => R.modifyQpRocev2({ qpn: int(1100), state: int(9), mask: int(64) }),
    ])();

  const mutate = (b: Uint8Array): Uint8Array => {
    const out = b.slice();
    for (let i = int(5); i > 0; i--) {
      const at = int(out.length);
      out[at] = (out[at] ?? 0) ^ (1 << int(8));
    }
    return out;
  };

  const pushCommand = (req: Uint8Array) => {
    const size = Math.min(req.length, drv.sqeSize);
    const cnt = rnd() < 0.9 ? drv.wqebbCnt : 1 + int(8);
    const advance = rnd() < 0.9 ? cnt : 1 + int(8);
    const sqePi = drv.sq.pi;
    const at = drv.sq.qbuf + BigInt(((sqePi & (drv.sq.depth - 1)) >>> 0) * 32);
    if (m.isMapped(at, size, "write")) m.setBytes(at, req.subarray(0, size));
    drv.sq.pi = (drv.sq.pi + advance) & 0xffff;
    const hdr0 = new DataView(req.buffer, req.byteOffset, 8).getBigUint64(0, true) & ~0xffffn;
    const hdr = hdr0 | BigInt(drv.sq.pi) | (BigInt(int(128)) << 32n) | (BigInt((cnt - 1) & 7) << 52n);
    if (m.isMapped(at, 8, "write")) m.setU64(at, hdr);
    dev.bar0Write(0x200, 8, BigInt(drv.sq.pi));
  };

  const reinit = () => {
    dev.bar0Write(0x10, 4, 1);
    drv.aeqInit(true);
    drv.cmdqInit(true);
    dev.bar0Write(0x10, 4, 2);
    drv.cmdqOk = true;
  };

  const offsets = [
    0x0, 0xc, 0x10, 0x14, 0x18, 0x1c, 0x20, 0x24, 0x28, 0x2c, 0x30, 0x34, 0x38, 0x3c, 0x40, 0x44, 0x48, 0x4c,
    0x50, 0x60, 0x68, 0x70, 0x78, 0x80, 0xc0, 0x100, 0x108, 0x1f8, 0x200, 0x300, 0x5f000, 0x61000, 0x79000,
  ];
  const randomOffset = () =>
    pick([
      () => pick(offsets),
      () => int(0x400),
      () => int(1 << 20),
      () => 0x1000 + int(0xff000),
      () => -int(16),
      () => (1 << 20) + int(64),
    ])();

  let ops = 0;
  const idle = async () => {
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`device did not go idle (seed ${seed}, op ${ops})`)), 5000);
    });
    try {
      await Promise.race([dev.idle(), hang]);
    } finally {
      clearTimeout(timer);
    }
    host.pendingIrqs.length = 0;
  };

  const deadline = performance.now() + durationMs;
  while (performance.now() < deadline) {
    ops++;
    const r = rnd();
    if (r < 0.2) {
      const size = pick([1, 2, 4, 8, 3, 16] as const);
      const off = randomOffset();
      const value = size === 8 ? u64() : rnd() < 0.2 ? u64() : int(2 ** 32);
      if (off === 0x10 && rnd() < 0.7) continue; // keep most of the run initialised
      dev.bar0Write(off, size as 4, value);
    } else if (r < 0.3) {
      dev.bar0Read(randomOffset(), pick([1, 2, 4, 8, 5] as const) as 4);
    } else if (r < 0.6) {
      pushCommand(mutate(validish()));
    } else if (r < 0.65) {
      const b = new Uint8Array(drv.sqeSize);
      for (let i = 0; i < b.length; i++) b[i] = int(256);
      pushCommand(b);
    } else if (r < 0.75) {
      const db = pick([0x50, 0x100 + 8 * int(32), 0x300, 0x79000 + 8 * int(16), 0x5f000, 0x61000]);
      dev.bar0Write(
        db,
        8,
        rnd() < 0.5 ? u64() : (BigInt(pick([cq.cqn, qp.qpn, int(64)])) << 32n) | BigInt(int(2 ** 32)),
      );
    } else if (r < 0.82) {
      const target = int(3000);
      void dev
        .submit("fuzz-cqe", async (st) =>
          (st.cqs.get(target) ?? st.cqs.get(cq.cqn))?.post({
            opcode: int(256),
            qtype: int(3),
            syndrome: int(256),
            qeIdx: int(2 ** 32),
            qpn: int(2 ** 32),
            size: int(2 ** 32),
            solicited: rnd() < 0.5,
          }),
        )
        .catch(() => {});
    } else if (r < 0.85) {
      dev.state.queueAsyncEvent(int(8), int(256), int(2 ** 32), int(2 ** 32));
    } else if (r < 0.88) {
      m.unmap(addr(), 1 + int(1 << 16));
    } else if (r < 0.9) {
      m.remapAll();
    } else if (r < 0.91) {
      dev.reset("fuzz");
      reinit();
    } else if (r < 0.92) {
      reinit();
    }
    if (rnd() < 0.3) await idle();
    if (host.counts.get("internal-error")) break;
  }
  await idle();

  t.comment(
    `${version}: ${ops} ops, ${JSON.stringify(Object.fromEntries(host.counts))}, ${m.faults.length} refused accesses`,
  );
  t.same(
    host.events.filter((e) => e.kind === "internal-error"),
    [],
    "no internal errors (every guest input handled as hardware would)",
  );
  t.equal(m.outOfBounds, 0, "no access outside guest memory");
  t.ok((host.counts.get("cmd") ?? 0) > 50, "commands were processed");
  t.ok(ops > 500, "the fuzz ran");
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
