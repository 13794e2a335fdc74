// Fuzz: thousands of random and mutated messages (with random fds) at a live server process. It
// must not crash, must not leak fds, and must serve a well-formed client afterwards. It sends until
// the server has handled MIN_MESSAGES of them, however long a loaded machine takes (HIL_FUZZ_MS
// keeps it going at least that long); nothing is judged by the clock. The seed is printed
// (HIL_FUZZ_SEED=<n> repeats a run).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startServerProcess } from "../../qemu/device-server/process.ts";
import { CMD_IRQ, Op, Reg, Status } from "../../qemu/testdev/device.ts";
import { drainEventFd, QEMU_CAPS, VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { closeFd, connectUnix, eventFd, memfdCreate, sendNonBlocking } from "../../qemu/vfio-user/libc.ts";
import {
  Command,
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
  Flags,
} from "../../qemu/vfio-user/protocol.ts";
import { prng as mulberry32 } from "../fuzz/mutate.ts";

const seed = Number(process.env.HIL_FUZZ_SEED ?? Date.now() % 1_000_000);
const MIN_MS = Number(process.env.HIL_FUZZ_MS ?? 0);
const MIN_MESSAGES = 3000;
/** a server that keeps refusing to read would otherwise keep the test sending for ever */
const MAX_CONNECTIONS = 5000;

/** The fuzz campaign's seedable mulberry32 (test/fuzz/mutate.ts), with picks and odds. */
function prng(s: number) {
  const { next, int } = mulberry32(s);
  return {
    next,
    int,
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    chance: (p: number) => next() < p,
  };
}

const rnd = prng(seed);
const INTERESTING32 = [
  0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 31, 32, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0x7fffffff, 0x80000000,
  0xfffffffe, 0xffffffff,
];
const INTERESTING64 = [
  0n,
  1n,
  0xfffn,
  0x1000n,
  0x100000n,
  0xfffff000n,
  1n << 32n,
  1n << 63n,
  0xffff_ffff_ffff_f000n,
  0xffff_ffff_ffff_ffffn,
];

function r32(): number {
  return rnd.chance(0.5) ? rnd.pick(INTERESTING32) : rnd.int(0x1_0000_0000);
}
function r64(): bigint {
  return rnd.chance(0.6)
    ? rnd.pick(INTERESTING64)
    : (BigInt(rnd.int(0x1_0000_0000)) << 12n) & 0xffff_ffff_ffffn;
}
function rbytes(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = rnd.int(256);
  return b;
}

/** A plausible payload for a command (valid or nearly valid). */
function payloadFor(cmd: number): Buffer {
  switch (cmd) {
    case Command.VERSION:
      return encodeVersion(
        rnd.chance(0.8) ? 0 : rnd.int(3),
        rnd.int(3),
        rnd.chance(0.5) ? JSON.stringify(QEMU_CAPS) : rnd.pick(["{}", "", '{"capabilities":[]}', "x"]),
      );
    case Command.DMA_MAP:
      return encodeDmaMap({
        flags: rnd.chance(0.8) ? 3 : r32(),
        offset: rnd.chance(0.7) ? 0n : r64(),
        address: r64(),
        size: rnd.chance(0.7) ? 0x1000n * BigInt(1 + rnd.int(16)) : r64(),
        argsz: rnd.chance(0.9) ? 32 : r32(),
      });
    case Command.DMA_UNMAP:
      return encodeDmaUnmap({ flags: rnd.chance(0.8) ? 0 : r32(), address: r64(), size: r64() });
    case Command.DEVICE_GET_INFO:
      return encodeDeviceInfo({ argsz: rnd.chance(0.8) ? 16 : r32(), flags: 0, numRegions: 0, numIrqs: 0 });
    case Command.DEVICE_GET_REGION_INFO:
      return encodeRegionInfo({
        argsz: rnd.chance(0.8) ? 32 : r32(),
        flags: 0,
        index: rnd.chance(0.7) ? rnd.int(10) : r32(),
        capOffset: 0,
        size: 0n,
        offset: 0n,
      });
    case Command.DEVICE_GET_IRQ_INFO:
      return encodeIrqInfo({ argsz: 16, flags: 0, index: rnd.chance(0.7) ? rnd.int(6) : r32(), count: 0 });
    case Command.DEVICE_SET_IRQS: {
      const count = rnd.chance(0.7) ? rnd.int(5) : r32();
      const data = rnd.chance(0.3) ? rbytes(Math.min(count, 64)) : undefined;
      return encodeIrqSet({
        flags: rnd.chance(0.6) ? rnd.pick([0x24, 0x21, 0x22, 0x14, 0x09]) : r32(),
        index: rnd.chance(0.7) ? 2 : rnd.int(8),
        start: rnd.chance(0.7) ? rnd.int(5) : r32(),
        count,
        data,
      });
    }
    case Command.REGION_READ:
      return encodeRegionAccess({
        offset: rnd.chance(0.7) ? BigInt(rnd.int(0x1100)) : r64(),
        region: rnd.chance(0.8) ? rnd.pick([0, 2, 7]) : r32(),
        count: rnd.chance(0.8) ? rnd.pick([1, 2, 4, 8, 3, 64]) : r32(),
      });
    case Command.REGION_WRITE: {
      const n = rnd.pick([1, 2, 4, 8, 3, 16]);
      const count = rnd.chance(0.9) ? n : r32();
      return encodeRegionAccess({
        offset: rnd.chance(0.7) ? BigInt(rnd.int(0x1100)) : r64(),
        region: rnd.chance(0.8) ? rnd.pick([0, 2, 7]) : r32(),
        count,
        data: rbytes(n),
      });
    }
    case Command.REGION_WRITE_MULTI: {
      const n = 1 + rnd.int(4);
      const p = encodeWriteMulti(
        Array.from({ length: n }, () => ({
          offset: BigInt(rnd.int(0x1100)),
          region: rnd.pick([0, 2, 7, 9]),
          data: rbytes(1 + rnd.int(8)),
        })),
      );
      if (rnd.chance(0.2)) p.writeBigUInt64LE(r64(), 0);
      return p;
    }
    default:
      return rbytes(rnd.int(64));
  }
}

const COMMANDS = Object.values(Command);

function mutate(msg: Buffer): Buffer {
  const m = Buffer.from(msg);
  const n = 1 + rnd.int(4);
  for (let i = 0; i < n && m.length > 0; i++) {
    switch (rnd.int(6)) {
      case 0: {
        const at = rnd.int(m.length);
        m[at] = (m[at] as number) ^ (1 << rnd.int(8));
        break;
      }
      case 1:
        m[rnd.int(m.length)] = rnd.int(256);
        break;
      case 2:
        if (m.length >= 16) m.writeUInt32LE(rnd.pick([0, 1, 0x10, 0x20, 0x21, 0x30, 0xff]), 8);
        break;
      case 3:
        if (m.length >= 16) m.writeUInt32LE(r32(), 12);
        break;
      case 4:
        if (m.length >= 20) m.writeUInt32LE(r32(), 16 + 4 * rnd.int(Math.floor((m.length - 16) / 4)));
        break;
      default:
        if (m.length >= 4) m.writeUInt16LE(rnd.pick(COMMANDS), 2);
    }
  }
  return m;
}

/** One message: valid, mutated, resized (size field kept consistent), or raw garbage. */
function generate(id: number): { bytes: Buffer; framingSafe: boolean } {
  const cmd = rnd.chance(0.95) ? rnd.pick(COMMANDS) : r32() & 0xffff;
  const flags = rnd.chance(0.85)
    ? 0
    : rnd.pick([Flags.NO_REPLY, Flags.TYPE_REPLY, Flags.ERROR, 0x40, 0x2, r32()]);
  let bytes = encodeMessage(
    { id, command: cmd, flags, error: rnd.chance(0.95) ? 0 : r32() },
    payloadFor(cmd),
  );
  const kind = rnd.int(10);
  if (kind < 3) bytes = mutate(bytes);
  else if (kind < 5) {
    const len = Math.max(16, bytes.length + rnd.int(41) - 20);
    const b = Buffer.alloc(len);
    bytes.copy(b, 0, 0, Math.min(len, bytes.length));
    b.writeUInt32LE(len, 4);
    bytes = b;
  } else if (kind === 5) {
    bytes = rbytes(16 + rnd.int(48));
    bytes.writeUInt32LE(bytes.length, 4);
  }
  const size = bytes.length >= 8 ? bytes.readUInt32LE(4) : 0;
  return { bytes, framingSafe: size === bytes.length };
}

function countFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Polls until `cond` holds; the limit only keeps a broken server from hanging the test, the
 * assertion after it says what was wrong.
 */
async function settled(cond: () => boolean, limitMs = 30_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
}

/** A raw connection: koffi connect + sendmsg for fds; Node reads (and discards) what comes back. */
function rawConnection(path: string) {
  const fd = connectUnix(path);
  const sock = new Socket({ fd, readable: true, writable: false });
  let received = 0;
  let closed = false;
  sock.on("data", (d: Buffer) => {
    received += d.length;
  });
  sock.on("error", () => {});
  sock.on("close", () => {
    closed = true;
  });
  return {
    send(bytes: Buffer, fds: number[]): boolean {
      if (closed) return false;
      try {
        let off = 0;
        let first = true;
        let spins = 0;
        while (off < bytes.length) {
          const n = sendNonBlocking(fd, bytes.subarray(off), first ? fds : []);
          if (n === 0) {
            if (++spins > 2000) return false;
            continue;
          }
          first = false;
          off += n;
        }
        return true;
      } catch {
        closed = true;
        return false;
      }
    },
    get closed() {
      return closed;
    },
    get received() {
      return received;
    },
    async close() {
      await new Promise<void>((r) => {
        if (closed) return r();
        sock.once("close", () => r());
        sock.destroy();
      });
    },
  };
}

function randomFds(): number[] {
  if (!rnd.chance(0.15)) return [];
  const n = rnd.chance(0.8) ? 1 + rnd.int(4) : 1 + rnd.int(24);
  return Array.from({ length: n }, () =>
    rnd.chance(0.6) ? eventFd() : memfdCreate("fuzz", rnd.pick([0x1000, 0x4000, 0x10000])),
  );
}

t.test(`fuzz the server process (seed ${seed})`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-fuzz-"));
  const socket = join(dir, "fuzz.sock");
  const traceFile = join(dir, "trace.jsonl");
  const server = await startServerProcess({ socketPath: socket, dmaTimeoutMs: 100, traceFile });
  t.teardown(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const traced = (kind: string) =>
    (readFileSync(traceFile, "utf8").match(new RegExp(`"kind":"${kind}"`, "g")) ?? []).length;
  // Warm up, then take the fd baseline with no client connected (once the server saw it go).
  const warm = VfioUserClient.connect(socket);
  await warm.negotiate();
  await warm.close();
  await settled(() => traced("disconnect") >= 1);
  t.equal(traced("disconnect"), 1, "the server saw the warm-up client go");
  const baseline = countFds(server.pid);

  const started = Date.now();
  let sent = 0;
  let sessions = 0;
  let fdsSent = 0;
  let ids = 1;
  // until the server has handled MIN_MESSAGES (a busy machine reads fewer of what a connection
  // sent before it closed), and for at least MIN_MS
  const enough = () => traced("recv") >= MIN_MESSAGES && Date.now() - started >= MIN_MS;
  while (!enough() && sessions < MAX_CONNECTIONS) {
    const conn = rawConnection(socket);
    sessions++;
    if (rnd.chance(0.8))
      conn.send(
        encodeMessage(
          { id: ids++, command: Command.VERSION, flags: 0, error: 0 },
          encodeVersion(0, 0, JSON.stringify(QEMU_CAPS)),
        ),
        [],
      );
    if (rnd.chance(0.5))
      conn.send(
        encodeMessage(
          { id: ids++, command: Command.REGION_WRITE, flags: 0, error: 0 },
          encodeRegionAccess({ offset: 4n, region: 7, count: 2, data: Buffer.from([6, 0]) }),
        ),
        [],
      );
    const burst = 50 + rnd.int(400);
    for (let i = 0; i < burst && !conn.closed; i++) {
      const { bytes } = generate(ids++ & 0xffff);
      const fds = randomFds();
      if (conn.send(bytes, fds)) {
        sent++;
        fdsSent += fds.length;
      }
      for (const fd of fds) closeFd(fd);
      if (i % 64 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 5));
    await conn.close();
    t.equal(server.exit, undefined, "server alive");
    if (server.exit) break;
  }
  t.comment(
    `seed ${seed}: ${sent} messages, ${fdsSent} fds, ${sessions} connections in ${Date.now() - started} ms`,
  );
  t.ok(sent >= MIN_MESSAGES, `at least ${MIN_MESSAGES} messages sent`);
  // the last connection's close reaches the server in its own time
  await settled(() => traced("disconnect") >= sessions + 1);
  const kinds = new Map<string, number>();
  for (const line of readFileSync(traceFile, "utf8").split("\n")) {
    const m = /"kind":"(\w+)"/.exec(line);
    if (m) kinds.set(m[1] as string, (kinds.get(m[1] as string) ?? 0) + 1);
  }
  t.comment(
    `server: ${kinds.get("recv")} messages handled, ${kinds.get("refused")} refused, ${kinds.get("disconnect")} disconnects`,
  );
  t.ok(
    (kinds.get("recv") ?? 0) >= MIN_MESSAGES,
    `the server handled thousands of them (within ${MAX_CONNECTIONS} connections)`,
  );
  t.equal(kinds.get("disconnect"), sessions + 1, "it saw every connection go");
  t.equal(server.exit, undefined, "the server never crashed");

  // A well-formed client is served: probe, registers, DMA both ways, an interrupt.
  const c = VfioUserClient.connect(socket);
  await c.negotiate();
  t.equal((await c.deviceInfo()).numRegions, 9);
  t.equal((await c.regionRead(7, 0, 4)).readUInt32LE(0), 0x7e571ded, "config IDs");
  await c.reset();
  await c.regionWrite(7, 4, Buffer.from([0x06, 0x00]));
  await c.write32(0, Reg.SCRATCH, 0xc0ffee);
  t.equal(await c.read32(0, Reg.SCRATCH), 0xc0ffee);
  const shared = await c.addMemory(0x100000n, 0x10000, true);
  const priv = await c.addMemory(0x200000n, 0x10000, false);
  const [efd] = await c.setMsixEventFds(0, 1);
  for (const [dst, mem] of [
    [0x100000n, shared],
    [0x200000n, priv],
  ] as const) {
    await c.write32(0, Reg.DST_LO, Number(dst));
    await c.write32(0, Reg.DST_HI, 0);
    await c.write32(0, Reg.LEN, 256);
    await c.write32(0, Reg.PATTERN, 0x5a5a5a5a);
    await c.write32(0, Reg.IRQ_VECTOR, 0);
    await c.write32(0, Reg.CMD, Op.FILL | CMD_IRQ);
    let st = 0;
    const end = Date.now() + 30_000;
    while (Date.now() < end) {
      st = await c.read32(0, Reg.STATUS);
      if (st & Status.DONE) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    t.equal(st, Status.DONE, "fill done");
    t.equal(mem[255], 0x5a);
  }
  t.ok(drainEventFd(efd as number) >= 1, "interrupt delivered");
  closeFd(efd as number);
  await c.close();
  await settled(() => countFds(server.pid) === baseline);
  t.equal(countFds(server.pid), baseline, `no fd leaked (${baseline} open, as before the fuzz)`);
  const end = await server.stop();
  t.same(end, { code: 0, signal: null }, "clean exit on SIGTERM");
  t.same(readdirSync(dir), ["trace.jsonl"], "socket removed");
});
