/**
 * MMIO round trips through the device-server process, without a guest (mmio-round-trips.ts): the
 * server's share of a guest MMIO access, per REGION_READ and REGION_WRITE round trip.
 *
 *   node --import tsx harness/bench/vfio-user-mmio.ts [--device hil-testdev|erdma] [--trace]
 *        [--count 20000] [--warmup 2000] [--connect SOCKET] [--json]
 *
 * --trace has the server write its JSON-lines hardware trace to a temporary file (erdma: every
 * register access is a line), as the harness runs it. --connect measures a server started by hand
 * (under a profiler: `node --cpu-prof --import tsx qemu/device-server/main.ts ...`) instead of
 * starting one. The table (or JSON) goes to stdout.
 */
import { parseArgs } from "node:util";
import { closeFd, connectUnix } from "../../qemu/vfio-user/libc.ts";
import { isHilError } from "../../util/errors.ts";
import {
  DEVICES,
  type DeviceName,
  type MmioFigures,
  measureMmio,
  mmioTable,
  roundTrips,
} from "./mmio-round-trips.ts";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      device: { type: "string", default: "hil-testdev" },
      trace: { type: "boolean", default: false },
      count: { type: "string", default: "20000" },
      warmup: { type: "string", default: "2000" },
      connect: { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  const device = values.device as string;
  if (!(device in DEVICES)) throw new Error(`--device ${device}: one of ${Object.keys(DEVICES).join(", ")}`);
  const count = Number(values.count);
  const warmup = Number(values.warmup);
  if (!Number.isInteger(count) || count < 1) throw new Error(`--count ${values.count}: a whole number >= 1`);
  if (!Number.isInteger(warmup) || warmup < 0)
    throw new Error(`--warmup ${values.warmup}: a whole number >= 0`);
  let r: MmioFigures;
  if (values.connect === undefined) {
    r = await measureMmio(device as DeviceName, values.trace as boolean, count, warmup);
  } else {
    const fd = connectUnix(values.connect);
    try {
      r = {
        device: device as DeviceName,
        trace: values.trace as boolean,
        count,
        ...roundTrips(fd, device as DeviceName, count, warmup),
      };
    } finally {
      closeFd(fd);
    }
  }
  process.stdout.write(values.json ? `${JSON.stringify(r, null, 2)}\n` : `${mmioTable(r)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
