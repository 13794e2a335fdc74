/**
 * The qemu device a job from `hil lava-job` runs on here: LAVA's qemu device type with no KVM,
 * the project's QEMU, and extra_options that give the guest what hil's own guests have: RAM as a
 * shared memfd (the vfio-user device server maps it), SeaBIOS and option ROMs from their Debian
 * directories, no reboot (a panic ends QEMU, and so the job, at once) and the emulated erdma
 * behind vfio-user.
 */

import { TCG_CPU } from "../../qemu/launch/cmdline.ts";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";

/** Debian's python with lava-dispatcher's modules (pexpect, PyYAML). */
const SYSTEM_PYTHON = "/usr/bin/python3";

/**
 * One of qemu.jinja2's extra_options from QEMU arguments. The option goes through three readers
 * on its way to QEMU: Jinja writes the list with Python's repr into the device YAML, PyYAML reads
 * it back, and lava-run splits the joined command line with pexpect's split_command_line (quotes
 * and backslashes). A JSON argument (-device '{"driver":"vfio-user-pci",...}') survives them only
 * as QEMU's JSON with single-quoted strings (qobject/json-lexer.c takes both) whose quotes are
 * backslash-escaped: the repr is then a double-quoted YAML string, which gives back the
 * backslashes, and pexpect takes them off. Arguments with a space, a double quote or a backslash
 * of their own are refused (none of hil's need one).
 */
export function lavaQemuOption(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      const plain = arg.startsWith("{") ? jsonSingleQuoted(arg) : arg;
      if (/[\s"\\]/.test(plain))
        throw new HilError(
          `the QEMU argument ${JSON.stringify(arg)} cannot be one of a LAVA device's extra_options`,
          {
            detail:
              "it holds a space, a double quote or a backslash, which Jinja, YAML and pexpect read differently",
          },
        );
      return plain.replaceAll("'", "\\'");
    })
    .join(" ");
}

/** A JSON object argument with its strings in single quotes, as QEMU's JSON parser also reads it. */
function jsonSingleQuoted(arg: string): string {
  let value: unknown;
  try {
    value = JSON.parse(arg);
  } catch {
    return arg;
  }
  const text = JSON.stringify(value);
  // a string holding a quote or a backslash would need escapes inside the single quotes
  if (/\\|'/.test(text)) return arg;
  return text.replaceAll('"', "'");
}

export interface LocalDeviceArgs {
  memoryMb: number;
  firmwareDirs: readonly string[];
  /** QEMU arguments attaching the device under test (the device server's), if any */
  deviceArgs: readonly string[];
}

/**
 * The device's extra_options (each as lavaQemuOption writes it) and the QEMU arguments they are
 * meant to become.
 */
export function localDeviceOptions(o: LocalDeviceArgs): { options: string[]; argv: string[] } {
  const groups: string[][] = [
    // the memfd the vfio-user server maps; q35 as hil's guests have it
    ["-machine", "q35,memory-backend=ram0"],
    ["-object", `memory-backend-memfd,id=ram0,size=${o.memoryMb}M,share=on`],
    ["-accel", "tcg"],
    ["-cpu", TCG_CPU],
    ...o.firmwareDirs.map((dir) => ["-L", dir]),
    // the template's virtio NIC would look for an iPXE ROM
    ["-global", "virtio-net-pci.romfile="],
    ["-no-reboot"],
    // QEMU's default devices (a CD-ROM, a display hil's QEMU does not build) hold SeaBIOS for
    // about 30 s under TCG before it boots the kernel (measured here: 34 s vs 1.7 s); the console
    // the template's -nographic gives is then asked for by name
    ["-nodefaults"],
    ["-serial", "stdio"],
  ];
  for (let i = 0; i < o.deviceArgs.length; i += 2) groups.push(o.deviceArgs.slice(i, i + 2));
  return {
    options: groups.map(lavaQemuOption),
    argv: groups.flat().map((arg) => (arg.startsWith("{") ? jsonSingleQuoted(arg) : arg)),
  };
}

const SPLIT_PY = `
import json, sys, yaml
from pexpect.utils import split_command_line
device = yaml.safe_load(sys.stdin)
extra = device["actions"]["boot"]["methods"]["qemu"]["parameters"].get("extra") or []
print(json.dumps(split_command_line(" ".join(str(x) for x in extra))))
`;

/**
 * The QEMU arguments lava-run will give QEMU from the rendered device's extra options, read the
 * way lava-run reads them (PyYAML, pexpect's split_command_line).
 */
export async function extraArgsAsLavaRunReadsThem(deviceYaml: string): Promise<string[]> {
  const { stdout } = await run(
    "reading the device's extra options as lava-run does",
    SYSTEM_PYTHON,
    ["-c", SPLIT_PY],
    {
      input: deviceYaml,
    },
  );
  return JSON.parse(stdout) as string[];
}
