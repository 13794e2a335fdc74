/**
 * MMIO round trips through the device-server process, without a guest: a client that stands in
 * for QEMU's vfio-user-pci sends REGION_READ (a BAR0 register read) and REGION_WRITE (a BAR0
 * register write, waiting for the reply) over the UNIX socket and times each round trip with
 * blocking reads, so the figures are the server's share of a guest MMIO access (socket, receive
 * worker, decoding, device handler, trace, reply). The command line: vfio-user-mmio.ts; `npm run
 * bench` prints the read figure too.
 */
import { mkdtempSync, readdirSync, readFileSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess } from "../../qemu/device-server/process.ts";
import { Reg as ErdmaReg } from "../../qemu/erdma/hw.ts";
import { Reg as TestdevReg } from "../../qemu/testdev/device.ts";
import { QEMU_CAPS } from "../../qemu/vfio-user/client.ts";
import { closeFd, connectUnix } from "../../qemu/vfio-user/libc.ts";
import {
  Command,
  decodeHeader,
  encodeMessage,
  encodeRegionAccess,
  encodeVersion,
  Flags,
  HEADER_SIZE,
} from "../../qemu/vfio-user/protocol.ts";

export const DEVICES = {
  "hil-testdev": { read: TestdevReg.ID, write: TestdevReg.SCRATCH },
  // a read-only identity register and the command queue's depth (stored, acted on only at init)
  erdma: { read: ErdmaReg.VERSION, write: ErdmaReg.CMDQ_DEPTH },
};
export type DeviceName = keyof typeof DEVICES;

export interface MmioFigures {
  device: DeviceName;
  trace: boolean;
  count: number;
  /** µs per REGION_READ round trip: median, mean, 90th percentile */
  read: { median: number; mean: number; p90: number };
  /** µs per REGION_WRITE round trip (reply awaited) */
  write: { median: number; mean: number; p90: number };
  /**
   * The server process's CPU time (all its threads, /proc schedstat) per round trip, µs, over the
   * measured reads and writes; steadier than the round trips on a loaded machine. Absent with --connect.
   */
  serverCpuUs?: number;
}

/** One blocking vfio-user connection: send a command, read its whole reply. */
class BlockingClient {
  private nextId = 1;
  private readonly header = Buffer.alloc(HEADER_SIZE);
  private body = Buffer.alloc(4096);

  constructor(private readonly fd: number) {}

  call(command: number, payload: Uint8Array): Buffer {
    const id = this.nextId;
    this.nextId = (this.nextId + 1) & 0xffff;
    const msg = encodeMessage({ id, command, flags: Flags.TYPE_COMMAND, error: 0 }, payload);
    let sent = 0;
    while (sent < msg.length) sent += writeSync(this.fd, msg, sent, msg.length - sent);
    this.readExactly(this.header, HEADER_SIZE);
    const h = decodeHeader(this.header);
    const rest = h.size - HEADER_SIZE;
    if (rest > this.body.length) this.body = Buffer.alloc(rest);
    this.readExactly(this.body, rest);
    if (h.id !== id || h.command !== command || (h.flags & Flags.TYPE_MASK) !== Flags.TYPE_REPLY)
      throw new Error(`unexpected message id ${h.id} command ${h.command} flags 0x${h.flags.toString(16)}`);
    if (h.flags & Flags.ERROR) throw new Error(`command ${command} refused: errno ${h.error}`);
    return this.body.subarray(0, rest);
  }

  private readExactly(buf: Buffer, len: number): void {
    let got = 0;
    while (got < len) {
      const n = readSync(this.fd, buf, got, len - got, null);
      if (n === 0) throw new Error("server closed the connection");
      got += n;
    }
  }
}

function summary(us: Float64Array): { median: number; mean: number; p90: number } {
  const sorted = Float64Array.from(us).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { median: at(0.5), mean: us.reduce((a, b) => a + b, 0) / us.length, p90: at(0.9) };
}

function timeCalls(count: number, call: () => void): Float64Array {
  const us = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    call();
    us[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  return us;
}

/** ns on a CPU of every thread of process `pid` so far (the first field of each schedstat). */
function cpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns;
}

/** Times `count` reads and writes on a connected socket, after `warmup` of each. */
export function roundTrips(
  fd: number,
  device: DeviceName,
  count: number,
  warmup: number,
  serverPid?: number,
) {
  const client = new BlockingClient(fd);
  client.call(Command.VERSION, encodeVersion(0, 0, JSON.stringify(QEMU_CAPS)));
  const regs = DEVICES[device];
  const read = encodeRegionAccess({ offset: BigInt(regs.read), region: 0, count: 4 });
  const value = Buffer.from([16, 0, 0, 0]);
  const writeMsg = encodeRegionAccess({ offset: BigInt(regs.write), region: 0, count: 4, data: value });
  timeCalls(warmup, () => client.call(Command.REGION_READ, read));
  timeCalls(warmup, () => client.call(Command.REGION_WRITE, writeMsg));
  const cpu0 = serverPid === undefined ? 0 : cpuNs(serverPid);
  const reads = timeCalls(count, () => client.call(Command.REGION_READ, read));
  const writes = timeCalls(count, () => client.call(Command.REGION_WRITE, writeMsg));
  const cpu = serverPid === undefined ? undefined : (cpuNs(serverPid) - cpu0) / 1000 / (2 * count);
  return { read: summary(reads), write: summary(writes), ...(cpu !== undefined ? { serverCpuUs: cpu } : {}) };
}

export async function measureMmio(
  device: DeviceName,
  trace: boolean,
  count: number,
  warmup: number,
): Promise<MmioFigures> {
  const dir = mkdtempSync(join(tmpdir(), "hil-mmio-bench-"));
  const socketPath = join(dir, "dev.sock");
  const server = await startServerProcess({
    socketPath,
    device,
    ...(device === "erdma" ? { mac: "52:54:00:12:34:56" } : {}),
    ...(trace ? { traceFile: join(dir, "trace.jsonl") } : {}),
  }).catch((err) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  let fd = -1;
  try {
    fd = connectUnix(socketPath);
    return { device, trace, count, ...roundTrips(fd, device, count, warmup, server.pid) };
  } finally {
    if (fd >= 0) closeFd(fd);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function mmioTable(r: MmioFigures): string {
  const f = (n: number) => n.toFixed(1).padStart(9);
  return [
    `vfio-user MMIO round trips through the device server (${r.device}, trace ${r.trace ? "on" : "off"}, ${r.count} each)`,
    "",
    `${"".padEnd(26)}${"median".padStart(9)}${"mean".padStart(9)}${"p90".padStart(9)}`,
    `${"REGION_READ (µs)".padEnd(26)}${f(r.read.median)}${f(r.read.mean)}${f(r.read.p90)}`,
    `${"REGION_WRITE (µs)".padEnd(26)}${f(r.write.median)}${f(r.write.mean)}${f(r.write.p90)}`,
    ...(r.serverCpuUs !== undefined
      ? ["", `${"server CPU per round trip (µs)".padEnd(32)}${f(r.serverCpuUs)}`]
      : []),
  ].join("\n");
}
