/** --target, --identity and --target-device (hil run): the suite on a remote machine's RDMA device. */
import type { Command } from "commander";
import { HilError } from "../../util/errors.ts";

export interface TargetOptionValues {
  target?: string;
  identity?: string;
  targetDevice?: string;
}

export function addTargetOptions(cmd: Command): Command {
  return cmd
    .option(
      "--target <ssh://user@host[:port]>",
      "run the drain suite on this machine's RDMA device over SSH instead of a guest's (it must run the kernel --kernel names, as root)",
    )
    .option(
      "--identity <key>",
      "the private key to log in to --target with (default: SSH_AUTH_SOCK's agent, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa)",
    )
    .option(
      "--target-device <name>",
      "the RDMA device on --target to run on, e.g. erdma_0 (default: the only one of --driver's)",
    );
}

/** What a run on --target cannot do, each as one clear error; --identity and --target-device without --target. */
export function checkTargetOptions(
  values: TargetOptionValues & {
    deviceProfile?: string;
    device: boolean;
    deviceSocket?: string;
    devicePci?: string;
    mac?: string;
    repeat?: number;
    guests?: number;
    executor?: string;
  },
): void {
  if (values.target === undefined) {
    for (const [given, name] of [
      [values.identity, "--identity"],
      [values.targetDevice, "--target-device"],
    ] as const)
      if (given !== undefined) throw new HilError(`${name} goes with --target`, { where: name });
    return;
  }
  const refused: [boolean, string, string][] = [
    [values.deviceProfile !== undefined, "--device-profile", "it sets the emulated device's behaviour"],
    [!values.device, "--no-device", "the target's device is the device under test"],
    [values.deviceSocket !== undefined, "--device-socket", "it attaches a device to a guest hil boots"],
    [values.devicePci !== undefined, "--device-pci", "it passes a device to a guest hil boots"],
    [values.mac !== undefined, "--mac", "it sets the NIC of a guest hil boots"],
    [(values.repeat ?? 1) > 1, "--repeat", "a target runs each scenario once"],
    [values.guests !== undefined, "--guests", "the target is one machine, hil boots no guest"],
    [values.executor === "user", "--executor user", "on a target the suite runs in the kernel executor"],
  ];
  for (const [bad, name, why] of refused)
    if (bad) throw new HilError(`${name} does not go with --target: ${why}`, { where: name.split(" ")[0] });
}
