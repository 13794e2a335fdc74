/**
 * The fabric network between two guests: an Ethernet wire made of QEMU `dgram` netdevs over two
 * unix datagram sockets in a run dir of its own (no root, no tap, no bridge). Guest 0 binds
 * `guest0.sock` and sends to `guest1.sock`, guest 1 the other way round. dispose() removes the dir
 * (QEMU leaves its bound socket files behind); an exit or signal of this process does the same.
 */
import { rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { onProcessExit } from "../../util/cleanup.ts";
import type { DgramLink } from "./cmdline.ts";
import { createRunDir, sweepStaleRunDirs } from "./rundir.ts";

const DIR_PREFIX = "hil-fabric-";

/** The fabric's addressing: guest i has MAC FABRIC_MACS[i] and address FABRIC_IPS[i]/FABRIC_PREFIX. */
export const FABRIC_MACS = ["52:54:00:fa:b0:01", "52:54:00:fa:b0:02"] as const;
export const FABRIC_IPS = ["10.99.0.1", "10.99.0.2"] as const;
export const FABRIC_PREFIX = 24;
/** guest i's IPv6 address on the fabric (a unique local address, RFC 4193), added once it is up */
export const FABRIC_IP6S = ["fd99::1", "fd99::2"] as const;
export const FABRIC_IP6_PREFIX = 64;

export interface FabricNetwork {
  readonly dir: string;
  /** guest i's end of the wire */
  readonly links: readonly [DgramLink, DgramLink];
  /** removes the dir; safe to call twice */
  dispose(): Promise<void>;
}

export async function createFabricNetwork(): Promise<FabricNetwork> {
  sweepStaleRunDirs(DIR_PREFIX);
  const dir = await createRunDir(DIR_PREFIX);
  const unregister = onProcessExit(() => rmSync(dir, { recursive: true, force: true }));
  const ends = [join(dir, "guest0.sock"), join(dir, "guest1.sock")] as const;
  let disposed: Promise<void> | undefined;
  return {
    dir,
    links: [
      { localPath: ends[0], remotePath: ends[1] },
      { localPath: ends[1], remotePath: ends[0] },
    ],
    dispose() {
      disposed ??= rm(dir, { recursive: true, force: true }).then(unregister);
      return disposed;
    },
  };
}
