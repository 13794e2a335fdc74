import { constants, existsSync, readFileSync, rmSync } from "node:fs";
import { access, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot, makeCacheDir } from "../../util/cache.ts";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { hashParts } from "../../util/hash.ts";
import { progress } from "../../util/progress.ts";
import { type Accel, qemuArgv } from "./cmdline.ts";
import { ConsoleFollower } from "./console.ts";
import { describeExit, QemuProcess } from "./process.ts";
import { createRunDir, sweepStaleRunDirs } from "./rundir.ts";
import type { QemuInstall } from "./types.ts";

export const PROBE_MARKER = "HIL-PROBE-OK";

/** How a tiny boot under KVM went. */
export type ProbeOutcome =
  | { kind: "ok"; ms: number }
  | { kind: "timeout"; ms: number }
  | { kind: "crash"; exit: string; detail: string };

export interface AccelDecision {
  accel: Accel;
  reason: string;
}

export interface AccelInput {
  /** HIL_ACCEL, as given */
  override?: string;
  /** /dev/kvm exists and is readable and writable */
  kvmDevice: boolean;
  /** the probe boot's outcome, once there is one */
  probe?: ProbeOutcome;
}

/**
 * Chooses the accelerator. Returns "probe" when only a real KVM boot can tell (nested KVM may
 * exist yet assert or hang).
 */
export function decideAccel(input: AccelInput): AccelDecision | "probe" {
  if (input.override !== undefined && input.override !== "") {
    if (input.override !== "kvm" && input.override !== "tcg") {
      throw new HilError(`HIL_ACCEL must be kvm or tcg (got ${JSON.stringify(input.override)})`);
    }
    if (input.override === "kvm" && !input.kvmDevice) {
      throw new HilError("HIL_ACCEL=kvm, but /dev/kvm is missing or not accessible");
    }
    return { accel: input.override, reason: `HIL_ACCEL=${input.override}` };
  }
  if (!input.kvmDevice) return { accel: "tcg", reason: "no usable /dev/kvm" };
  const probe = input.probe;
  if (!probe) return "probe";
  switch (probe.kind) {
    case "ok":
      return { accel: "kvm", reason: `a KVM probe boot reached userspace in ${probe.ms} ms` };
    case "timeout":
      return { accel: "tcg", reason: `a KVM probe boot hung (no marker within ${probe.ms} ms)` };
    case "crash":
      return {
        accel: "tcg",
        reason: `a KVM probe boot failed: QEMU ${probe.exit}${probe.detail ? `: ${probe.detail}` : ""}`,
      };
  }
}

export interface ProbeImage {
  kernel: string;
  initrd: string;
}

/** Boots `image` under KVM with hil.probe and waits for the marker; QEMU is always gone afterwards. */
export function probeKvm(qemu: QemuInstall, image: ProbeImage, timeoutMs: number): Promise<ProbeOutcome> {
  return probeBoot(qemu, image, "kvm", timeoutMs);
}

/**
 * A bare boot: QEMU with `-kernel`/`-initrd` and hil.probe, no NIC, timed from QEMU's start to
 * init's marker on the console. Used by the KVM probe and by the boot benchmark.
 */
export async function probeBoot(
  qemu: QemuInstall,
  image: ProbeImage,
  accel: Accel,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  sweepStaleRunDirs("hil-accel-");
  const dir = await createRunDir("hil-accel-");
  const unregister = onProcessExit(() => rmSync(dir, { recursive: true, force: true }));
  const consoleLog = join(dir, "console.log");
  const argv = qemuArgv({
    accel,
    memoryMiB: 256,
    cpus: 1,
    kernel: image.kernel,
    initrd: image.initrd,
    loglevel: 1,
    probe: true,
    consoleLog,
    qmpSocket: join(dir, "qmp.sock"),
    firmwareDirs: qemu.firmwareDirs,
  });
  const started = Date.now();
  const qemuProcess = QemuProcess.spawn(qemu.binary, argv, dir);
  const follower = new ConsoleFollower(consoleLog);
  follower.start();
  const marker = follower.waitFor(new RegExp(PROBE_MARKER));
  let timer: NodeJS.Timeout | undefined;
  try {
    const first = await Promise.race([
      marker.promise.then(() => "ok" as const),
      qemuProcess.exited.then(() => "exit" as const),
      new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), timeoutMs);
      }),
    ]);
    follower.poll();
    const ms = Date.now() - started;
    if (first === "ok") return { kind: "ok", ms };
    if (first === "timeout") return { kind: "timeout", ms };
    // QEMU may exit right after printing the marker; the final poll above has read it.
    if (follower.tail(1000).some((l) => l.includes(PROBE_MARKER))) return { kind: "ok", ms };
    return {
      kind: "crash",
      exit: describeExit(qemuProcess.exit),
      detail: qemuProcess.outputTail(3).join(" | "),
    };
  } finally {
    clearTimeout(timer);
    marker.cancel();
    await qemuProcess.killAndWait();
    follower.stop();
    await rm(dir, { recursive: true, force: true });
    unregister();
  }
}

async function kvmDeviceUsable(): Promise<boolean> {
  try {
    await access("/dev/kvm", constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function machineBootId(): string {
  const path = "/proc/sys/kernel/random/boot_id";
  return existsSync(path) ? readFileSync(path, "utf8").trim() : "unknown-boot";
}

/** Where a probe's answer is kept: valid for this machine boot and this QEMU binary. */
export function accelCachePath(qemu: QemuInstall, bootId = machineBootId()): string {
  return join(cacheRoot(), "accel", `${hashParts([bootId, qemu.binary, qemu.version]).slice(0, 32)}.json`);
}

export interface ResolveAccelOptions {
  env?: NodeJS.ProcessEnv;
  probeTimeoutMs?: number;
  /** whether /dev/kvm is usable (default: asked of the machine; tests say) */
  kvmDevice?: boolean;
  /** the probe boot (default probeKvm; tests fake it) */
  probe?: typeof probeKvm;
}

/** Probes in flight in this process, by cache path: guests booting side by side share one. */
const probing = new Map<string, Promise<AccelDecision>>();

/**
 * The accelerator to use: HIL_ACCEL, else the cached probe answer, else a fresh probe (one per
 * process at a time: a guest booting beside one that probes waits for its answer).
 */
export async function resolveAccel(
  qemu: QemuInstall,
  image: ProbeImage,
  opts: ResolveAccelOptions = {},
): Promise<AccelDecision> {
  const env = opts.env ?? process.env;
  const input: AccelInput = {
    override: env.HIL_ACCEL,
    kvmDevice: opts.kvmDevice ?? (await kvmDeviceUsable()),
  };
  const first = decideAccel(input);
  if (first !== "probe") return first;
  const cached = accelCachePath(qemu);
  let answer = probing.get(cached);
  if (!answer) {
    const probe = () => (opts.probe ?? probeKvm)(qemu, image, opts.probeTimeoutMs ?? 10_000);
    answer = probeOrRecall(input, cached, probe).finally(() => probing.delete(cached));
    probing.set(cached, answer);
  }
  return answer;
}

/** The answer kept in `cached` for this machine boot and binary, else a probe's, kept there. */
async function probeOrRecall(
  input: AccelInput,
  cached: string,
  probe: () => Promise<ProbeOutcome>,
): Promise<AccelDecision> {
  try {
    const saved = JSON.parse(await readFile(cached, "utf8")) as AccelDecision;
    if (saved.accel === "kvm" || saved.accel === "tcg") return saved;
  } catch {
    // no answer yet for this boot and binary
  }
  const step = progress.step("[qemu] probing KVM with a tiny boot");
  const outcome = await probe();
  const decision = decideAccel({ ...input, probe: outcome });
  if (decision === "probe") throw new Error("unreachable: a probe outcome always decides");
  step.succeed(`${decision.accel} (${decision.reason})`);
  await makeCacheDir(join(cacheRoot(), "accel"));
  const tmp = `${cached}.tmp-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(decision)}\n`);
  await rename(tmp, cached);
  return decision;
}
