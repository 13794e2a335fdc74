/**
 * What hil knows of each driver under test beyond its name: the transport it speaks (which oracle
 * rule sets judge it), and for a software driver the link `rdma link add` makes on a guest netdev
 * and the kernel config fragment its module needs beyond guest/kconfig/base.config.
 */
import { type DriverName, ORACLE_PROFILES, type OracleProfile } from "./axes.ts";

/** A software RDMA driver's device, made by linking the driver to a netdev (iproute2's `rdma link add`). */
export interface SoftLink {
  /** the module to load first */
  module: string;
  /** `rdma link add <device> type <type> netdev <nic>` */
  type: string;
  device: string;
}

export interface DriverFacts {
  /** a few words for messages ("soft-iWARP") */
  title: string;
  transport: "iwarp" | "roce";
  /** the rule sets a scenario on this driver may be judged under (of the scenario's own) */
  profiles: readonly OracleProfile[];
  /** a software driver's link (no device to attach); absent: the driver of a device (erdma) */
  softLink?: SoftLink;
  /** a fragment of guest/kconfig the driver's module needs, added to the kernel a job builds */
  config?: string;
}

export const DRIVER_FACTS: Readonly<Record<DriverName, DriverFacts>> = {
  // siw and erdma are iWARP; ib is kept for both as before: the verbs rules they share with IB
  siw: {
    title: "soft-iWARP",
    transport: "iwarp",
    profiles: ORACLE_PROFILES,
    softLink: { module: "siw", type: "siw", device: "siw0" },
  },
  erdma: { title: "erdma", transport: "iwarp", profiles: ORACLE_PROFILES },
  // soft-RoCE (drivers/infiniband/sw/rxe): an IB transport over UDP, so the iWARP RDMAC rules do not apply
  rxe: {
    title: "soft-RoCE",
    transport: "roce",
    profiles: ["ib", "linux"],
    softLink: { module: "rdma_rxe", type: "rxe", device: "rxe0" },
    config: "rxe",
  },
};

/** The software drivers: no device, linked to the guest's NIC (siw, rxe). */
export const SOFTWARE_DRIVERS: readonly DriverName[] = (Object.keys(DRIVER_FACTS) as DriverName[]).filter(
  (d) => DRIVER_FACTS[d].softLink !== undefined,
);

/** Whether `driver` (any string: an option's value) names a software driver. */
export function isSoftwareDriver(driver: string | undefined): boolean {
  return SOFTWARE_DRIVERS.some((d) => d === driver);
}

/** The software driver's link, or undefined for the driver of a device. */
export function softLinkOf(driver: DriverName): SoftLink | undefined {
  return DRIVER_FACTS[driver].softLink;
}

/** The rule sets of `profiles` that judge a scenario on `driver` (rxe: not iwarp-rdmac). */
export function profilesOnDriver(profiles: readonly OracleProfile[], driver: DriverName): OracleProfile[] {
  const allowed = DRIVER_FACTS[driver].profiles;
  return profiles.filter((p) => allowed.includes(p));
}

/** `configs` with the fragment `driver` needs first, unless they name it already (by name or path). */
export function withDriverFragment(configs: readonly string[], driver: DriverName): string[] {
  const needed = DRIVER_FACTS[driver].config;
  const named = configs.some((c) => c === needed || c.split("/").pop() === `${needed}.config`);
  return needed === undefined || named ? [...configs] : [needed, ...configs];
}
