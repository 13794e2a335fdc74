import type { Command } from "commander";
import { CHROMIUM_PACKAGE } from "../report/browser-find.ts";
import { type LavaSetup, runSetup } from "../setup.ts";

function lavaLine(lava: LavaSetup): string {
  if (!lava.lavaRun) return "lava: none (validating LAVA jobs needs lava-run: hil setup --lava installs it)";
  if (!lava.deviceTypes) return `lava: ${lava.lavaRun} (hil setup --lava also fetches LAVA's device types)`;
  return `lava: ${lava.lavaRun}, device types ${lava.deviceTypes.dir} (from ${lava.deviceTypes.deb})`;
}

export function register(program: Command): void {
  program
    .command("setup")
    .description(
      "install what is missing: host Debian packages, QEMU >= 10.1 with vfio-user-pci, the default kernel source",
    )
    .option(
      "--browser",
      `also install Debian's ${CHROMIUM_PACKAGE}, the headless browser hil report --screenshot draws the HTML report with`,
    )
    .option(
      "--lava",
      "also install Debian's lava-dispatcher (lava-run) and fetch LAVA's device-type templates, to validate LAVA jobs",
    )
    .option("--json", "print what was found or installed as JSON")
    .action(async (opts: { browser?: boolean; lava?: boolean; json?: boolean }) => {
      const report = await runSetup({
        ...(opts.browser ? { browser: true } : {}),
        ...(opts.lava ? { lava: true } : {}),
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else {
        process.stdout.write(`qemu: ${report.qemu.binary} (${report.qemu.version}, ${report.qemu.origin})\n`);
        process.stdout.write(
          `host packages: ${report.installedPackages.length ? `installed ${report.installedPackages.join(" ")}` : "all present"}\n`,
        );
        process.stdout.write(`kernel source ${report.kernelSource.base}: ${report.kernelSource.dir}\n`);
        process.stdout.write(
          report.browser
            ? `browser: ${report.browser.binary} (${report.browser.source})\n`
            : "browser: none (hil report --screenshot needs one: hil setup --browser installs it)\n",
        );
        process.stdout.write(`${lavaLine(report.lava)}\n`);
      }
    });
}
