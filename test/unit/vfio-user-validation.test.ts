// Every validation rule of the server, one malformed message per test: each gets an error reply
// with the right errno (or a clean, logged disconnect), fds sent with it are closed, and the server
// keeps serving afterwards.
import { existsSync } from "node:fs";
import t, { type Test } from "tap";
import { drainEventFd, type VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { closeFd, countOpenFds, eventFd, memfdCreate } from "../../qemu/vfio-user/libc.ts";
import {
  Command,
  Errno,
  encodeDeviceInfo,
  encodeDmaMap,
  encodeDmaUnmap,
  encodeIrqInfo,
  encodeIrqSet,
  encodeMessage,
  encodeRegionAccess,
  encodeRegionInfo,
  encodeVersion,
  encodeWriteMulti,
  errnoName,
  Flags,
  Vfio,
} from "../../qemu/vfio-user/protocol.ts";
import { type Harness, startHarness, until, waitDisconnected } from "./vfio-user-helpers.ts";

let h: Harness;
let c: VfioUserClient;
let fdBaseline = 0;

t.before(async () => {
  h = await startHarness();
  // Warm up (worker threads, libuv) before taking the fd baseline.
  const warm = await h.client();
  await warm.close();
  await waitDisconnected(h);
  fdBaseline = countOpenFds();
  c = await h.client();
});

interface Raw {
  command: number;
  payload?: Uint8Array;
  flags?: number;
  error?: number;
  fds?: number[];
}

/** Sends one raw message; expects an error reply with `errno`; checks the server still answers. */
async function refused(t: Test, m: Raw, errno: number, client: VfioUserClient = c): Promise<void> {
  const id = client.takeId();
  const bytes = encodeMessage(
    { id, command: m.command, flags: m.flags ?? Flags.TYPE_COMMAND, error: m.error ?? 0 },
    m.payload,
  );
  const r = await client.exchange(bytes, m.fds ?? []);
  t.equal(r.header.flags & (Flags.TYPE_MASK | Flags.ERROR), Flags.TYPE_REPLY | Flags.ERROR, "error reply");
  t.equal(errnoName(r.header.error), errnoName(errno), "errno");
  t.equal(r.header.size, 16, "an error reply is the header alone");
  t.equal(r.header.id, id, "echoes the id");
  const info = await client.deviceInfo();
  t.equal(info.numRegions, 9, "server still serves");
}

const u32 = (...vals: number[]) => {
  const b = Buffer.alloc(vals.length * 4);
  vals.forEach((v, i) => {
    b.writeUInt32LE(v >>> 0, i * 4);
  });
  return b;
};

/**
 * `refused`, with fds made for the message (`fds`): closed by the test afterwards, and the server
 * must have closed its copies, so the count of open fds is back where it was before they were made.
 */
async function refusedClosingFds(t: Test, m: Omit<Raw, "fds">, fds: () => number[], errno: number) {
  const before = countOpenFds();
  const sent = fds();
  await refused(t, { ...m, fds: sent }, errno);
  for (const fd of sent) closeFd(fd);
  t.equal(countOpenFds(), before, `the server closed the ${sent.length} fd(s) sent`);
}

/** Drops the shared client and connects a new one (negotiated unless `negotiate: false`). */
async function reconnect(opts: Parameters<Harness["client"]>[0] = {}): Promise<VfioUserClient> {
  await c.close();
  await waitDisconnected(h);
  return h.client(opts);
}

const TRIGGER_FD = Vfio.IRQ_SET_DATA_EVENTFD | Vfio.IRQ_SET_ACTION_TRIGGER;
const TRIGGER_NONE = Vfio.IRQ_SET_DATA_NONE | Vfio.IRQ_SET_ACTION_TRIGGER;
const setIrqs = (s: Parameters<typeof encodeIrqSet>[0]): Raw => ({
  command: Command.DEVICE_SET_IRQS,
  payload: encodeIrqSet(s),
});

const deviceInfo = (argsz: number) => encodeDeviceInfo({ argsz, flags: 0, numRegions: 0, numIrqs: 0 });

// ------------------------------------------------------------------ header

for (const [what, header] of [
  ["message type other than command/reply", { flags: 0x2 }],
  ["unknown flag bits", { flags: 0x40 }],
  ["Error flag on a command", { flags: Flags.ERROR }],
  ["error field set in a command", { error: 5 }],
] as const) {
  t.test(`header: ${what}`, async (t) => {
    await refused(t, { command: Command.DEVICE_GET_INFO, ...header, payload: deviceInfo(16) }, Errno.EINVAL);
  });
}

t.test("header: unknown command", async (t) => {
  await refused(t, { command: 99 }, Errno.ENOSYS);
});

t.test("header: DMA_READ/DMA_WRITE from the client (wrong direction)", async (t) => {
  await refused(t, { command: Command.DMA_READ, payload: Buffer.alloc(16) }, Errno.EINVAL);
  await refused(t, { command: Command.DMA_WRITE, payload: Buffer.alloc(16) }, Errno.EINVAL);
});

t.test("header: known but unsupported commands", async (t) => {
  for (const cmd of [
    Command.DEVICE_GET_REGION_IO_FDS,
    Command.DEVICE_FEATURE,
    Command.MIG_DATA_READ,
    Command.DIRTY_PAGES,
  ]) {
    await refused(t, { command: cmd, payload: Buffer.alloc(16) }, Errno.ENOTSUP);
  }
});

t.test("header: fds with a command that takes none are refused and closed", async (t) => {
  await refusedClosingFds(
    t,
    { command: Command.REGION_READ, payload: encodeRegionAccess({ offset: 0n, region: 0, count: 4 }) },
    () => [eventFd()],
    Errno.EINVAL,
  );
});

t.test("header: more fds than max_msg_fds", async (t) => {
  await refusedClosingFds(
    t,
    setIrqs({ flags: TRIGGER_FD, index: 2, start: 0, count: 17 }),
    () => Array.from({ length: 17 }, () => eventFd()),
    Errno.EINVAL,
  );
});

t.test("header: a failing NO_REPLY command gets no reply", async (t) => {
  const id = c.takeId();
  c.sendRaw(encodeMessage({ id, command: 99, flags: Flags.NO_REPLY, error: 0 }));
  await c.deviceInfo();
  t.notOk(
    c.stray.some((r) => r.header.id === id),
    "no reply to it",
  );
  await until(() => h.trace.some((e) => e.kind === "refused" && e.id === id), 1000, "refusal in the trace");
});

t.test("header: an unexpected reply is ignored", async (t) => {
  c.sendRaw(
    encodeMessage(
      { id: 4242, command: Command.DMA_READ, flags: Flags.TYPE_REPLY, error: 0 },
      Buffer.alloc(20),
    ),
  );
  await c.deviceInfo();
  t.ok(h.trace.some((e) => e.kind === "note" && /unexpected reply id 4242/.test(e.text)));
});

t.test("header: commands before VERSION are refused", async (t) => {
  const fresh = await reconnect({ negotiate: false });
  const id = fresh.takeId();
  const r = await fresh.exchange(
    encodeMessage({ id, command: Command.DEVICE_GET_INFO, flags: 0, error: 0 }, deviceInfo(16)),
  );
  t.equal(r.header.error, Errno.EINVAL);
  await fresh.negotiate();
  t.equal((await fresh.deviceInfo()).numIrqs, 5);
  c = fresh;
});

t.test("header: a second VERSION is refused", async (t) => {
  await refused(t, { command: Command.VERSION, payload: encodeVersion(0, 0) }, Errno.EINVAL);
});

/** A bare header whose size field says `size`, whatever its length. */
function headerSized(command: number, size: number): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt16LE(c.takeId(), 0);
  header.writeUInt16LE(command, 2);
  header.writeUInt32LE(size, 4);
  return header;
}

t.test("framing: size below the header size drops the connection with a logged reason", async (t) => {
  c.sendRaw(headerSized(Command.DEVICE_GET_INFO, 8));
  const reason = await c.waitClosed();
  t.ok(reason, "closed");
  await waitDisconnected(h);
  t.ok(
    h.trace.some((e) => e.kind === "disconnect" && /message size 8/.test(e.reason)),
    "reason traced",
  );
  c = await h.client();
  t.equal((await c.deviceInfo()).numRegions, 9, "next client served");
});

t.test("framing: size above the maximum drops the connection", async (t) => {
  c.sendRaw(headerSized(Command.REGION_WRITE, 0xfffffff0));
  await c.waitClosed();
  await waitDisconnected(h);
  t.ok(h.trace.some((e) => e.kind === "disconnect" && /outside 16\.\./.test(e.reason)));
  c = await h.client();
});

// ------------------------------------------------------------------ VERSION

t.test("VERSION: another major version is refused and the connection closed", async (t) => {
  const fresh = await reconnect({ negotiate: false });
  const id = fresh.takeId();
  const r = await fresh.exchange(
    encodeMessage({ id, command: Command.VERSION, flags: 0, error: 0 }, encodeVersion(1, 0)),
  );
  t.equal(r.header.error, Errno.ENOTSUP);
  await fresh.waitClosed();
  await waitDisconnected(h);
  t.ok(
    h.warnings.some((w) => /protocol major 1/.test(w)),
    "reason logged",
  );
  c = await h.client();
});

t.test("VERSION: malformed version data", async (t) => {
  const fresh = await reconnect({ negotiate: false });
  for (const payload of [
    Buffer.from([0, 0]),
    Buffer.concat([encodeVersion(0, 0), Buffer.from("{not json}\0")]),
    Buffer.concat([encodeVersion(0, 0), Buffer.from('{"capabilities":{"max_msg_fds":"x"}}')]),
  ]) {
    const id = fresh.takeId();
    const r = await fresh.exchange(
      encodeMessage({ id, command: Command.VERSION, flags: 0, error: 0 }, payload),
    );
    t.equal(r.header.error, Errno.EINVAL);
  }
  c = fresh;
  await c.negotiate();
});

t.test(
  "VERSION: the reply never exceeds the request (QEMU reads it into the request's buffer)",
  async (t) => {
    const fresh = await reconnect({ negotiate: false });
    const json = JSON.stringify({ capabilities: { max_msg_fds: 1, pgsizes: 4096, max_dma_maps: 9 } });
    const id = fresh.takeId();
    const req = encodeMessage(
      { id, command: Command.VERSION, flags: 0, error: 0 },
      encodeVersion(0, 0, json),
    );
    const r = await fresh.exchange(req);
    t.equal(r.header.flags & Flags.ERROR, 0);
    t.ok(r.header.size <= req.length, `${r.header.size} <= ${req.length}`);
    const text = r.payload.subarray(4, r.payload.length - 1).toString();
    const caps = JSON.parse(text).capabilities;
    for (const k of Object.keys(caps)) t.ok(k in JSON.parse(json).capabilities, `${k} was proposed`);
    c = fresh;
  },
);

// ------------------------------------------------------------------ DMA_MAP / DMA_UNMAP

const map = (
  over: Partial<{ flags: number; offset: bigint; address: bigint; size: bigint; argsz: number }> = {},
) => encodeDmaMap({ flags: 3, offset: 0n, address: 0x100000n, size: 0x1000n, ...over });
const dmaMap = (over: Parameters<typeof map>[0] = {}): Raw => ({
  command: Command.DMA_MAP,
  payload: map(over),
});

t.test("DMA_MAP: payload not 32 bytes", async (t) => {
  await refused(t, { command: Command.DMA_MAP, payload: map().subarray(0, 24) }, Errno.EINVAL);
});
t.test("DMA_MAP: argsz below 32", async (t) => {
  await refused(t, dmaMap({ argsz: 16 }), Errno.EINVAL);
});
t.test("DMA_MAP: unknown flags", async (t) => {
  await refused(t, dmaMap({ flags: 0x7 }), Errno.EINVAL);
});
t.test("DMA_MAP: size 0", async (t) => {
  await refused(t, dmaMap({ size: 0n }), Errno.EINVAL);
});
t.test("DMA_MAP: address not 4 KiB aligned", async (t) => {
  await refused(t, dmaMap({ address: 0x100800n }), Errno.EINVAL);
});
t.test("DMA_MAP: region wraps past 2^64", async (t) => {
  await refused(t, dmaMap({ address: 0xffff_ffff_ffff_f000n, size: 0x2000n }), Errno.EINVAL);
});
t.test("DMA_MAP: offset without an fd", async (t) => {
  await refused(t, dmaMap({ offset: 0x1000n }), Errno.EINVAL);
});
t.test("DMA_MAP: overlapping an existing region", async (t) => {
  await c.addMemory(0x200000n, 0x2000, false);
  await refused(t, dmaMap({ address: 0x201000n, size: 0x2000n }), Errno.EEXIST);
  await c.removeMemory(0x200000n);
});
t.test("DMA_MAP: two fds", async (t) => {
  const twoFiles = () => [memfdCreate("a", 0x1000), memfdCreate("b", 0x1000)];
  await refusedClosingFds(t, dmaMap(), twoFiles, Errno.EINVAL);
});
t.test("DMA_MAP: an fd that is not a file (eventfd)", async (t) => {
  await refusedClosingFds(t, dmaMap(), () => [eventFd()], Errno.EINVAL);
});
t.test("DMA_MAP: offset+size beyond the file (would SIGBUS)", async (t) => {
  const small = () => [memfdCreate("small", 0x1000)];
  await refusedClosingFds(t, dmaMap({ offset: 0x1000n }), small, Errno.EINVAL);
  await refusedClosingFds(t, dmaMap({ size: 0x2000n }), small, Errno.EINVAL);
});
t.test("DMA_MAP: fd offset not page aligned", async (t) => {
  const unaligned = () => [memfdCreate("unaligned", 0x3000)];
  await refusedClosingFds(t, dmaMap({ offset: 0x10n }), unaligned, Errno.EINVAL);
});
const unmap = (flags: number, address: bigint, size: bigint): Raw => ({
  command: Command.DMA_UNMAP,
  payload: encodeDmaUnmap({ flags, address, size }),
});

t.test("DMA_UNMAP: no region at that address", async (t) => {
  await refused(t, unmap(0, 0x900000n, 0x1000n), Errno.ENOENT);
});
t.test("DMA_UNMAP: size differs from the mapping", async (t) => {
  await c.addMemory(0x300000n, 0x2000, false);
  await refused(t, unmap(0, 0x300000n, 0x1000n), Errno.ENOENT);
  await c.removeMemory(0x300000n);
});
t.test("DMA_UNMAP: ALL with an address", async (t) => {
  await refused(t, unmap(Vfio.DMA_UNMAP_FLAG_ALL, 0x1000n, 0n), Errno.EINVAL);
});
t.test("DMA_UNMAP: dirty bitmap / vaddr flags", async (t) => {
  await refused(t, unmap(1, 0n, 0n), Errno.ENOTSUP);
  await refused(t, unmap(4, 0n, 0n), Errno.ENOTSUP);
  await refused(t, unmap(8, 0n, 0n), Errno.EINVAL);
});
t.test("DMA_UNMAP: payload not 24 bytes", async (t) => {
  await refused(t, { command: Command.DMA_UNMAP, payload: Buffer.alloc(32) }, Errno.EINVAL);
});

// ------------------------------------------------------------------ info queries

const regionInfo = (argsz: number, index: number): Raw => ({
  command: Command.DEVICE_GET_REGION_INFO,
  payload: encodeRegionInfo({ argsz, flags: 0, index, capOffset: 0, size: 0n, offset: 0n }),
});
const irqInfo = (argsz: number, index: number): Raw => ({
  command: Command.DEVICE_GET_IRQ_INFO,
  payload: encodeIrqInfo({ argsz, flags: 0, index, count: 0 }),
});

t.test("DEVICE_GET_INFO: argsz too small", async (t) => {
  await refused(t, { command: Command.DEVICE_GET_INFO, payload: deviceInfo(8) }, Errno.EINVAL);
});
t.test("DEVICE_GET_INFO: payload not 16 bytes", async (t) => {
  await refused(t, { command: Command.DEVICE_GET_INFO, payload: Buffer.alloc(8) }, Errno.EINVAL);
});
t.test("DEVICE_GET_REGION_INFO: index out of range", async (t) => {
  await refused(t, regionInfo(32, 9), Errno.EINVAL);
});
t.test("DEVICE_GET_REGION_INFO: argsz too small", async (t) => {
  await refused(t, regionInfo(16, 0), Errno.EINVAL);
});
t.test("DEVICE_GET_IRQ_INFO: index out of range", async (t) => {
  await refused(t, irqInfo(16, 5), Errno.EINVAL);
});
t.test("DEVICE_GET_IRQ_INFO: argsz too small", async (t) => {
  await refused(t, irqInfo(4, 2), Errno.EINVAL);
});

// ------------------------------------------------------------------ SET_IRQS

t.test("SET_IRQS: argsz differs from the payload", async (t) => {
  await refused(t, setIrqs({ argsz: 40, flags: TRIGGER_FD, index: 2, start: 0, count: 1 }), Errno.EINVAL);
});
t.test("SET_IRQS: two DATA flags", async (t) => {
  await refused(
    t,
    setIrqs({ flags: 0x3 | Vfio.IRQ_SET_ACTION_TRIGGER, index: 2, start: 0, count: 0 }),
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: no ACTION flag", async (t) => {
  await refused(t, setIrqs({ flags: Vfio.IRQ_SET_DATA_NONE, index: 2, start: 0, count: 1 }), Errno.EINVAL);
});
t.test("SET_IRQS: unknown flag bits", async (t) => {
  await refused(t, setIrqs({ flags: 0x100 | TRIGGER_FD, index: 2, start: 0, count: 1 }), Errno.EINVAL);
});
t.test("SET_IRQS: MASK is not supported (not MASKABLE)", async (t) => {
  await refused(
    t,
    setIrqs({ flags: Vfio.IRQ_SET_DATA_NONE | Vfio.IRQ_SET_ACTION_MASK, index: 2, start: 0, count: 1 }),
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: IRQ index out of range", async (t) => {
  await refused(t, setIrqs({ flags: TRIGGER_NONE, index: 5, start: 0, count: 0 }), Errno.EINVAL);
});
t.test("SET_IRQS: vectors beyond the table", async (t) => {
  await refused(t, setIrqs({ flags: TRIGGER_NONE, index: 2, start: 2, count: 3 }), Errno.EINVAL);
  await refused(t, setIrqs({ flags: TRIGGER_NONE, index: 2, start: 1, count: 0xffffffff }), Errno.EINVAL);
  await refused(t, setIrqs({ flags: TRIGGER_NONE, index: 0, start: 0, count: 1 }), Errno.EINVAL);
});
t.test("SET_IRQS: fd count differs from count; fds closed", async (t) => {
  await refusedClosingFds(
    t,
    setIrqs({ flags: TRIGGER_FD, index: 2, start: 0, count: 3 }),
    () => [eventFd(), eventFd()],
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: an fd that is not an eventfd", async (t) => {
  await refusedClosingFds(
    t,
    setIrqs({ flags: TRIGGER_FD, index: 2, start: 0, count: 1 }),
    () => [memfdCreate("not-eventfd", 4096)],
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: fds without DATA_EVENTFD", async (t) => {
  await refusedClosingFds(
    t,
    setIrqs({ flags: TRIGGER_NONE, index: 2, start: 0, count: 1 }),
    () => [eventFd()],
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: BOOL data length differs from count", async (t) => {
  await refused(
    t,
    setIrqs({
      flags: Vfio.IRQ_SET_DATA_BOOL | Vfio.IRQ_SET_ACTION_TRIGGER,
      index: 2,
      start: 0,
      count: 2,
      data: Buffer.from([1]),
    }),
    Errno.EINVAL,
  );
});
t.test("SET_IRQS: count 0 needs start 0 and DATA_NONE", async (t) => {
  await refused(t, setIrqs({ flags: TRIGGER_NONE, index: 2, start: 1, count: 0 }), Errno.EINVAL);
});
t.test("SET_IRQS: the well-formed cases work (assign, trigger by BOOL, unassign, disable all)", async (t) => {
  const fds = await c.setMsixEventFds(0, 4);
  await c.setIrqs({
    flags: Vfio.IRQ_SET_DATA_BOOL | Vfio.IRQ_SET_ACTION_TRIGGER,
    index: 2,
    start: 0,
    count: 2,
    data: Buffer.from([0, 1]),
  });
  t.equal(drainEventFd(fds[0] as number), 0);
  t.equal(drainEventFd(fds[1] as number), 1, "vector 1 fired");
  // Eventfd flag without fds: unassign vectors 1..2 (QEMU does this).
  const r = await c.setIrqs({ flags: TRIGGER_FD, index: 2, start: 1, count: 2 });
  t.equal(r.header.flags & Flags.ERROR, 0);
  t.notOk(h.server.irqs.hasEventFd(1));
  t.ok(h.server.irqs.hasEventFd(0));
  await c.setIrqs({ flags: TRIGGER_NONE, index: 2, start: 0, count: 0 });
  t.notOk(h.server.irqs.hasEventFd(0), "disable all");
  // Disabling an index without vectors (INTx) is accepted, as QEMU does at reset.
  const intx = await c.setIrqs({ flags: TRIGGER_NONE, index: 0, start: 0, count: 0 });
  t.equal(intx.header.flags & Flags.ERROR, 0);
  for (const fd of fds) closeFd(fd);
});

// ------------------------------------------------------------------ region access

const rd = (region: number, offset: bigint, count: number) => encodeRegionAccess({ offset, region, count });

t.test("REGION_READ: region index out of range", async (t) => {
  await refused(t, { command: Command.REGION_READ, payload: rd(9, 0n, 4) }, Errno.EINVAL);
});
t.test("REGION_READ: unimplemented region (upper half of a 64-bit BAR, ROM, VGA)", async (t) => {
  for (const r of [1, 3, 6, 8])
    await refused(t, { command: Command.REGION_READ, payload: rd(r, 0n, 4) }, Errno.EINVAL);
});
t.test("REGION_READ: count 0", async (t) => {
  await refused(t, { command: Command.REGION_READ, payload: rd(0, 0n, 0) }, Errno.EINVAL);
});
t.test("REGION_READ: beyond the end of the region", async (t) => {
  await refused(t, { command: Command.REGION_READ, payload: rd(0, 0xffdn, 4) }, Errno.EINVAL);
  await refused(t, { command: Command.REGION_READ, payload: rd(7, 4096n, 1) }, Errno.EINVAL);
  await refused(t, { command: Command.REGION_READ, payload: rd(0, 1n << 63n, 4) }, Errno.EINVAL);
  await refused(t, { command: Command.REGION_READ, payload: rd(0, 0xffff_ffff_ffff_fffen, 4) }, Errno.EINVAL);
});
t.test("REGION_READ: count above max_data_xfer_size", async (t) => {
  await refused(t, { command: Command.REGION_READ, payload: rd(0, 0n, (1 << 20) + 1) }, Errno.EINVAL);
});
t.test("REGION_READ: payload with data bytes", async (t) => {
  await refused(
    t,
    { command: Command.REGION_READ, payload: Buffer.concat([rd(0, 0n, 4), Buffer.alloc(4)]) },
    Errno.EINVAL,
  );
});
t.test("REGION_READ: payload shorter than 16 bytes", async (t) => {
  await refused(t, { command: Command.REGION_READ, payload: Buffer.alloc(12) }, Errno.EINVAL);
});
t.test("REGION_WRITE: count differs from the data", async (t) => {
  await refused(
    t,
    {
      command: Command.REGION_WRITE,
      payload: encodeRegionAccess({ offset: 4n, region: 0, count: 8, data: Buffer.alloc(4) }),
    },
    Errno.EINVAL,
  );
  await refused(
    t,
    {
      command: Command.REGION_WRITE,
      payload: encodeRegionAccess({ offset: 4n, region: 0, count: 2, data: Buffer.alloc(4) }),
    },
    Errno.EINVAL,
  );
});
t.test("REGION_WRITE: beyond the end of the region", async (t) => {
  await refused(
    t,
    {
      command: Command.REGION_WRITE,
      payload: encodeRegionAccess({ offset: 0x1000n, region: 2, count: 4, data: Buffer.alloc(4) }),
    },
    Errno.EINVAL,
  );
});
t.test("REGION_WRITE_MULTI: one bad write refuses the whole message, none applied", async (t) => {
  c = await reconnect(); // QEMU's capabilities: write_multiple true
  await c.write32(0, 4, 0x11111111);
  const payload = encodeWriteMulti([
    { offset: 4n, region: 0, data: u32(0x22222222) },
    { offset: 0x2000n, region: 0, data: u32(1) },
  ]);
  await refused(t, { command: Command.REGION_WRITE_MULTI, payload }, Errno.EINVAL);
  t.equal(await c.read32(0, 4), 0x11111111, "first write not applied");
  const ok = encodeWriteMulti([{ offset: 4n, region: 0, data: u32(0x33333333) }]);
  const r = await c.request(Command.REGION_WRITE_MULTI, ok);
  t.equal(r.payload.readBigUInt64LE(0), 1n, "wr_cnt echoed");
  t.equal(await c.read32(0, 4), 0x33333333);
});
t.test("REGION_WRITE_MULTI: refused unless write_multiple was negotiated", async (t) => {
  c = await reconnect({ caps: { capabilities: { max_msg_fds: 16 } } });
  await refused(
    t,
    {
      command: Command.REGION_WRITE_MULTI,
      payload: encodeWriteMulti([{ offset: 4n, region: 0, data: u32(1) }]),
    },
    Errno.EINVAL,
  );
});
t.test("DEVICE_RESET: with a payload", async (t) => {
  await refused(t, { command: Command.DEVICE_RESET, payload: Buffer.alloc(4) }, Errno.EINVAL);
});

t.test("no fd leaked over the whole run; the socket is removed on close", async (t) => {
  await c.close();
  await waitDisconnected(h);
  t.equal(countOpenFds(), fdBaseline, "fds back to the baseline");
  t.ok(h.server.stats.refused > 60, `${h.server.stats.refused} refusals`);
  // Cleanup here, not in t.after: the workers keep the process (and so the root test) alive.
  await h.close();
  t.notOk(existsSync(h.socket), "socket file removed");
});
