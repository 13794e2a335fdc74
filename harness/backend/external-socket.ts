/**
 * An external vfio-user device server the user started (--device-socket): an RTL co-simulation, an
 * FPGA bridge, another model. hil neither starts nor stops it, has no control channel to it (no
 * faults) and keeps no hardware trace of it; one guest at a time can have it.
 */
import { externalErdma } from "../../qemu/device-server/attach.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import {
  ATTACHED_DEVICE_LIMITS,
  ONE_DEVICE_NO_PAIR,
  refuseEmulatedDeviceOptions,
} from "./attached-device.ts";
import type { DeviceBackend } from "./backend.ts";

/** An external vfio-user device server, already listening (see --device-socket). */
export interface ExternalDevice {
  kind: "external";
  /** its socket, absolute */
  socketPath: string;
  /** the guest NIC's MAC, which the device must report */
  mac: string;
}

/** A run on an external device, read back: its socket. */
export interface ExternalRun {
  kind: "external";
  socket: string;
}

/** Why a scenario with fault steps cannot run on the external device at `socket`. */
export function externalFaultReason(socket: string): string {
  return `the external device at ${socket} has no fault control (no control channel to arm faults on)`;
}

/** (defined with the other limits of an attached device; named here too, where the backend tests take it) */
export { ONE_DEVICE_NO_PAIR };

export const externalSocket: DeviceBackend<ExternalDevice, ExternalRun> = {
  kind: "external",
  title: "`--device-socket <path>`",
  drivers: ["erdma"],
  impliedBy: [],
  boots: true,
  option: {
    flags: "--device-socket <path>",
    help: "attach the external vfio-user device server listening on this UNIX socket (an RTL co-simulation, an FPGA bridge, another model) instead of starting the emulated device; it must present an erdma function (0x1ded:0x107f) that reports the guest NIC's MAC (--mac). hil neither starts nor stops it, arms no faults on it and keeps no hardware trace of it",
  },
  // with --device-pci too, that backend says they contradict each other
  asks: (values) => values.deviceSocket !== undefined && values.devicePci === undefined,
  choose(values, extra) {
    const socket = values.deviceSocket ?? "";
    refuseEmulatedDeviceOptions("--device-socket", values, extra, {
      ownProfile: "the external device of --device-socket has its own",
      noTrace: "hil cannot record an external device's",
    });
    const mac = values.mac ?? DEFAULT_GUEST_MAC;
    return { kind: "external", socketPath: externalErdma(socket).socketPath, mac };
  },
  ...ATTACHED_DEVICE_LIMITS,
  boot: (d) => ({ external: d.socketPath }),
  smoke: (d) => ({ external: d.socketPath, mac: d.mac }),
  faultSkip: (d) => externalFaultReason(d.socketPath),
  record: (d) => ({ external: d.socketPath, mac: d.mac }),
  runs: {
    read: (r) =>
      r.device?.external !== undefined ? { kind: "external", socket: r.device.external } : undefined,
    describe: (r) => `external device ${r.socket}`,
    environment: (r) => `external vfio-user device (${r.socket})`,
    property: (r) => ["external", r.socket],
    rerunArgs: (r) => ["--device-socket", r.socket],
    diffName: () => "external device",
  },
  about: {
    probe:
      "probes, binds to the NIC, in `ibv_devinfo`; no profile to compare its attributes with, no trace to match",
    judges:
      "every scenario without fault steps: rules 1-9, the commands and console rules; no hardware-trace rules; a hang as on the emulated device",
  },
  example: { kind: "external", socketPath: "<path>", mac: DEFAULT_GUEST_MAC },
};
