import { HilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";
import { parseDeviceNames } from "./device-help.ts";
import { type QemuCapabilities, VFIO_USER_DEVICE } from "./requirements.ts";
import { parseQemuVersionOutput } from "./version.ts";

const INSPECT_TIMEOUT_MS = 20_000;

async function ask(binary: string, args: string[]): Promise<string> {
  const r = await probe(binary, args, { timeoutMs: INSPECT_TIMEOUT_MS });
  if (r.exitCode !== 0) {
    const why = r.exitCode === -1 ? "could not be run" : `exited with status ${r.exitCode}`;
    throw new HilError(`QEMU ${binary} ${why} when asked \`${args.join(" ")}\``, {
      where: binary,
      detail: (r.stderr || r.stdout).trim() || undefined,
    });
  }
  return r.stdout;
}

/** Asks a QEMU binary its version (`--version`) and whether it has the vfio-user client (`-device help`). */
export async function inspectQemu(binary: string): Promise<QemuCapabilities> {
  const [versionOut, deviceHelp] = await Promise.all([
    ask(binary, ["--version"]),
    ask(binary, ["-device", "help"]),
  ]);
  return {
    version: parseQemuVersionOutput(versionOut) ?? "unknown",
    hasVfioUser: parseDeviceNames(deviceHelp).has(VFIO_USER_DEVICE),
  };
}
