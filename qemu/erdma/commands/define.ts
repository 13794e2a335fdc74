/**
 * A command's identity from its opcode table: the handler names the opcode (hw.h:130-151) and gets
 * its sub module and number from it, so a name and an opcode cannot disagree.
 */
import { CommonOp, RdmaOp, SubMod } from "../hw.ts";
import type { Command } from "./types.ts";

type Handler = Pick<Command, "available" | "run">;

/** a command of the RDMA sub module (hw.h:130-140) */
export function rdmaCommand(name: keyof typeof RdmaOp, handler: Handler): Command {
  return { name, submod: SubMod.RDMA, opcode: RdmaOp[name], ...handler };
}

/** a command of the COMMON sub module (hw.h:142-151) */
export function commonCommand(name: keyof typeof CommonOp, handler: Handler): Command {
  return { name, submod: SubMod.COMMON, opcode: CommonOp[name], ...handler };
}
