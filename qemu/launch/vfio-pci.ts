/**
 * A host PCI function passed through to a guest with QEMU's vfio-pci (hil's --device-pci): its
 * address checked and normalised, its IOMMU group checked the way the kernel's vfio checks it
 * (every other device of the group unbound, on vfio-pci or on a driver that leaves DMA to its
 * user: pci-stub, pcieport; PCI bridges are let through), refused while another process holds it
 * (its /dev/vfio/<group> or its /dev/infiniband/uverbs<n> open), then bound to vfio-pci through
 * driver_override and given back to its driver afterwards.
 *
 * Every sysfs write goes through HostPci.write, and sysfs and procfs are read under
 * HostPci.sysRoot and procRoot: a test hands a temp tree and a fake kernel that answers the
 * writes (test/support/fake-sysfs.ts). Reads and writes are synchronous (sysfs is), so the
 * release can run from a process-exit hook (util/cleanup.ts).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { execa } from "execa";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";

/** The driver a passed-through function is bound to. */
export const VFIO_PCI_DRIVER = "vfio-pci";

/**
 * Drivers that may hold another device of the group (the kernel's driver_managed_dma ones: they
 * do no DMA of their own), besides vfio-pci.
 */
const GROUP_SAFE_DRIVERS = new Set([VFIO_PCI_DRIVER, "pci-stub", "pcieport"]);

/** PCI class 06/04: a PCI-to-PCI bridge */
const PCI_CLASS_BRIDGE = 0x0604;

/** Where the host's PCI functions, their drivers and its processes are seen; every write to sysfs. */
export interface HostPci {
  /** sysfs's mount point ("/sys") */
  sysRoot: string;
  /** procfs's mount point ("/proc"): who holds /dev/vfio/<group> open */
  procRoot: string;
  /** writes `value` to the sysfs file `file` (a path under sysRoot) */
  write(file: string, value: string): void;
  /** loads a kernel module (vfio-pci, when its driver directory is absent) */
  modprobe(module: string): Promise<void>;
  /** how long a bind may take to show in sysfs (default 5000 ms) */
  bindTimeoutMs?: number;
}

/** The machine's own sysfs and procfs; modprobe through the host's modprobe. */
export function realHostPci(): HostPci {
  return {
    sysRoot: "/sys",
    procRoot: "/proc",
    write: (file, value) => writeFileSync(file, value),
    modprobe: async (module) => {
      const r = await execa("modprobe", [module], { reject: false });
      if (r.exitCode !== 0)
        throw new HilError(`modprobe ${module} failed: ${`${r.stderr}`.trim() || `exit ${r.exitCode}`}`, {
          where: "--device-pci",
        });
    },
  };
}

const BDF = /^(?:([0-9a-f]{4}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i;

/** A PCI address as --device-pci takes it (0000:03:00.0 or 03:00.0), normalised: domain 0000 when absent, lower case. */
export function parseBdf(value: string): string {
  const m = BDF.exec(value.trim());
  if (!m || Number.parseInt(m[3] ?? "", 16) > 0x1f)
    throw new HilError(
      `--device-pci takes a PCI address like 0000:03:00.0 or 03:00.0 (domain:bus:device.function, device 00-1f, function 0-7), got "${value}"`,
    );
  return `${m[1] ?? "0000"}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

/** One PCI function as sysfs shows it. */
export interface PciFunction {
  bdf: string;
  /** vendor:device, e.g. 1ded:107f */
  ids: string;
  /** the driver bound to it, if any */
  driver: string | undefined;
  /** the PCI class, e.g. 0x020000 */
  pciClass: number;
}

/** A function checked for passing through: it, its IOMMU group and the group's other members. */
export interface PassthroughCheck {
  device: PciFunction;
  /** the IOMMU group's number (/dev/vfio/<group>) */
  group: string;
  /** the group's other functions */
  peers: PciFunction[];
}

function devicesDir(host: HostPci): string {
  return join(host.sysRoot, "bus/pci/devices");
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
}

function linkName(link: string): string | undefined {
  try {
    return basename(readlinkSync(link));
  } catch {
    return undefined;
  }
}

/** The function at `bdf` (normalised) as sysfs shows it now. */
export function pciFunction(host: HostPci, bdf: string): PciFunction {
  const dir = join(devicesDir(host), bdf);
  const id = (f: string) => (readText(join(dir, f)) ?? "?").replace(/^0x/, "");
  return {
    bdf,
    ids: `${id("vendor")}:${id("device")}`,
    driver: linkName(join(dir, "driver")),
    pciClass: Number.parseInt(readText(join(dir, "class")) ?? "0", 16),
  };
}

function describe(f: PciFunction): string {
  return `${f.bdf} (${f.ids}, ${f.driver ? `driver ${f.driver}` : "no driver"})`;
}

/** A group member vfio lets stay where it is: unbound, on a DMA-free driver, or a bridge. */
function groupSafe(f: PciFunction): boolean {
  return f.driver === undefined || GROUP_SAFE_DRIVERS.has(f.driver) || f.pciClass >> 8 === PCI_CLASS_BRIDGE;
}

const NO_IOMMU =
  "has no IOMMU group: the IOMMU is off. vfio-pci needs one: boot the host with intel_iommu=on (Intel; amd_iommu is on by default on AMD unless amd_iommu=off) and VT-d/AMD-Vi enabled in the firmware; in a guest, give it a vIOMMU (QEMU: -device intel-iommu,caching-mode=on on q35) and a kernel with CONFIG_INTEL_IOMMU and CONFIG_VFIO_PCI";

/**
 * Checks that `bdf` (normalised) can be passed through, binding nothing: the function exists, has
 * an IOMMU group, the group is viable and nobody holds the function. Throws one HilError naming
 * what is wrong.
 */
export function checkPassthrough(host: HostPci, bdf: string): PassthroughCheck {
  const where = `--device-pci ${bdf}`;
  const dir = join(devicesDir(host), bdf);
  if (!existsSync(dir))
    throw new HilError(
      `no such PCI function on this host (${devicesDir(host)} has no ${bdf}; lspci -D lists them)`,
      { where },
    );
  const device = pciFunction(host, bdf);
  const group = linkName(join(dir, "iommu_group"));
  if (group === undefined) throw new HilError(NO_IOMMU, { where });
  const groupDir = join(host.sysRoot, "kernel/iommu_groups", group, "devices");
  let members: string[];
  try {
    members = readdirSync(groupDir);
  } catch {
    throw new HilError(`its IOMMU group ${group} has no ${groupDir}: the IOMMU is half set up`, { where });
  }
  const peers = members
    .filter((m) => m !== bdf)
    .sort()
    .map((m) => pciFunction(host, m));
  const blocking = peers.filter((p) => !groupSafe(p));
  if (blocking.length > 0)
    throw new HilError(
      `IOMMU group ${group} is not viable: ${blocking.map(describe).join(", ")} ${blocking.length === 1 ? "shares" : "share"} it on a driver that does DMA. vfio passes a whole group: unbind ${blocking.length === 1 ? "it" : "them"} (or bind ${blocking.length === 1 ? "it" : "them"} to vfio-pci) first, or use a slot with a group of its own`,
      { where },
    );
  checkNotInUse(host, device, group);
  return { device, group, peers };
}

/** The processes (pid and command) that hold one of `paths` open, read from procfs. */
export function holders(host: HostPci, paths: readonly string[]): string[] {
  const found: string[] = [];
  let pids: string[];
  try {
    pids = readdirSync(host.procRoot).filter((p) => /^\d+$/.test(p));
  } catch {
    return found;
  }
  for (const pid of pids) {
    if (Number(pid) === process.pid && host.procRoot === "/proc") continue;
    let fds: string[];
    try {
      fds = readdirSync(join(host.procRoot, pid, "fd"));
    } catch {
      continue; // gone, or not ours to look at
    }
    const held = fds.some((fd) => {
      try {
        return paths.includes(readlinkSync(join(host.procRoot, pid, "fd", fd)));
      } catch {
        return false;
      }
    });
    if (held) found.push(`pid ${pid} (${readText(join(host.procRoot, pid, "comm")) ?? "?"})`);
  }
  return found;
}

/** Refuses a function another process uses: its vfio group open (another QEMU), or its verbs device open. */
function checkNotInUse(host: HostPci, device: PciFunction, group: string): void {
  const where = `--device-pci ${device.bdf}`;
  if (device.driver === VFIO_PCI_DRIVER) {
    const users = holders(host, [`/dev/vfio/${group}`]);
    if (users.length > 0)
      throw new HilError(
        `is in use: it is on vfio-pci and ${users.join(", ")} ${users.length === 1 ? "holds" : "hold"} /dev/vfio/${group} open (another guest?)`,
        { where },
      );
    return;
  }
  let verbs: string[] = [];
  try {
    verbs = readdirSync(join(devicesDir(host), device.bdf, "infiniband_verbs"));
  } catch {
    // no verbs device
  }
  if (verbs.length > 0) {
    const users = holders(
      host,
      verbs.map((v) => `/dev/infiniband/${v}`),
    );
    if (users.length > 0)
      throw new HilError(
        `is in use: ${users.join(", ")} ${users.length === 1 ? "has" : "have"} its RDMA device (${verbs.map((v) => `/dev/infiniband/${v}`).join(", ")}) open on driver ${device.driver}`,
        { where },
      );
  }
}

/** A function bound to vfio-pci for a guest; release() gives it back. */
export interface PassthroughBinding {
  readonly bdf: string;
  readonly group: string;
  /** the driver it had before (undefined: none, or it was on vfio-pci already) */
  readonly originalDriver: string | undefined;
  /** QEMU's arguments for it */
  readonly qemuArgs: string[];
  /**
   * Gives it back: unbinds it from vfio-pci, restores driver_override and lets the kernel probe
   * its driver again. Idempotent; never throws: returns what went wrong (empty when all is back).
   * Run it after the QEMU that held it has exited (an unbind waits for vfio's user to let go).
   */
  release(): string[];
  /** moves the exit hook behind those registered since (QEMU's kill): call once QEMU has started */
  reorderExitHook(): void;
}

/** QEMU's -device argument (JSON form) passing the host function `bdf` through with vfio-pci. */
export function vfioPciArgs(bdf: string, id?: string): string[] {
  return ["-device", JSON.stringify({ driver: "vfio-pci", ...(id ? { id } : {}), host: bdf })];
}

function driverOverride(host: HostPci, bdf: string): string | undefined {
  const v = readText(join(devicesDir(host), bdf, "driver_override"));
  return v === undefined || v === "(null)" || v === "" ? undefined : v;
}

function sysWrite(host: HostPci, file: string, value: string, where: string): void {
  try {
    host.write(file, value);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const hint =
      code === "EACCES" || code === "EPERM" ? " (binding a PCI function to vfio-pci needs root)" : "";
    throw new HilError(
      `writing ${JSON.stringify(value.trim())} to ${file} failed: ${code ?? String(err)}${hint}`,
      { where, cause: err },
    );
  }
}

/** Sleeps `ms` without the event loop (release runs from exit hooks too). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Binds `bdf` (normalised) to vfio-pci after checkPassthrough: remembers its driver and
 * driver_override, writes "vfio-pci" to driver_override, unbinds it from its driver, asks the
 * kernel to probe it (drivers_probe) and waits for the driver link to show vfio-pci. A failure
 * midway gives the function back before the error propagates; a signal or exit before release()
 * gives it back too.
 */
export async function bindVfioPci(host: HostPci, bdf: string): Promise<PassthroughBinding> {
  const where = `--device-pci ${bdf}`;
  const { device, group } = checkPassthrough(host, bdf);
  const qemuArgs = vfioPciArgs(bdf);
  if (device.driver === VFIO_PCI_DRIVER)
    // someone bound it already (and nobody holds it): leave it as it was found
    return {
      bdf,
      group,
      originalDriver: undefined,
      qemuArgs,
      release: () => [],
      reorderExitHook: () => {},
    };
  if (!existsSync(join(host.sysRoot, "bus/pci/drivers", VFIO_PCI_DRIVER))) {
    await host.modprobe(VFIO_PCI_DRIVER);
    if (!existsSync(join(host.sysRoot, "bus/pci/drivers", VFIO_PCI_DRIVER)))
      throw new HilError(
        `modprobe vfio-pci left no ${join(host.sysRoot, "bus/pci/drivers", VFIO_PCI_DRIVER)} (a kernel without CONFIG_VFIO_PCI?)`,
        { where },
      );
  }
  const devDir = join(devicesDir(host), bdf);
  const originalDriver = device.driver;
  const originalOverride = driverOverride(host, bdf);
  let released = false;
  let unregister = () => {};
  const release = (): string[] => {
    if (released) return [];
    released = true;
    unregister();
    return giveBack(host, bdf, originalDriver, originalOverride);
  };
  unregister = onProcessExit(() => {
    release();
  });
  try {
    sysWrite(host, join(devDir, "driver_override"), VFIO_PCI_DRIVER, where);
    if (originalDriver) sysWrite(host, join(devDir, "driver/unbind"), bdf, where);
    sysWrite(host, join(host.sysRoot, "bus/pci/drivers_probe"), bdf, where);
    const deadline = Date.now() + (host.bindTimeoutMs ?? 5000);
    for (;;) {
      const now = pciFunction(host, bdf).driver;
      if (now === VFIO_PCI_DRIVER) break;
      if (Date.now() >= deadline)
        throw new HilError(
          `did not bind to vfio-pci (its driver is ${now ?? "none"} after drivers_probe; dmesg says why)`,
          { where },
        );
      await sleep(50);
    }
  } catch (err) {
    const problems = release();
    if (problems.length > 0 && err instanceof HilError)
      throw new HilError(err.message, {
        where,
        detail: `giving it back failed too:\n${problems.join("\n")}`,
        cause: err,
      });
    throw err;
  }
  return {
    bdf,
    group,
    originalDriver,
    qemuArgs,
    release,
    reorderExitHook() {
      if (released) return;
      unregister();
      unregister = onProcessExit(() => {
        release();
      });
    },
  };
}

/** Unbinds `bdf` from vfio-pci, restores its driver_override and has the kernel probe `driver` again. */
function giveBack(
  host: HostPci,
  bdf: string,
  driver: string | undefined,
  override: string | undefined,
): string[] {
  const problems: string[] = [];
  const devDir = join(devicesDir(host), bdf);
  const attempt = (file: string, value: string) => {
    try {
      host.write(file, value);
    } catch (err) {
      problems.push(
        `writing ${JSON.stringify(value.trim())} to ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  };
  if (pciFunction(host, bdf).driver === VFIO_PCI_DRIVER) attempt(join(devDir, "driver/unbind"), bdf);
  // "\n" clears an override (the kernel stores none for an empty line)
  attempt(join(devDir, "driver_override"), override ?? "\n");
  if (driver === undefined) return problems;
  attempt(join(host.sysRoot, "bus/pci/drivers_probe"), bdf);
  const deadline = Date.now() + Math.min(host.bindTimeoutMs ?? 5000, 5000);
  let now = pciFunction(host, bdf).driver;
  while (now !== driver && Date.now() < deadline) {
    sleepSync(50);
    now = pciFunction(host, bdf).driver;
  }
  if (now !== driver) {
    // drivers_probe picks by match; the driver's own bind file takes it by name
    const bind = join(host.sysRoot, "bus/pci/drivers", driver, "bind");
    if (now === undefined && existsSync(bind)) attempt(bind, bdf);
    now = pciFunction(host, bdf).driver;
    if (now !== driver)
      problems.push(`${bdf} is on ${now ?? "no driver"}, not back on ${driver} (echo ${bdf} > ${bind})`);
  }
  return problems;
}
