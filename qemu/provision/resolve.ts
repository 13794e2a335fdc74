import { delimiter, isAbsolute, join, resolve } from "node:path";
import { HilError } from "../../util/errors.ts";
import { isExecutable } from "../../util/executable.ts";
import { progress } from "../../util/progress.ts";
import type { QemuInstall } from "../launch/types.ts";
import { hostFirmwareDirs } from "./firmware.ts";
import {
  MIN_QEMU_VERSION,
  type QemuCapabilities,
  qemuShortcomings,
  VFIO_USER_DEVICE,
} from "./requirements.ts";

export const QEMU_BINARY_NAME = "qemu-system-x86_64";

/** How QEMU is found, asked and built; the real ones in qemu.ts, stand-ins in tests. */
export interface QemuProviders {
  inspect: (binary: string) => Promise<QemuCapabilities>;
  build: () => Promise<QemuInstall>;
  /** a build already in the cache, if any (nothing to explain then) */
  built?: () => Promise<QemuInstall | undefined>;
}

/** The first executable `name` on `pathVar` (a PATH value), like `command -v`. */
export function findOnPath(name: string, pathVar: string | undefined): string | undefined {
  for (const dir of (pathVar ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return resolve(candidate);
  }
  return undefined;
}

function explicitBinary(value: string, env: NodeJS.ProcessEnv): string {
  if (isAbsolute(value) || value.includes("/")) return resolve(value);
  return findOnPath(value, env.PATH) ?? value;
}

/**
 * $HIL_QEMU if set (and an error if it is unusable: a user who names a binary wants that one),
 * else qemu-system-x86_64 from PATH when it is new enough and has vfio-user-pci, else undefined.
 * `onSkip` hears why a QEMU on PATH was passed over.
 */
export async function findHostQemu(
  env: NodeJS.ProcessEnv,
  inspect: QemuProviders["inspect"],
  onSkip: (why: string) => void = () => {},
): Promise<QemuInstall | undefined> {
  const wanted = env.HIL_QEMU;
  if (wanted) {
    const binary = explicitBinary(wanted, env);
    let caps: QemuCapabilities;
    try {
      caps = await inspect(binary);
    } catch (err) {
      throw new HilError(`HIL_QEMU=${binary} cannot be run as QEMU`, {
        detail: err instanceof HilError ? err.format() : String(err),
        cause: err,
      });
    }
    const shortcomings = qemuShortcomings(caps);
    if (shortcomings.length > 0) {
      throw new HilError(`HIL_QEMU=${binary} cannot be used: ${shortcomings.join(" and ")}`, {
        detail: `erdma-hil needs QEMU >= ${MIN_QEMU_VERSION} with the ${VFIO_USER_DEVICE} device; unset HIL_QEMU to use ${QEMU_BINARY_NAME} from PATH or a QEMU built into the cache`,
      });
    }
    return { binary, version: caps.version, origin: "HIL_QEMU", firmwareDirs: hostFirmwareDirs() };
  }

  const onPath = findOnPath(QEMU_BINARY_NAME, env.PATH);
  if (onPath) {
    const why = await inspect(onPath).then(
      (caps) => ({ caps, shortcomings: qemuShortcomings(caps) }),
      (err: unknown) => ({
        caps: undefined,
        shortcomings: [err instanceof HilError ? err.message : String(err)],
      }),
    );
    if (why.caps && why.shortcomings.length === 0) {
      return { binary: onPath, version: why.caps.version, origin: "PATH", firmwareDirs: hostFirmwareDirs() };
    }
    onSkip(`not using ${onPath}: ${why.shortcomings.join(" and ")}`);
  }
  return undefined;
}

/** The QEMU of findHostQemu, else a build (see there for $HIL_QEMU and PATH). */
export async function resolveQemu(env: NodeJS.ProcessEnv, providers: QemuProviders): Promise<QemuInstall> {
  const skipped: string[] = [];
  const host = await findHostQemu(env, providers.inspect, (why) => skipped.push(why));
  if (host) return host;
  // a QEMU on PATH that cannot be used explains a build; with one cached it explains nothing
  const cached = await providers.built?.();
  if (cached) return cached;
  for (const why of skipped) progress.info(`[qemu] ${why}`);
  return providers.build();
}
