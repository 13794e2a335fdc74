/** The erdma device model core: what the vfio-user glue and the tests use. */
export {
  type AccessSize,
  ERDMA_BARS,
  ERDMA_PCI_IDENTITY,
  ErdmaDevice,
  type ErdmaDeviceOptions,
  parseMac,
} from "./device.ts";
export type { DataPathHooks } from "./doorbells.ts";
export { DmaFault, type ErdmaHost, type GuestMemory } from "./host.ts";
export {
  builtinProfiles,
  checkProfile,
  type ErdmaCaps,
  type ErdmaProfile,
  type ErrorFlushMode,
  profile2022,
  profileIbCompliant,
  profileReflush,
  type ReflushMode,
} from "./profile.ts";
export { CmdStatus, statusName } from "./status.ts";
export type { ErdmaTraceEvent } from "./trace.ts";
