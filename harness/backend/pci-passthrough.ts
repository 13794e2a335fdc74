/**
 * A host PCI function passed through with QEMU's vfio-pci (--device-pci): a real erdma device. hil
 * binds it to vfio-pci for the boot and gives it back afterwards (harness/boot.ts); there is no
 * control channel (no faults) and no hardware trace, and one guest at a time can have it.
 */
import { checkPassthrough, parseBdf, realHostPci } from "../../qemu/launch/vfio-pci.ts";
import { HilError } from "../../util/errors.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import { ATTACHED_DEVICE_LIMITS, refuseEmulatedDeviceOptions } from "./attached-device.ts";
import type { DeviceBackend } from "./backend.ts";

/** A host PCI function passed through with QEMU's vfio-pci (see --device-pci): a real device. */
export interface PassthroughDevice {
  kind: "pci";
  /** its PCI address, normalised (0000:03:00.0) */
  bdf: string;
  /** the guest NIC's MAC, which the device must report */
  mac: string;
}

/** A run on a passed-through function, read back: its address. */
export interface PassthroughRun {
  kind: "pci";
  bdf: string;
}

/** How the probe stage and the reports name a passed-through function. */
export function passthroughName(bdf: string): string {
  return `host PCI function ${bdf} (vfio-pci)`;
}

/** Why a scenario with fault steps is a SKIP on a host PCI function passed through (--device-pci). */
export function passthroughFaultReason(bdf: string): string {
  return `no control channel: the device is real (host PCI function ${bdf}), faults cannot be armed on it`;
}

export const pciPassthrough: DeviceBackend<PassthroughDevice, PassthroughRun> = {
  kind: "pci",
  title: "`--device-pci <BDF>`",
  drivers: ["erdma"],
  impliedBy: [],
  boots: true,
  option: {
    flags: "--device-pci <BDF>",
    help: "pass the host's PCI function at this address (0000:03:00.0 or 03:00.0) through to the guest with QEMU's vfio-pci instead of starting the emulated device: a real erdma function. Its IOMMU group must be viable and nobody may hold it; hil binds it to vfio-pci (driver_override) for the boot and gives it back to its driver afterwards (needs root and an IOMMU). It must report the guest NIC's MAC (--mac); no faults, no hardware trace",
  },
  asks: (values) => values.devicePci !== undefined,
  choose(values, extra) {
    const bdf = parseBdf(values.devicePci ?? "");
    if (values.deviceSocket !== undefined)
      throw new HilError(
        "--device-pci and --device-socket each attach a device instead of the emulated one: pick one",
      );
    refuseEmulatedDeviceOptions("--device-pci", values, extra, {
      ownProfile: "the real device of --device-pci has its own",
      noTrace: "a real device passed through has none",
    });
    // the IOMMU group, its viability and the function's users, now: before anything is built
    checkPassthrough(extra.host ?? realHostPci(), bdf);
    return { kind: "pci", bdf, mac: values.mac ?? DEFAULT_GUEST_MAC };
  },
  ...ATTACHED_DEVICE_LIMITS,
  boot: (d) => ({ pci: d.bdf }),
  // a real device: no profile to compare with, no hardware trace, like an external one
  smoke: (d) => ({ external: passthroughName(d.bdf), mac: d.mac }),
  faultSkip: (d) => passthroughFaultReason(d.bdf),
  record: (d) => ({ pci: d.bdf, mac: d.mac }),
  runs: {
    read: (r) => (r.device?.pci !== undefined ? { kind: "pci", bdf: r.device.pci } : undefined),
    describe: (r) => `host PCI function ${r.bdf}`,
    environment: (r) => passthroughName(r.bdf),
    property: (r) => ["pci", r.bdf],
    rerunArgs: (r) => ["--device-pci", r.bdf],
    diffName: () => undefined,
  },
  about: {
    probe: "as `--device-socket`",
    judges:
      "every scenario without fault steps: rules 1-9, the commands and console rules; no hardware-trace rules; a hang as on the emulated device; the kernel: any hil builds, with VFIO in the host",
  },
  example: { kind: "pci", bdf: "<BDF>", mac: DEFAULT_GUEST_MAC },
};
