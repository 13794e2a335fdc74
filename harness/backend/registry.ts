/**
 * The device backends in one list, and what the rest of hil asks of them: which backend the
 * command's options pick, which one a driver implies, and a device's boot, probe, record and
 * read-back views. Adding a backend is its module and its line in BACKENDS.
 */
import type { DriverName } from "../scenario/axes.ts";
import type {
  BootDevice,
  DeviceBackend,
  DeviceOptionExtras,
  DeviceOptionValues,
  DeviceRecordSource,
  RecordedDevice,
  RunDeviceViews,
  SmokeDevice,
} from "./backend.ts";
import { emulated } from "./emulated.ts";
import { externalSocket } from "./external-socket.ts";
import { noDevice } from "./no-device.ts";
import { pciPassthrough } from "./pci-passthrough.ts";
import { type RemoteTarget, remoteTarget } from "./remote-target.ts";
import { rtl } from "./rtl.ts";

/**
 * Every backend, in the order the README's table lists them. The first is the default: the
 * options get it when they ask for no other, which are asked in this order.
 */
export const BACKENDS = [emulated, rtl, externalSocket, pciPassthrough, remoteTarget, noDevice] as const;

type DeviceOf<B> = B extends DeviceBackend<infer D, infer _R> ? D : never;
type RunOf<B> = B extends DeviceBackend<infer _D, infer R> ? R : never;

/** A device of any backend (undefined: none). */
export type ChosenDevice = Exclude<DeviceOf<(typeof BACKENDS)[number]>, undefined>;
/** A run's device read back from its verdicts.json. */
export type RunDevice = RunOf<(typeof BACKENDS)[number]>;
export type AnyBackend = DeviceBackend<ChosenDevice | undefined, RunDevice>;

const ALL: readonly AnyBackend[] = BACKENDS;
const [DEFAULT_BACKEND, ...ASKED_FIRST] = ALL as [AnyBackend, ...AnyBackend[]];

/** The backend of a device (undefined: the backend of no device). */
export function backendOf(device: ChosenDevice | undefined): AnyBackend {
  const kind = device?.kind ?? noDevice.kind;
  const backend = ALL.find((b) => b.kind === kind);
  if (!backend) throw new Error(`no device backend "${kind}" in the registry`);
  return backend;
}

/** The backend the options ask for, nothing checked yet. */
export function askedBackend(values: DeviceOptionValues, extra: DeviceOptionExtras = {}): AnyBackend {
  return ASKED_FIRST.find((b) => b.asks(values, extra)) ?? DEFAULT_BACKEND;
}

/** The device the options ask for, checked (one clear error for bad input); undefined: none. */
export function chooseDevice(
  values: DeviceOptionValues,
  extra: DeviceOptionExtras = {},
): ChosenDevice | undefined {
  return askedBackend(values, extra).choose(values, extra);
}

/** The backend a driver gets when no option picks one (erdma: the emulated device; siw: none). */
export function impliedBackend(driver: DriverName): AnyBackend {
  const backend = ALL.find((b) => b.impliedBy.includes(driver));
  if (!backend) throw new Error(`no device backend is implied by driver ${driver}`);
  return backend;
}

/** The device a driver implies, with a profile (where its backend takes one) and the guest NIC's MAC. */
export function impliedDevice(
  driver: DriverName,
  values: Pick<DeviceOptionValues, "deviceProfile" | "mac"> = {},
): ChosenDevice | undefined {
  return impliedBackend(driver).choose({ device: true, ...values }, { driver });
}

/** The behaviour profile a job of this driver runs with (`profile` or the default), or undefined where it takes none. */
export function impliedProfile(driver: DriverName, profile: string | undefined): string | undefined {
  const fallback = impliedBackend(driver).defaultProfile;
  return fallback === undefined ? undefined : (profile ?? fallback);
}

/** Whether the device a driver implies takes a behaviour profile (--device-profile, a plan's device_profiles). */
export function takesProfile(driver: DriverName): boolean {
  return impliedBackend(driver).defaultProfile !== undefined;
}

/** Whether the device runs the driver somewhere hil boots no guest (a remote target). */
export function runsRemotely(device: ChosenDevice | undefined): device is RemoteTarget {
  return !backendOf(device).boots;
}

/** The options of the backends one guest at a time can have ("--device-socket or --device-pci"). */
export function oneGuestOptions(): string {
  return ALL.flatMap((b) => (b.maxGuests === 1 && b.option ? [b.option.flags.split(" ")[0]] : [])).join(
    " or ",
  );
}

/** The device as bootPrepared takes it (BootOptions.device). */
export function bootDevice(device: ChosenDevice | undefined): BootDevice {
  return backendOf(device).boot(device);
}

/** What the smoke checks know of the device (SmokeContext.device). */
export function smokeDevice(
  device: ChosenDevice | undefined,
  traceFile: string | undefined,
): SmokeDevice | undefined {
  return backendOf(device).smoke(device, traceFile);
}

/** The device as verdicts.json records it. */
export function recordedDevice(device: ChosenDevice | undefined, traceName: string): RecordedDevice | null {
  return backendOf(device).record(device, traceName);
}

/** The first boot's hardware trace file of the device, where one is kept. */
export function hwTraceOf(device: ChosenDevice | undefined): string | undefined {
  return backendOf(device).hwTrace?.keptIn(device);
}

/** The behaviour profile the device runs with, where it has one. */
export function profileOf(device: ChosenDevice | undefined): string | undefined {
  return backendOf(device).profileOf(device);
}

/** A run's device from its verdicts.json; undefined when it recorded none (no device, siw, a target, an old record). */
export function readDevice(record: DeviceRecordSource): RunDevice | undefined {
  for (const b of [...ASKED_FIRST, DEFAULT_BACKEND]) {
    const run = b.runs?.read(record);
    if (run !== undefined) return run;
  }
  return undefined;
}

/** How a run's device reads in the reports. */
export function runViews(run: RunDevice): RunDeviceViews<RunDevice> {
  const views = ALL.find((b) => b.kind === run.kind)?.runs;
  if (!views) throw new Error(`no device backend reads back a "${run.kind}" run`);
  return views;
}
