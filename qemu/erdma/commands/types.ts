/** The shape of a CMDQ command handler. */
import type { ErdmaProfile } from "../profile.ts";
import type { Req } from "../req.ts";
import type { DeviceState } from "../state.ts";

export interface CmdResult {
  /** the 16 response bytes after the CQE header, as the driver reads them (erdma_cmdq.c:313, :444-447) */
  resp0?: bigint;
  resp1?: bigint;
  /** decoded request fields and outcome, for the trace */
  detail?: Record<string, unknown>;
}

export interface Command {
  name: string;
  submod: number;
  opcode: number;
  /** whether the device implements it under this profile (otherwise: unknown opcode) */
  available?(profile: ErdmaProfile): boolean;
  run(state: DeviceState, req: Req): Promise<CmdResult> | CmdResult;
}
