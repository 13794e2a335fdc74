/**
 * CMDQ completion status (the CQE syndrome byte). The driver only distinguishes zero from non-zero
 * (erdma_cmdq.c:310, :441-442 -> -EIO); the non-zero values are this model's own vocabulary.
 */
import { DmaFault } from "./host.ts";

export const CmdStatus = {
  OK: 0,
  BAD_OPCODE: 1,
  BAD_LENGTH: 2,
  BAD_PARAM: 3,
  NOT_FOUND: 4,
  EXISTS: 5,
  BAD_STATE: 6,
  DMA_FAULT: 7,
  NO_RESOURCE: 8,
} as const;

export type CmdStatusCode = (typeof CmdStatus)[keyof typeof CmdStatus];

const names = new Map<number, string>(Object.entries(CmdStatus).map(([k, v]) => [v, k]));

export function statusName(status: number): string {
  return names.get(status) ?? `STATUS_${status}`;
}

/** The kinds of object a command names (the device's tables, state.ts). */
export type CmdObjectKind = "qp" | "cq" | "eq" | "mr" | "ah" | "gid" | "db";

/**
 * The object a command was refused for: the one that does not exist (NOT_FOUND), already exists
 * (EXISTS), or whose state or key refused it. An MR is named by its STag (MPT index << 8 | key, as
 * the device's state events name it), the doorbell pages of FREE_DB by their SQ page.
 */
export interface CmdObject {
  kind: CmdObjectKind;
  id: number;
}

/** A command the device refuses; becomes an error completion, never an exception out of the device. */
export class CmdError extends Error {
  constructor(
    readonly status: CmdStatusCode,
    readonly reason: string,
    readonly object?: CmdObject,
  ) {
    super(`${statusName(status)}: ${reason}`);
    this.name = "CmdError";
  }
}

export function fail(status: CmdStatusCode, reason: string, object?: CmdObject): never {
  throw new CmdError(status, reason, object);
}

/** Maps an error out of a command handler to (status, reason); other errors are model bugs. */
export function toCmdError(err: unknown): CmdError | undefined {
  if (err instanceof CmdError) return err;
  if (err instanceof DmaFault) return new CmdError(CmdStatus.DMA_FAULT, err.message);
  return undefined;
}
