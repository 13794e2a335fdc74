/** The hardware trace: what the server saw and did, one event per line. */
import { Command, Flags, type Header } from "./protocol.ts";

/** One line of the hardware trace. */
export type TraceEvent =
  | { kind: "connect" }
  | { kind: "disconnect"; reason: string }
  | {
      kind: "recv" | "send";
      id: number;
      command: string;
      flags: number;
      size: number;
      fds: number;
      info?: Record<string, unknown>;
    }
  | { kind: "refused"; id: number; command: string; errno: string; reason: string }
  | { kind: "dma"; access: "read" | "write"; address: bigint; length: number; path: string }
  | { kind: "irq"; vector: number; delivered: boolean }
  | { kind: "config"; change: Record<string, unknown> }
  | { kind: "device"; event: string; detail?: Record<string, unknown> }
  | { kind: "note"; text: string };

export type Logger = (level: "info" | "warn", text: string) => void;

/** The fields worth tracing of a command, decoded leniently (a malformed one shows what is there). */
export function describe(h: Header, payload: Buffer): Record<string, unknown> | undefined {
  const dv = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const u32 = (o: number) => (payload.length >= o + 4 ? dv.getUint32(o, true) : undefined);
  const hex64 = (o: number) =>
    payload.length >= o + 8 ? `0x${dv.getBigUint64(o, true).toString(16)}` : undefined;
  if ((h.flags & Flags.TYPE_MASK) !== Flags.TYPE_COMMAND) return undefined;
  switch (h.command) {
    case Command.REGION_READ:
      return { region: u32(8), offset: hex64(0), count: u32(12) };
    case Command.REGION_WRITE: {
      const count = u32(12);
      const data = count !== undefined && count <= 8 ? payload.subarray(16, 16 + count) : undefined;
      // The value as the guest wrote it (little-endian), for short writes.
      const value = data?.length ? `0x${Buffer.from(data).reverse().toString("hex")}` : undefined;
      return { region: u32(8), offset: hex64(0), count, value };
    }
    case Command.DMA_MAP:
      return { flags: u32(4), offset: hex64(8), address: hex64(16), size: hex64(24) };
    case Command.DMA_UNMAP:
      return { flags: u32(4), address: hex64(8), size: hex64(16) };
    case Command.DEVICE_GET_REGION_INFO:
    case Command.DEVICE_GET_IRQ_INFO:
      return { index: u32(8) };
    case Command.DEVICE_SET_IRQS:
      return { flags: u32(4), index: u32(8), start: u32(12), count: u32(16) };
    default:
      return undefined;
  }
}
