/**
 * The RTL queue engine (--device-rtl): the emulated erdma device with its queue engine (completion
 * generation, the flush engine and their index bookkeeping) replaced by the synthesizable
 * SystemVerilog of qemu/erdma/rtl, verilated and co-simulated in the device server process. The
 * model keeps PCI, DMA, commands and the data path, so the boot, the faults and the hardware trace
 * are the emulated device's. `--device-rtl=<bug,...>` builds it with planted bugs switched on.
 */
import type { ErdmaProfile, ErrorFlushMode } from "../../qemu/erdma/profile.ts";
import { DEFAULT_PROFILE, loadProfile } from "../../qemu/erdma/profile-file.ts";
import { isRtlBug, RTL_BUGS, type RtlBug } from "../../qemu/erdma/rtl/build.ts";
import { HilError } from "../../util/errors.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import type { DeviceBackend } from "./backend.ts";
import { modelServerParts } from "./emulated.ts";
import { softwareDriverWithDevice } from "./no-device.ts";

/** The flush modes erdma_flush_limit.sv implements (STOP, REFLUSH, ALWAYS). */
export const RTL_FLUSH_MODES: readonly ErrorFlushMode[] = ["stop", "reflush", "always"];

export interface RtlDevice {
  kind: "rtl";
  profileName: string;
  profile: ErdmaProfile;
  mac: string;
  /** planted bugs switched on in the RTL (none: the engine as designed) */
  bugs: RtlBug[];
  traceFile?: string;
}

/** A run on the RTL engine, read back: its profile and the bugs it had planted. */
export interface RtlRun {
  kind: "rtl";
  profile: string;
  bugs: string[];
}

function parseBugs(value: string | boolean | undefined): RtlBug[] {
  if (typeof value !== "string" || value === "") return [];
  const names = value.split(",").map((s) => s.trim());
  const bad = names.find((n) => !isRtlBug(n));
  if (bad !== undefined)
    throw new HilError(
      `--device-rtl: no planted bug "${bad}" (known: ${Object.keys(RTL_BUGS).join(", ")}; none: the RTL as designed)`,
    );
  return [...new Set(names as RtlBug[])].sort();
}

const rtlName = (bugs: readonly string[]) => (bugs.length ? `rtl+${bugs.join("+")}` : "rtl");

export const rtl: DeviceBackend<RtlDevice, RtlRun> = {
  kind: "rtl",
  title: "`--device-rtl` (RTL queue engine)",
  drivers: ["erdma"],
  impliedBy: [],
  defaultProfile: DEFAULT_PROFILE,
  boots: true,
  option: {
    flags: "--device-rtl [bugs]",
    help: `the emulated erdma device with its queue engine (CQEs, owner bit, flush engine) in synthesizable RTL (qemu/erdma/rtl), co-simulated with Verilator (hil setup installs it); a comma-separated list plants bugs in the RTL (${Object.keys(RTL_BUGS).join(", ")}: docs/fpga.md says what each breaks)`,
  },
  asks: (values) => values.deviceRtl !== undefined && values.deviceRtl !== false,
  choose(values, extra) {
    if (!values.device) throw new HilError("--device-rtl and --no-device contradict each other");
    for (const [given, name] of [
      [values.deviceSocket, "--device-socket"],
      [values.devicePci, "--device-pci"],
      [values.target, "--target"],
    ] as const)
      if (given !== undefined)
        throw new HilError(`--device-rtl and ${name} contradict each other: pick one device`);
    const withSoftware = softwareDriverWithDevice(extra.driver, "--device-rtl");
    if (withSoftware) throw withSoftware;
    const profileName = values.deviceProfile ?? DEFAULT_PROFILE;
    const profile = loadProfile(profileName);
    if (!RTL_FLUSH_MODES.includes(profile.errorFlush))
      throw new HilError(
        `--device-rtl: profile ${profileName} flushes "${profile.errorFlush}", which the RTL does not implement (it does ${RTL_FLUSH_MODES.join(", ")})`,
      );
    return {
      kind: "rtl",
      profileName,
      profile,
      mac: values.mac ?? DEFAULT_GUEST_MAC,
      bugs: parseBugs(values.deviceRtl),
      ...(extra.traceFile ? { traceFile: extra.traceFile } : {}),
    };
  },
  profileOf: (d) => d.profileName,
  boot: (d) => ({
    profile: d.profileName,
    rtl: { bugs: d.bugs },
    ...(d.traceFile ? { traceFile: d.traceFile } : {}),
  }),
  ...modelServerParts<RtlDevice>(),
  twoGuests: { joinedBy: () => "the erdma fabric (one RTL engine for both devices)" },
  record: (d, traceName) => ({
    profile: d.profileName,
    trace: traceName,
    rtl: rtlName(d.bugs),
    ...(d.mac !== DEFAULT_GUEST_MAC ? { mac: d.mac } : {}),
  }),
  runs: {
    read(r) {
      const engine = (r.device as { rtl?: unknown } | null | undefined)?.rtl;
      const profile = r.device?.profile;
      if (typeof engine !== "string" || profile === undefined) return undefined;
      return { kind: "rtl", profile, bugs: engine.split("+").slice(1) };
    },
    describe: (r) =>
      `RTL queue engine${r.bugs.length ? ` (bugs: ${r.bugs.join(", ")})` : ""}, device profile ${r.profile}`,
    environment: (r) => `erdma device with the verilated RTL queue engine (profile ${r.profile})`,
    property: (r) => ["rtl", rtlName(r.bugs)],
    rerunArgs: (r, { profile }) => [
      r.bugs.length ? `--device-rtl=${r.bugs.join(",")}` : "--device-rtl",
      "--device-profile",
      profile ?? r.profile,
    ],
    diffName: (r) => `${rtlName(r.bugs)} ${r.profile}`,
  },
  about: {
    probe: "as the emulated device (the same model; the RTL decides CQEs and flushes)",
    judges:
      "as the emulated device: every scenario, rules 1-9, device faults, the hardware-trace rules; what it adds is that the CQEs and flushes judged came from the RTL",
  },
  get example() {
    return {
      kind: "rtl" as const,
      profileName: DEFAULT_PROFILE,
      profile: loadProfile(DEFAULT_PROFILE),
      mac: DEFAULT_GUEST_MAC,
      bugs: [],
      traceFile: "<run>/hw-trace.jsonl",
    };
  },
};
