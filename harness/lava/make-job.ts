/**
 * `hil lava-job`: a directory a LAVA lab can run: the kernel (bzImage), a ramdisk that carries the
 * guest userspace, the kernel's modules, hil_kverbs and the runner (/hil-lava), the job definition
 * (job.yaml, device type qemu) and the plan `hil judge` reads the job's log with. Written whole or
 * not at all: it is assembled beside the target and renamed into place.
 */

import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { HilError } from "../../util/errors.ts";
import { packageVersion } from "../../util/package.ts";
import { type CpioEntry, writeCpioGz } from "../image/cpio.ts";
import { buildGuestToolsLayer } from "../image/guest-tools.ts";
import { buildInitramfs } from "../image/initramfs.ts";
import { buildGuestModulesLayer } from "../image/kmod.ts";
import { buildKverbsModule } from "../image/kverbs-module.ts";
import { buildKernel } from "../kernel/build.ts";
import type { KernelRequest } from "../kernel/types.ts";
import type { DriverName, OracleProfile, Scenario } from "../scenario/schema.ts";
import { lavaJobYaml } from "./job.ts";
import { buildLavaPlan, LAVA_PLAN_FILE, type LavaPlan, planKernelOf, planWatchdogMs } from "./plan.ts";
import { writeSingleArchiveRamdisk } from "./ramdisk.ts";
import { LAVA_DIR, lavaRunnerFiles } from "./runner.ts";

export const LAVA_JOB_FILE = "job.yaml";
export const LAVA_KERNEL_FILE = "bzImage";
export const LAVA_RAMDISK_FILE = "ramdisk.cpio.gz";
/** the console on the first serial port, as hil's own guests have it, and init's console shell */
export const LAVA_KERNEL_ARGS = "console=ttyS0,115200 no_timer_check panic=-1 hil.shell";
/** the shell prompt init gives the console with hil.shell */
export const LAVA_PROMPT = "hil# ";

export interface LavaJobRequest {
  kernel: KernelRequest;
  scenarios: readonly Scenario[];
  driver: DriverName;
  deviceProfile?: string;
  outDir: string;
  /** where the lab fetches bzImage and the ramdisk from (default: file:// URLs of outDir) */
  artifactUrl?: string;
  addr?: string;
  profiles?: readonly OracleProfile[];
  qemuOptions?: readonly string[];
}

async function checkOutDir(outDir: string): Promise<void> {
  if (!existsSync(outDir)) return;
  const entries = await readdir(outDir).catch(() => {
    throw new HilError(`${outDir} exists and is not a directory`, { where: "--out-dir" });
  });
  if (entries.length > 0)
    throw new HilError(`${outDir} is not empty: hil lava-job writes a new directory`, { where: "--out-dir" });
}

/** The minutes the job's test may take: every watchdog of every scenario, and a margin. */
function testMinutes(plan: LavaPlan): number {
  return Math.ceil(planWatchdogMs(plan) / 60_000) + 5;
}

async function runnerLayer(plan: LavaPlan, path: string): Promise<void> {
  const root = LAVA_DIR.slice(1);
  const entries: CpioEntry[] = [
    { kind: "dir", path: root, mode: 0o755 },
    { kind: "dir", path: `${root}/s`, mode: 0o755 },
  ];
  for (const [name, text] of lavaRunnerFiles(plan))
    entries.push({
      kind: "file",
      path: `${root}/${name}`,
      mode: name.endsWith(".sh") ? 0o755 : 0o644,
      data: Buffer.from(text),
    });
  await writeCpioGz(path, entries);
}

export async function makeLavaJob(req: LavaJobRequest): Promise<{ outDir: string; plan: LavaPlan }> {
  const outDir = resolve(req.outDir);
  await checkOutDir(outDir);
  const kernel = await buildKernel(req.kernel);
  const plan = buildLavaPlan(req.scenarios, {
    hil: packageVersion(),
    kernel: planKernelOf(kernel),
    driver: req.driver,
    ...(req.deviceProfile ? { deviceProfile: req.deviceProfile } : {}),
    ...(req.addr ? { addr: req.addr } : {}),
    ...(req.profiles ? { profiles: req.profiles } : {}),
  });
  const mod = await buildKverbsModule(kernel);
  const [tools, modules] = await Promise.all([buildGuestToolsLayer(), buildGuestModulesLayer([mod])]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, modules] });

  await mkdir(dirname(outDir), { recursive: true });
  const work = join(dirname(outDir), `.${basename(outDir)}.tmp-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work);
  try {
    const runner = join(work, "runner.cpio.gz");
    await runnerLayer(plan, runner);
    await writeSingleArchiveRamdisk(join(work, LAVA_RAMDISK_FILE), [image.path, runner]);
    await rm(runner);
    await copyFile(kernel.bzImage, join(work, LAVA_KERNEL_FILE));
    const base = (req.artifactUrl ?? pathToFileURL(outDir).href).replace(/\/+$/, "");
    const minutes = testMinutes(plan);
    const job = lavaJobYaml({
      jobName: `erdma-hil ${plan.kernel.describe} ${plan.driver} ${plan.scenarios.length} scenario(s)`,
      kernelUrl: `${base}/${LAVA_KERNEL_FILE}`,
      ramdiskUrl: `${base}/${LAVA_RAMDISK_FILE}`,
      // a kernel's own arguments (Debian's built kernel: its module list, the hung-task timeout) first
      kernelArgs: [...(kernel.bootArgs ?? []), LAVA_KERNEL_ARGS].join(" "),
      testCommand: `sh ${LAVA_DIR}/run.sh`,
      prompt: LAVA_PROMPT,
      timeouts: { bootMinutes: 10, testMinutes: minutes, jobMinutes: minutes + 15 },
      ...(req.qemuOptions && req.qemuOptions.length > 0 ? { qemuExtraOptions: [...req.qemuOptions] } : {}),
      memoryMb: 1024,
    });
    await writeFile(join(work, LAVA_JOB_FILE), job);
    await writeFile(join(work, LAVA_PLAN_FILE), `${JSON.stringify(plan, null, 2)}\n`);
    await rm(outDir, { recursive: true, force: true });
    await rename(work, outDir);
  } catch (err) {
    await rm(work, { recursive: true, force: true });
    throw err;
  }
  return { outDir, plan };
}
