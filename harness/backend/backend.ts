/**
 * A device backend: what the driver under test talks to, and what hil can see and control of it.
 * One module per backend (emulated.ts, external-socket.ts, pci-passthrough.ts, remote-target.ts,
 * no-device.ts), listed once in registry.ts; the boot, the probe stage, the suite, the job, the run
 * directory's reader and the reports ask the backend instead of testing which one it is.
 *
 * A backend's device is plain data with a `kind` (the backend's name), or undefined for the
 * backend of no device; `R` is what a run's record says of it when it is read back.
 */
import type { HostPci } from "../../qemu/launch/vfio-pci.ts";
import type { DeviceOptions, ExternalDeviceOptions, PciDeviceOptions } from "../boot.ts";
import type { EmulatedSmokeDevice, ExternalSmokeDevice } from "../probe/checks.ts";
import type { DriverName } from "../scenario/axes.ts";

/** What the boot gets (BootOptions.device): which device QEMU is given, or false for none. */
export type BootDevice = DeviceOptions | ExternalDeviceOptions | PciDeviceOptions | false;

/** What the probe stage checks of the device (SmokeContext.device). */
export type SmokeDevice = EmulatedSmokeDevice | ExternalSmokeDevice;

/** The device as verdicts.json records it (RunRecord.device; rundir/schema.ts). */
export type RecordedDevice = {
  profile?: string;
  trace?: string;
  external?: string;
  pci?: string;
  mac?: string;
  /** the RTL queue engine the emulated device ran with ("rtl", "rtl+<bug>...") */
  rtl?: string;
};

/** What reading a run's device back takes of its verdicts.json (structurally a RunRecord). */
export interface DeviceRecordSource {
  device?: RecordedDevice | null;
  /** the suite's profile (records of every hil), beside device.profile (later ones) */
  deviceProfile?: string;
}

/** The device options a command took (cli/device-options.ts, cli/target-options.ts). */
export interface DeviceOptionValues {
  /** --device-profile (or its old spelling --profile) */
  deviceProfile?: string;
  /** false with --no-device */
  device: boolean;
  /** --device-socket: an external vfio-user device server's socket */
  deviceSocket?: string;
  /** --device-pci: a host PCI function to pass through with vfio-pci */
  devicePci?: string;
  /** --device-rtl: the RTL queue engine (true), or with planted bugs (their names, comma-separated) */
  deviceRtl?: boolean | string;
  /** --mac, already checked and lower-cased */
  mac?: string;
  /** --target (hil run): a remote machine's RDMA device over SSH */
  target?: string;
  /** --identity (with --target) */
  identity?: string;
  /** --target-device (with --target) */
  targetDevice?: string;
}

export interface DeviceOptionExtras {
  /** --trace: where the user asked for the emulated device's hardware trace */
  traceFile?: string;
  /** --driver (hil run): siw attaches no device */
  driver?: string;
  /** where --device-pci's function is looked at (default: this machine's /sys and /proc) */
  host?: HostPci;
}

/** A backend's own command-line option, which picks it (addDeviceOptions adds it, in registry order). */
export interface BackendOption {
  flags: string;
  help: string;
}

/**
 * What a scenario with two guests gets on a backend: how the progress line says they are joined,
 * why it is a SKIP, or why nothing refuses it yet (said in the README's table).
 */
export type TwoGuests =
  | { joinedBy: (driver: DriverName) => string }
  | { skip: string }
  | { unchecked: string };

/** Where a backend keeps the device's hardware trace (the emulated device's server writes one). */
export interface HwTraceKeeping<D> {
  /** the first boot's trace file, when one is kept (later boots write beside it: suite.ts hwTraceFileFor) */
  keptIn(device: D): string | undefined;
  /** the device with its trace kept in `file` */
  keepIn(device: D, file: string): D;
}

/** How a run's device reads in the reports (html, ktap, junit, kcidb, a rerun line, hil diff). */
export interface RunDeviceViews<R> {
  /** the record's device, when the record is of this backend */
  read(record: DeviceRecordSource): R | undefined;
  /** a few words, as the reports' headers say it */
  describe(run: R): string;
  /** the KCIDB test environment's words for it */
  environment(run: R): string;
  /** the one property that names it: junit's device.<key>, KCIDB's misc device_<key> */
  property(run: R): [key: string, value: string];
  /** the `hil run` options that attach it again; `absolute` makes a file the record names relative to the job absolute */
  rerunArgs(run: R, ctx: { profile?: string; absolute: (path: string, what: string) => string }): string[];
  /** how `hil diff` labels a side run on it (undefined: the driver's name) */
  diffName(run: R): string | undefined;
}

export interface DeviceBackend<D, R = never> {
  /** its name: the `kind` of its devices and of its runs read back */
  readonly kind: string;
  /** how the README's table names it */
  readonly title: string;
  /** the drivers it serves */
  readonly drivers: readonly DriverName[];
  /** the drivers whose device it is when no option picks one (erdma: the emulated device; siw: none) */
  readonly impliedBy: readonly DriverName[];
  /** the behaviour profile it takes when none is given (--device-profile); absent: it takes none */
  readonly defaultProfile?: string;
  /** whether hil boots a guest for the driver (false: the driver runs on a remote machine's own kernel) */
  readonly boots: boolean;
  /** its own option, when one picks it (the default and the none backend have none) */
  readonly option?: BackendOption;
  /** whether the options ask for it (nothing checked yet; the registry asks the default backend last) */
  asks(values: DeviceOptionValues, extra: DeviceOptionExtras): boolean;
  /** the device the options ask for, checked now: a bad value or an option it contradicts is one clear error */
  choose(values: DeviceOptionValues, extra: DeviceOptionExtras): D;
  /** the behaviour profile scenarios and known-bug records are planned and matched against */
  profileOf(device: D): string | undefined;
  /** what the boot gets */
  boot(device: D): BootDevice;
  /** what the probe stage checks; `traceFile`: the boot's hardware trace, where one is kept */
  smoke(device: D, traceFile: string | undefined): SmokeDevice | undefined;
  /** whether fault steps can be armed: on the device server's control channel (qemu/erdma/control.ts) */
  readonly canArmFaults: boolean;
  /**
   * Why a scenario with fault steps is a SKIP on it (asked before its steps are planned); absent
   * where the scenario plan says it step by step (suite/plan.ts: siw has no device model).
   */
  faultSkip?(device: D): string;
  /** its hardware trace, where it has one */
  readonly hwTrace?: HwTraceKeeping<D>;
  /** how many guests can have it at once (a device server per guest: any number) */
  readonly maxGuests: number;
  /** scenarios with two guests (`guests: 2`) */
  readonly twoGuests: TwoGuests;
  /** its record in verdicts.json (`device`; null: none); `traceName`: the hardware trace's file in the run directory */
  record(device: D, traceName: string): RecordedDevice | null;
  /** how a run on it reads back (absent: its runs record no `device`) */
  readonly runs?: RunDeviceViews<R>;
  /** the README table's cells that are words, not derived: the probe stage, what its verdicts judge */
  readonly about: { probe: string; judges: string };
  /** a device of it as the README's table shows it (placeholders for paths and addresses) */
  readonly example: D;
}
