import type { Command } from "commander";
import { formatVersions, gatherVersions } from "../versions.ts";

export function register(program: Command): void {
  program
    .command("version")
    .description(
      "print hil's version and those of the QEMU, default kernel and guest rdma-core it would use (builds and fetches nothing; also hil --version)",
    )
    .option("--json", "print them as JSON")
    .action(async (opts: { json?: boolean }) => {
      const versions = await gatherVersions();
      process.stdout.write(opts.json ? `${JSON.stringify(versions, null, 2)}\n` : formatVersions(versions));
    });
}
