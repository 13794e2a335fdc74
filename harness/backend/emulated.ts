/**
 * The emulated erdma device (the default): a device server hil starts for each guest with a
 * behaviour profile (fixtures/profiles), a control channel to arm faults on and a hardware trace.
 */
import type { ErdmaProfile } from "../../qemu/erdma/profile.ts";
import { DEFAULT_PROFILE, loadProfile } from "../../qemu/erdma/profile-file.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import type { DeviceBackend } from "./backend.ts";

/** The emulated erdma device: a device server hil starts with this profile. */
export interface EmulatedDevice {
  kind: "emulated";
  profileName: string;
  profile: ErdmaProfile;
  /** the guest NIC's MAC, which the device reports */
  mac: string;
  traceFile?: string;
}

/** A run on the emulated device, read back: its profile. */
export interface EmulatedRun {
  kind: "emulated";
  profile: string;
}

/** What a device served by hil's own device server (the model, whatever its queue engine) has. */
export interface ModelServedDevice {
  profileName: string;
  profile: ErdmaProfile;
  mac: string;
  traceFile?: string;
}

/**
 * The parts of a backend that the device server decides, the same for every device it serves: the
 * smoke test's device, faults on its control channel, its hardware trace, any number of guests.
 */
export function modelServerParts<D extends ModelServedDevice>(): Pick<
  DeviceBackend<D, never>,
  "smoke" | "canArmFaults" | "hwTrace" | "maxGuests"
> {
  return {
    smoke: (d, traceFile) => ({
      profileName: d.profileName,
      profile: d.profile,
      mac: d.mac,
      ...(traceFile ? { traceFile } : {}),
    }),
    canArmFaults: true,
    hwTrace: {
      keptIn: (d) => d.traceFile,
      keepIn: (d, file) => ({ ...d, traceFile: file }),
    },
    maxGuests: Number.POSITIVE_INFINITY,
  };
}

/** A profile option's value that names a JSON file rather than a profile of fixtures/profiles. */
const isProfileFile = (name: string) => name.includes("/") || name.endsWith(".json");

export const emulated: DeviceBackend<EmulatedDevice, EmulatedRun> = {
  kind: "emulated",
  title: "emulated (default; `--device-profile`)",
  drivers: ["erdma"],
  impliedBy: ["erdma"],
  defaultProfile: DEFAULT_PROFILE,
  boots: true,
  asks: () => true,
  choose(values, extra) {
    const profileName = values.deviceProfile ?? DEFAULT_PROFILE;
    return {
      kind: "emulated",
      profileName,
      profile: loadProfile(profileName),
      mac: values.mac ?? DEFAULT_GUEST_MAC,
      ...(extra.traceFile ? { traceFile: extra.traceFile } : {}),
    };
  },
  profileOf: (d) => d.profileName,
  boot: (d) => ({ profile: d.profileName, ...(d.traceFile ? { traceFile: d.traceFile } : {}) }),
  ...modelServerParts<EmulatedDevice>(),
  twoGuests: { joinedBy: () => "the erdma fabric" },
  // the MAC when it is not the default: a rerun needs it
  record: (d, traceName) => ({
    profile: d.profileName,
    trace: traceName,
    ...(d.mac !== DEFAULT_GUEST_MAC ? { mac: d.mac } : {}),
  }),
  runs: {
    read(r) {
      const profile = r.deviceProfile ?? r.device?.profile;
      return profile === undefined ? undefined : { kind: "emulated", profile };
    },
    describe: (r) => `device profile ${r.profile}`,
    environment: (r) => `emulated erdma device (profile ${r.profile})`,
    property: (r) => ["profile", r.profile],
    rerunArgs(r, { profile, absolute }) {
      const name = profile ?? r.profile;
      return ["--device-profile", isProfileFile(name) ? absolute(name, "device profile") : name];
    },
    diffName: (r) => r.profile,
  },
  about: {
    probe:
      "probes, binds to the NIC, in `ibv_devinfo` with the attributes its profile implies; the verbs lifecycle matched in its hardware trace",
    judges:
      "every scenario: rules 1-9, the commands and console rules, device faults, the hardware-trace rules (hw-complete, hw-protocol) and device evidence in a FAIL; a hang: stuck stack, sysrq-w, the guest rebooted, the next scenarios run",
  },
  get example() {
    return {
      kind: "emulated" as const,
      profileName: DEFAULT_PROFILE,
      profile: loadProfile(DEFAULT_PROFILE),
      mac: DEFAULT_GUEST_MAC,
      traceFile: "<run>/hw-trace.jsonl",
    };
  },
};
