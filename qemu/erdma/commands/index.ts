/** The command set: (sub module, opcode) -> handler. */
import type { ErdmaProfile } from "../profile.ts";
import { createCq, destroyCq } from "./cq.ts";
import { allocDb, confDevice, confMtu, freeDb, getStats, queryDevice, queryFwInfo } from "./device.ts";
import { createEq, destroyEq } from "./eq.ts";
import { deregMr, regMr } from "./mr.ts";
import { createQp, destroyQp, modifyQp, queryQp, reflush } from "./qp.ts";
import { createAh, destroyAh, setGid } from "./rocev2.ts";
import type { Command } from "./types.ts";

export const allCommands: readonly Command[] = [
  queryDevice,
  createQp,
  destroyQp,
  modifyQp,
  createCq,
  destroyCq,
  reflush,
  regMr,
  deregMr,
  setGid,
  createAh,
  destroyAh,
  queryQp,
  createEq,
  destroyEq,
  queryFwInfo,
  confMtu,
  getStats,
  confDevice,
  allocDb,
  freeDb,
];

export function commandTable(profile: ErdmaProfile): Map<number, Command> {
  const table = new Map<number, Command>();
  for (const c of allCommands) {
    if (c.available && !c.available(profile)) continue;
    table.set(commandKey(c.submod, c.opcode), c);
  }
  return table;
}

export function commandKey(submod: number, opcode: number): number {
  return (submod << 8) | opcode;
}

/** A name for any (sub module, opcode), known to this device or not, for the trace. */
export function commandName(submod: number, opcode: number): string {
  const c = allCommands.find((x) => x.submod === submod && x.opcode === opcode);
  return c ? c.name : `UNKNOWN_${submod}_${opcode}`;
}

export type { CmdResult, Command } from "./types.ts";
