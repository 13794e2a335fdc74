/**
 * A remote machine's RDMA device over SSH (`hil run --target`): the driver runs on that machine's
 * own kernel, so hil boots no guest and the run is harness/target's (the LAVA runner over SSH). It
 * has no control channel (no faults) and no hardware trace; verdicts.json records it as `target`.
 */
import type { DeviceBackend } from "./backend.ts";

/** The target a run goes to (--target, --identity, --target-device). */
export interface RemoteTarget {
  kind: "target";
  /** ssh://user@host[:port], as given (harness/target/url.ts parses it) */
  url: string;
  identity?: string;
  /** --target-device: the RDMA device on the target (default: the only one of the driver's) */
  deviceName?: string;
}

/** Why a scenario with fault steps is a SKIP on a target. */
export const TARGET_NO_FAULTS =
  "the target's device is real: there is no control channel to arm device faults on (hil runs fault scenarios on the emulated device)";

export const remoteTarget: DeviceBackend<RemoteTarget> = {
  kind: "target",
  title: "`--target ssh://user@host[:port]`",
  drivers: ["erdma", "siw"],
  impliedBy: [],
  boots: false,
  asks: (values) => values.target !== undefined,
  // cli/target-options.ts has refused the options that do not go with --target
  choose: (values) => ({
    kind: "target",
    url: values.target ?? "",
    ...(values.identity !== undefined ? { identity: values.identity } : {}),
    ...(values.targetDevice !== undefined ? { deviceName: values.targetDevice } : {}),
  }),
  profileOf: () => undefined,
  // hil boots no guest: the target runs its own kernel
  boot: () => false,
  smoke: () => undefined,
  canArmFaults: false,
  faultSkip: () => TARGET_NO_FAULTS,
  maxGuests: 1,
  twoGuests: {
    unchecked:
      "not refused: the target is one machine, but the LAVA plan it runs (lava/plan.ts) has no notion of guests",
  },
  // its record is verdicts.json's `target` (harness/target/run.ts TargetRecord), not `device`
  record: () => null,
  about: {
    probe: "no: hil reads the device's name, driver, firmware and netdev",
    judges:
      "every scenario without fault steps: rules 1-9, the commands rule, the console as the kernel log (dmesg) each scenario made; no hardware-trace rules; a hang: stuck stack, sysrq-w, the scenarios after it MISS (no reboot); kernel executor only, on the kernel the machine runs (`--kernel` names it)",
  },
  example: { kind: "target", url: "ssh://root@host" },
};
