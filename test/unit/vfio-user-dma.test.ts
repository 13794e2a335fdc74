// DMA: the mapped-region table, bound checks, both access paths (shared memfd, DMA_READ/WRITE
// messages), and the device DMA engine over a live server with the fake client.
import t, { type Test } from "tap";
import { CMD_IRQ, Op, Reg, Status, TestdevError } from "../../qemu/testdev/device.ts";
import { drainEventFd, type VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { DmaController, DmaError } from "../../qemu/vfio-user/dma.ts";
import { closeFd, countOpenFds, mapShared, memfdCreate, unmap, viewOf } from "../../qemu/vfio-user/libc.ts";
import { Command, Errno, ProtocolError, Vfio } from "../../qemu/vfio-user/protocol.ts";
import { type Harness, startHarness, until, waitDisconnected } from "./vfio-user-helpers.ts";

const RW = Vfio.DMA_MAP_FLAG_READ | Vfio.DMA_MAP_FLAG_WRITE;

/** A controller whose message path is a plain buffer at `base` (what a client would serve). */
function controller(opts: { enabled?: () => boolean; maxTransfer?: number } = {}) {
  const base = 0x800000n;
  const remote = Buffer.alloc(0x4000);
  const calls: { kind: string; address: bigint; length: number }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const dma = new DmaController({
    enabled: opts.enabled,
    messages: {
      read: async (address, length) => {
        calls.push({ kind: "read", address, length });
        await gate;
        const o = Number(address - base);
        return Buffer.from(remote.subarray(o, o + length));
      },
      write: async (address, data) => {
        calls.push({ kind: "write", address, length: data.length });
        await gate;
        remote.set(data, Number(address - base));
      },
      maxTransfer: () => opts.maxTransfer ?? 1 << 20,
    },
  });
  return {
    dma,
    remote,
    calls,
    base,
    hold() {
      let release = () => {};
      gate = new Promise((r) => {
        release = r;
      });
      return () => release();
    },
  };
}

async function refusedWith(t: Test, p: Promise<unknown>, re: RegExp): Promise<void> {
  try {
    await p;
    t.fail("not refused");
  } catch (err) {
    t.ok(err instanceof DmaError, "DmaError");
    t.match((err as Error).message, re);
  }
}

function protocolErrno(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof ProtocolError ? err.errno : -1;
  }
  return undefined;
}

t.test("table: map, overlap refused, exact unmap, unmap all", async (t) => {
  const { dma } = controller();
  dma.map({ address: 0x10000n, size: 0x2000n, offset: 0n, flags: RW }, undefined);
  dma.map({ address: 0x0n, size: 0x1000n, offset: 0n, flags: RW }, undefined);
  t.same(
    dma.list().map((r) => r.address),
    [0n, 0x10000n],
    "kept sorted",
  );
  t.equal(
    protocolErrno(() => dma.map({ address: 0x11000n, size: 0x1000n, offset: 0n, flags: RW }, undefined)),
    Errno.EEXIST,
  );
  t.equal(
    protocolErrno(() => dma.map({ address: 0xf000n, size: 0x2000n, offset: 0n, flags: RW }, undefined)),
    Errno.EEXIST,
  );
  t.equal(
    protocolErrno(() => dma.unmap(0x10000n, 0x1000n)),
    Errno.ENOENT,
    "size must match exactly",
  );
  dma.unmap(0x10000n, 0x2000n);
  t.equal(dma.list().length, 1);
  t.equal(dma.unmapAll(), 1);
  t.equal(dma.list().length, 0);
});

t.test("bounds: inside, at the edge, across a gap, across adjacent regions", async (t) => {
  const { dma, remote, base } = controller();
  dma.map({ address: base, size: 0x2000n, offset: 0n, flags: RW }, undefined);
  dma.map({ address: base + 0x2000n, size: 0x2000n, offset: 0n, flags: RW }, undefined);
  remote.fill(0x5a);
  t.equal((await dma.read(base + 0x1ffcn, 4)).length, 4, "last bytes of a region");
  t.equal((await dma.read(base + 0x1ffen, 4)).length, 4, "across two adjacent regions");
  t.ok(dma.isMapped(base, 0x4000, "write"));
  t.notOk(dma.isMapped(base, 0x4001, "read"));
  await refusedWith(t, dma.read(base + 0x3ffen, 4), /outside mapped memory \(0x804000 unmapped\)/);
  await refusedWith(t, dma.read(base - 1n, 2), /outside mapped memory/);
  await refusedWith(t, dma.write(0n, Buffer.alloc(1)), /outside mapped memory/);
  await refusedWith(t, dma.read(0xffff_ffff_ffff_fff0n, 0x20), /outside 64 bits|outside mapped/);
  t.equal((await dma.read(base, 0)).length, 0, "zero-length access is a no-op");
});

t.test("permissions: read-only and write-only regions", async (t) => {
  const { dma, base } = controller();
  dma.map({ address: base, size: 0x1000n, offset: 0n, flags: Vfio.DMA_MAP_FLAG_READ }, undefined);
  dma.map({ address: base + 0x1000n, size: 0x1000n, offset: 0n, flags: Vfio.DMA_MAP_FLAG_WRITE }, undefined);
  await dma.read(base, 16);
  await refusedWith(t, dma.write(base, Buffer.alloc(16)), /read-only/);
  await dma.write(base + 0x1000n, Buffer.alloc(16));
  await refusedWith(t, dma.read(base + 0x1000n, 16), /unreadable/);
});

t.test("bus master disabled: every access refused", async (t) => {
  let master = false;
  const { dma, base } = controller({ enabled: () => master });
  dma.map({ address: base, size: 0x1000n, offset: 0n, flags: RW }, undefined);
  await refusedWith(t, dma.read(base, 4), /bus master disabled/);
  master = true;
  await dma.read(base, 4);
});

t.test("message path: split at max_data_xfer_size", async (t) => {
  const { dma, calls, base, remote } = controller({ maxTransfer: 0x1000 });
  dma.map({ address: base, size: 0x4000n, offset: 0n, flags: RW }, undefined);
  await dma.write(base + 0x800n, Buffer.alloc(0x2800, 7));
  t.same(
    calls.map((c) => c.length),
    [0x1000, 0x1000, 0x800],
  );
  t.equal(remote[0x7ff], 0);
  t.equal(remote[0x800], 7);
  t.equal(remote[0x2fff], 7);
});

t.test("shared path: an fd-backed region is mapped; writes land in the client's memfd", async (t) => {
  const before = countOpenFds();
  const { dma } = controller();
  const memfd = memfdCreate("guest", 0x3000);
  const mine = mapShared(memfd, 0n, 0x3000, true);
  // The server gets its own fd (here: a dup, as SCM_RIGHTS would); offset 0x1000 into the file.
  const theirs = (await import("../../qemu/vfio-user/libc.ts")).dupFd(memfd);
  dma.map({ address: 0x40000n, size: 0x2000n, offset: 0x1000n, flags: RW }, theirs);
  await dma.write(0x40010n, Buffer.from("hello"));
  t.equal(Buffer.from(viewOf(mine, 0x1010, 5)).toString(), "hello", "visible at file offset 0x1010");
  viewOf(mine, 0x2ff0, 4).set([1, 2, 3, 4]);
  t.same([...(await dma.read(0x41ff0n, 4))], [1, 2, 3, 4]);
  dma.unmap(0x40000n, 0x2000n);
  await refusedWith(t, dma.read(0x40000n, 4), /outside mapped memory/);
  unmap(mine);
  closeFd(memfd);
  t.equal(countOpenFds(), before, "the controller closed its fd");
});

t.test(
  "an unmap during a message-path access aborts the rest; a dead mapping is never touched",
  async (t) => {
    const { dma, base, hold } = controller();
    const memfd = memfdCreate("guest2", 0x1000);
    dma.map({ address: base, size: 0x1000n, offset: 0n, flags: RW }, undefined);
    dma.map({ address: base + 0x1000n, size: 0x1000n, offset: 0n, flags: RW }, memfd);
    const release = hold();
    const pending = dma.read(base + 0xff0n, 0x20);
    await new Promise((r) => setImmediate(r));
    dma.unmap(base + 0x1000n, 0x1000n);
    release();
    await refusedWith(t, pending, /region unmapped during the access/);
  },
);

// ------------------------------------------------------------------ the device over a live server

let h: Harness;
let c: VfioUserClient;

async function program(op: number, src: bigint, dst: bigint, len: number, pattern = 0, client = c) {
  await client.write32(0, Reg.SRC_LO, Number(src & 0xffffffffn));
  await client.write32(0, Reg.SRC_HI, Number(src >> 32n));
  await client.write32(0, Reg.DST_LO, Number(dst & 0xffffffffn));
  await client.write32(0, Reg.DST_HI, Number(dst >> 32n));
  await client.write32(0, Reg.LEN, len);
  await client.write32(0, Reg.PATTERN, pattern);
  await client.write32(0, Reg.IRQ_VECTOR, 1);
  // Posted doorbell, as QEMU sends it (NO_REPLY).
  const b = Buffer.alloc(4);
  b.writeUInt32LE(op | CMD_IRQ);
  await client.regionWrite(0, Reg.CMD, b, true);
}

async function waitDone(client = c): Promise<{ status: number; error: number }> {
  for (let i = 0; i < 2000; i++) {
    const status = await client.read32(0, Reg.STATUS);
    if (!(status & Status.BUSY)) return { status, error: await client.read32(0, Reg.ERROR) };
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error("DMA never finished");
}

t.test("device: setup a client with both kinds of memory", async (t) => {
  h = await startHarness({ dmaTimeoutMs: 300 });
  c = await h.client();
  await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, 4, Buffer.from([0x06, 0x00]));
  t.ok(h.server.config.busMaster);
});

for (const shared of [true, false]) {
  const kind = shared ? "shared memory" : "messages";
  t.test(`device over ${kind}: fill, copy, interrupt, fault`, async (t) => {
    const base = shared ? 0x1000_0000n : 0x2000_0000n;
    const mem = await c.addMemory(base, 4 << 20, shared);
    const [fd0, fd1] = await c.setMsixEventFds(0, 2);
    c.dmaRequests.length = 0;
    await program(Op.FILL, 0n, base + 0x100n, 3 << 20, 0xa1b2c3d4);
    const fill = await waitDone();
    t.same(fill, { status: Status.DONE, error: 0 }, "fill done");
    t.same([...mem.subarray(0x100, 0x108)], [0xd4, 0xc3, 0xb2, 0xa1, 0xd4, 0xc3, 0xb2, 0xa1]);
    t.equal(mem[0xff], 0, "not before");
    t.equal(mem[0x100 + (3 << 20)], 0, "not after");
    await until(() => drainEventFd(fd1 as number) === 1, 1000, "MSI-X vector 1");
    t.equal(drainEventFd(fd0 as number), 0, "vector 0 quiet");
    if (shared) t.equal(c.dmaRequests.length, 0, "no DMA messages on the shared path");
    else {
      t.ok(c.dmaRequests.length >= 3, `${c.dmaRequests.length} DMA_WRITE messages`);
      t.ok(
        c.dmaRequests.every((r) => r.count <= 1 << 20),
        "each within max_data_xfer_size",
      );
    }
    mem.set(Buffer.from("the quick brown fox"), 0x20000);
    await program(Op.COPY, base + 0x20000n, base + 0x30003n, 19);
    t.same(await waitDone(), { status: Status.DONE, error: 0 }, "copy done");
    t.equal(Buffer.from(mem.subarray(0x30003, 0x30003 + 19)).toString(), "the quick brown fox");
    await program(Op.COPY, base + (4n << 20n) - 4n, base, 8);
    t.same(
      await waitDone(),
      { status: Status.DONE | Status.ERROR, error: TestdevError.READ_FAULT },
      "read past the end",
    );
    await program(Op.FILL, 0n, 0x7000_0000n, 8);
    t.same(
      await waitDone(),
      { status: Status.DONE | Status.ERROR, error: TestdevError.WRITE_FAULT },
      "unmapped target",
    );
    t.ok(
      h.trace.some((e) => e.kind === "device" && e.event === "dma-fault"),
      "faults traced",
    );
    await c.removeMemory(base);
    for (const fd of [fd0, fd1]) closeFd(fd as number);
  });
}

t.test("device: bus master off refuses DMA", async (t) => {
  await c.addMemory(0x3000_0000n, 0x1000, true);
  await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, 4, Buffer.from([0x02, 0x00]));
  await program(Op.FILL, 0n, 0x3000_0000n, 16);
  t.same(await waitDone(), { status: Status.DONE | Status.ERROR, error: TestdevError.WRITE_FAULT });
  t.ok(h.trace.some((e) => e.kind === "device" && /bus master disabled/.test(String(e.detail?.reason))));
  await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, 4, Buffer.from([0x06, 0x00]));
  await c.removeMemory(0x3000_0000n);
});

t.test("device: a client that never answers DMA_READ: the request times out", async (t) => {
  await c.addMemory(0x4000_0000n, 0x1000, false);
  c.answerDma = false;
  await program(Op.COPY, 0x4000_0000n, 0x4000_0800n, 16);
  t.equal((await c.read32(0, Reg.STATUS)) & Status.BUSY, Status.BUSY, "busy while waiting");
  const r = await waitDone();
  t.same(r, { status: Status.DONE | Status.ERROR, error: TestdevError.READ_FAULT });
  t.ok(h.trace.some((e) => e.kind === "device" && /timed out/.test(String(e.detail?.reason))));
  c.answerDma = true;
  await c.removeMemory(0x4000_0000n);
});

t.test("device: a client error reply to DMA_WRITE fails the command", async (t) => {
  // Map a region the fake client does not back: it answers EFAULT.
  await c.request(
    Command.DMA_MAP,
    (await import("../../qemu/vfio-user/protocol.ts")).encodeDmaMap({
      flags: 3,
      offset: 0n,
      address: 0x5000_0000n,
      size: 0x1000n,
    }),
  );
  await program(Op.FILL, 0n, 0x5000_0000n, 16);
  t.same(await waitDone(), { status: Status.DONE | Status.ERROR, error: TestdevError.WRITE_FAULT });
  t.ok(
    h.trace.some((e) => e.kind === "device" && /failed in the client: EFAULT/.test(String(e.detail?.reason))),
  );
});

t.test("device: client disconnect mid-DMA aborts cleanly; memory and IRQ fds released", async (t) => {
  await c.addMemory(0x6000_0000n, 0x1000, false);
  await c.setMsixEventFds(0, 4);
  c.answerDma = false;
  await program(Op.COPY, 0x6000_0000n, 0x6000_0800n, 16);
  await c.close();
  await waitDisconnected(h);
  t.equal(h.server.dma.list().length, 0, "client memory unmapped");
  t.notOk(h.server.irqs.hasEventFd(0), "IRQ fds closed");
  c = await h.client();
  t.equal(await c.read32(0, Reg.STATUS), Status.DONE | Status.ERROR, "device state kept, command failed");
  await c.close();
  await waitDisconnected(h);
  await h.close();
});
