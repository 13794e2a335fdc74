import { resolve } from "node:path";
import type { Command } from "commander";
import { progress } from "../../util/progress.ts";
import { bootDevice } from "../backend/registry.ts";
import { bootPrepared, DEFAULT_GUEST_MAC, prepareGuest } from "../boot.ts";
import { bootTrouble, settle } from "./boot-trouble.ts";
import { addDeviceOptions, type DeviceOptionValues, deviceOptions } from "./device-options.ts";
import { addKernelOptions, type KernelOptionValues, kernelRequest, parseSeconds } from "./kernel-options.ts";

interface BootOptionValues extends KernelOptionValues, DeviceOptionValues {
  bootTimeout?: number;
  memory: string;
  console?: string;
  trace?: string;
}

export function register(program: Command): void {
  const cmd = program
    .command("boot")
    .description(
      "boot a guest on a kernel built here, with the emulated erdma device attached, and run a command in it over SSH (its exit code is hil's); without a command, an interactive shell",
    )
    .argument("[command...]", "the command to run in the guest (put it after --)")
    .option(
      "--boot-timeout <seconds>",
      "give up if the guest has not answered over SSH by then",
      parseSeconds,
    )
    .option("--memory <MiB>", "guest memory", "512")
    .option("--console <file>", "keep the guest's serial console log in this file")
    .option("--trace <file>", "keep the emulated device's hardware trace (JSON lines) in this file")
    .addHelpText(
      "after",
      [
        "",
        "Examples:",
        "  hil boot --kernel debian:6.12 -- cat /proc/version",
        "  hil boot --kernel debian:6.1 -- ls /sys/module/erdma",
        "  hil boot --kernel debian:7.2 --trace hw.jsonl -- hil-verbs-lifecycle",
        "  hil boot --device-profile erdma-2022 -- rdma link",
        "  hil boot --device-socket /run/cosim/erdma.sock -- rdma link",
        "  hil boot --device-pci 0000:03:00.0 --mac 00:16:3e:01:02:03 -- rdma link",
        "",
        "--device-socket attaches a vfio-user device server you started (an RTL co-simulation, an FPGA bridge,",
        "another model) instead of the emulated device: it must present an erdma function (0x1ded:0x107f) that",
        `reports the guest NIC's MAC (${DEFAULT_GUEST_MAC} unless --mac says otherwise). hil does not stop it.`,
        "",
        "--device-pci passes a host PCI function (a real erdma device) through with QEMU's vfio-pci: hil checks its",
        "IOMMU group (viable, nobody holding it), binds it to vfio-pci for the boot and gives it back to its driver",
        "when the guest is gone. Needs root and an IOMMU; the device must report the guest NIC's MAC (--mac).",
        "",
      ].join("\n"),
    );
  addDeviceOptions(addKernelOptions(cmd)).action(async (command: string[], opts: BootOptionValues) => {
    const device = deviceOptions(opts, { traceFile: opts.trace ? resolve(opts.trace) : undefined });
    const prepared = await prepareGuest(kernelRequest(opts));
    const step = progress.step(`[boot] ${prepared.kernel.describe}`);
    const guest = await bootPrepared(prepared, {
      memoryMiB: Number(opts.memory),
      bootTimeoutMs: opts.bootTimeout === undefined ? undefined : opts.bootTimeout * 1000,
      keepConsole: opts.console,
      ...(opts.mac ? { mac: opts.mac } : {}),
      device: bootDevice(device),
    }).catch((err: unknown) => {
      step.fail();
      throw err;
    });
    step.succeed(
      `guest up (${guest.timings.accel}, first SSH command after ${guest.timings.firstCommandMs} ms)`,
    );
    try {
      if (command.length === 0) {
        process.exitCode = await guest.shell();
        return;
      }
      const result = await guest.exec(shellJoin(command)).catch((err: unknown) => err as Error);
      if (!(result instanceof Error)) {
        process.stdout.write(result.stdout);
        process.stderr.write(result.stderr);
      }
      // ssh's "the connection went away": -1 from the channel without a status, 255 from the client
      if (result instanceof Error || result.exitCode < 0 || result.exitCode === 255) await settle(guest);
      const trouble = bootTrouble(guest);
      if (trouble) throw trouble;
      if (result instanceof Error) throw result;
      process.exitCode = result.exitCode;
    } finally {
      await guest.dispose();
    }
  });
}

/** Quotes argv for the guest's sh so `hil boot -- ls "a b"` means what it says. */
export function shellJoin(argv: readonly string[]): string {
  if (argv.length === 1) return argv[0] ?? "";
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}
