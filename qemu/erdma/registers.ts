/**
 * The BAR0 register page (offsets below the doorbell spaces): names for the trace, which
 * registers are read-only, which 8-byte slots are doorbells, and the raw storage for the
 * configuration registers the driver programs before INIT (erdma_cmdq.c:107-112, :142-146,
 * :169-174; erdma_eq.c:129-134).
 */
import { DB_SPACE_BASE, Reg } from "./hw.ts";

const names = new Map<number, string>();
for (const [name, off] of Object.entries(Reg)) {
  names.set(off, name);
  // 64-bit registers and doorbells: name the high half too
  if (
    name.endsWith("_HOST_ADDR") ||
    name.startsWith("STATS_") ||
    name.endsWith("_DB") ||
    name.endsWith("SQDB") ||
    name.endsWith("CQDB")
  ) {
    names.set(off + 4, `${name}_HI`);
  }
}

export function registerName(offset: number): string {
  const exact = names.get(offset);
  if (exact) return exact;
  if (offset >= Reg.CEQ_DB_BASE && offset < Reg.CEQ_DB_BASE + 0x100) {
    const eqn = (offset - Reg.CEQ_DB_BASE) >> 3;
    return `CEQ_DB[${eqn}]${offset & 4 ? "_HI" : ""}`;
  }
  return `REG_${offset.toString(16)}`;
}

export const STATS_REGS: readonly number[] = [
  Reg.STATS_TSO_IN_PKTS,
  Reg.STATS_TSO_OUT_PKTS,
  Reg.STATS_TSO_OUT_BYTES,
  Reg.STATS_TX_DROP_PKTS,
  Reg.STATS_TX_BPS_METER_DROP_PKTS,
  Reg.STATS_TX_PPS_METER_DROP_PKTS,
  Reg.STATS_RX_PKTS,
  Reg.STATS_RX_BYTES,
  Reg.STATS_RX_DROP_PKTS,
  Reg.STATS_RX_BPS_METER_DROP_PKTS,
  Reg.STATS_RX_PPS_METER_DROP_PKTS,
];

/** Configuration registers: writable, latched into the queues when the driver writes INIT. */
export const CONFIG_REGS: ReadonlySet<number> = new Set<number>([
  Reg.CMDQ_SQ_ADDR_L,
  Reg.CMDQ_SQ_ADDR_H,
  Reg.CMDQ_CQ_ADDR_L,
  Reg.CMDQ_CQ_ADDR_H,
  Reg.CMDQ_DEPTH,
  Reg.CMDQ_EQ_DEPTH,
  Reg.CMDQ_EQ_ADDR_L,
  Reg.CMDQ_EQ_ADDR_H,
  Reg.AEQ_ADDR_L,
  Reg.AEQ_ADDR_H,
  Reg.AEQ_DEPTH,
  Reg.CMDQ_SQ_DB_HOST_ADDR,
  Reg.CMDQ_SQ_DB_HOST_ADDR + 4,
  Reg.CMDQ_CQ_DB_HOST_ADDR,
  Reg.CMDQ_CQ_DB_HOST_ADDR + 4,
  Reg.CMDQ_EQ_DB_HOST_ADDR,
  Reg.CMDQ_EQ_DB_HOST_ADDR + 4,
  Reg.AEQ_DB_HOST_ADDR,
  Reg.AEQ_DB_HOST_ADDR + 4,
]);

export type DoorbellSlot =
  | { kind: "aeq" }
  | { kind: "ceq"; eqn: number }
  | { kind: "cmdq-sq" }
  | { kind: "cmdq-cq" }
  | { kind: "sq"; page: number }
  | { kind: "rq"; page: number }
  | { kind: "cq"; page: number };

/** The doorbell an 8-byte-aligned BAR0 offset belongs to, if any. */
export function doorbellAt(
  offset8: number,
  spaces: (offset: number) => DoorbellSlot | undefined,
): DoorbellSlot | undefined {
  if (offset8 === Reg.AEQ_DB) return { kind: "aeq" };
  if (offset8 === Reg.CMDQ_SQDB) return { kind: "cmdq-sq" };
  if (offset8 === Reg.CMDQ_CQDB) return { kind: "cmdq-cq" };
  if (offset8 >= Reg.CEQ_DB_BASE && offset8 < Reg.CEQ_DB_BASE + 0x100)
    return { kind: "ceq", eqn: (offset8 - Reg.CEQ_DB_BASE) >> 3 };
  if (offset8 >= DB_SPACE_BASE) return spaces(offset8);
  return undefined;
}

/** Raw 32-bit storage for the register page. */
export class RegisterFile {
  private readonly words = new Uint32Array(DB_SPACE_BASE / 4);

  get(offset: number): number {
    return this.words[offset >> 2] ?? 0;
  }

  set(offset: number, value: number): void {
    this.words[offset >> 2] = value >>> 0;
  }

  get64(offset: number): bigint {
    return BigInt(this.get(offset)) | (BigInt(this.get(offset + 4)) << 32n);
  }

  clear(): void {
    this.words.fill(0);
  }
}
