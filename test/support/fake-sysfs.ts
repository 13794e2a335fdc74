/**
 * A fake host for qemu/launch/vfio-pci.ts: a temp tree laid out as sysfs and procfs are
 * (bus/pci/devices/<bdf> with vendor, device, class, driver_override and the driver and
 * iommu_group links; kernel/iommu_groups/<n>/devices; bus/pci/drivers/<name>; proc/<pid>/fd links)
 * and a fake kernel that answers the writes the way Linux does: driver_override stores the name
 * ("(null)" when cleared), <driver>/unbind and <bdf>/driver/unbind drop the driver link,
 * drivers_probe binds an unbound function to its override (when that driver is loaded) or else to
 * the driver that matches its IDs, <driver>/bind binds by name. Every write is logged; a write can
 * be made to fail (EACCES, EBUSY, ...), and vfio-pci can be made to refuse a probe.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, join, relative } from "node:path";
import type { HostPci } from "../../qemu/launch/vfio-pci.ts";

export interface FakeFunction {
  bdf: string;
  /** vendor:device, e.g. 1ded:107f */
  ids: string;
  /** e.g. 0x020000 (default), 0x060400 a bridge */
  pciClass?: string;
  /** the driver bound now */
  driver?: string;
  /** the driver drivers_probe picks for it when no override says otherwise (default: `driver`) */
  native?: string;
  /** its IOMMU group (absent: no IOMMU) */
  group?: string;
  /** its verbs devices (infiniband_verbs/<name>) */
  verbs?: string[];
}

export interface FakeProcess {
  pid: number;
  comm: string;
  /** what its fds point at, e.g. /dev/vfio/7 */
  open: string[];
}

export interface FakeHost extends HostPci {
  /** every write, as "relative/path <- value" */
  readonly writes: string[];
  /** modules modprobe loaded */
  readonly modprobed: string[];
  /** the driver bound to `bdf` now */
  driverOf(bdf: string): string | undefined;
  /** its driver_override as sysfs reads it ("(null)" when none) */
  overrideOf(bdf: string): string;
  /** makes writes to paths ending in `suffix` fail with `code` */
  failWrites(suffix: string, code: string): void;
  /** vfio-pci refuses (or, with false, accepts again) every probe, as for a device it cannot handle */
  refuseVfioProbe(refuse: boolean): void;
  /** a process holding `paths` open */
  addProcess(p: FakeProcess): void;
}

export interface FakeHostOptions {
  functions: FakeFunction[];
  /** drivers loaded at the start (besides those the functions are bound to); vfio-pci is absent unless named */
  drivers?: string[];
  processes?: FakeProcess[];
  /** modprobe vfio-pci creates no driver (a kernel without it) */
  noVfioModule?: boolean;
}

/** Builds the tree under `root` (an empty directory, e.g. t.testdir()) and returns the fake host. */
export function fakeHost(root: string, opts: FakeHostOptions): FakeHost {
  const sys = join(root, "sys");
  const proc = join(root, "proc");
  const devices = join(sys, "bus/pci/devices");
  const drivers = join(sys, "bus/pci/drivers");
  mkdirSync(devices, { recursive: true });
  mkdirSync(drivers, { recursive: true });
  mkdirSync(proc, { recursive: true });
  writeFileSync(join(sys, "bus/pci/drivers_probe"), "");
  const native = new Map<string, string | undefined>();
  const failing = new Map<string, string>();
  let vfioRefuses = false;
  const writes: string[] = [];
  const modprobed: string[] = [];

  const loadDriver = (name: string) => {
    mkdirSync(join(drivers, name), { recursive: true });
    for (const f of ["bind", "unbind", "new_id"]) writeFileSync(join(drivers, name, f), "");
  };
  const devDir = (bdf: string) => join(devices, bdf);
  const driverOf = (bdf: string) => {
    try {
      return basename(readlinkSync(join(devDir(bdf), "driver")));
    } catch {
      return undefined;
    }
  };
  const overrideOf = (bdf: string) => readFileSync(join(devDir(bdf), "driver_override"), "utf8").trim();
  const bind = (bdf: string, driver: string) => {
    if (driver === "vfio-pci" && vfioRefuses) return;
    symlinkSync(join(drivers, driver), join(devDir(bdf), "driver"));
    writeFileSync(join(drivers, driver, bdf), "");
  };
  const unbind = (bdf: string) => {
    const d = driverOf(bdf);
    if (d === undefined) throw Object.assign(new Error("ENODEV"), { code: "ENODEV" });
    rmSync(join(devDir(bdf), "driver"));
    rmSync(join(drivers, d, bdf), { force: true });
  };
  const probe = (bdf: string) => {
    if (!existsSync(devDir(bdf))) throw Object.assign(new Error("ENODEV"), { code: "ENODEV" });
    if (driverOf(bdf) !== undefined) return;
    const override = overrideOf(bdf);
    if (override !== "(null)") {
      // an override binds that driver or none (the kernel's driver_override semantics)
      if (existsSync(join(drivers, override))) bind(bdf, override);
      return;
    }
    const n = native.get(bdf);
    if (n !== undefined && existsSync(join(drivers, n))) bind(bdf, n);
  };

  for (const d of opts.drivers ?? []) loadDriver(d);
  for (const f of opts.functions) {
    const dir = devDir(f.bdf);
    mkdirSync(dir, { recursive: true });
    const [vendor, device] = f.ids.split(":");
    writeFileSync(join(dir, "vendor"), `0x${vendor}\n`);
    writeFileSync(join(dir, "device"), `0x${device}\n`);
    writeFileSync(join(dir, "class"), `${f.pciClass ?? "0x020000"}\n`);
    writeFileSync(join(dir, "driver_override"), "(null)\n");
    native.set(f.bdf, f.native ?? f.driver);
    if (f.group !== undefined) {
      const groupDir = join(sys, "kernel/iommu_groups", f.group);
      mkdirSync(join(groupDir, "devices"), { recursive: true });
      symlinkSync(dir, join(groupDir, "devices", f.bdf));
      symlinkSync(groupDir, join(dir, "iommu_group"));
    }
    for (const v of f.verbs ?? []) mkdirSync(join(dir, "infiniband_verbs", v), { recursive: true });
    if (f.driver) {
      if (!existsSync(join(drivers, f.driver))) loadDriver(f.driver);
      bind(f.bdf, f.driver);
    }
  }
  const addProcess = (p: FakeProcess) => {
    const fd = join(proc, String(p.pid), "fd");
    mkdirSync(fd, { recursive: true });
    writeFileSync(join(proc, String(p.pid), "comm"), `${p.comm}\n`);
    for (const [i, target] of p.open.entries()) symlinkSync(target, join(fd, String(i + 3)));
  };
  for (const p of opts.processes ?? []) addProcess(p);

  const write = (file: string, value: string) => {
    const rel = relative(sys, file);
    writes.push(`${rel} <- ${JSON.stringify(value)}`);
    for (const [suffix, code] of failing)
      if (rel.endsWith(suffix)) throw Object.assign(new Error(code), { code });
    const bdfArg = value.trim();
    const ofDev = /^bus\/pci\/devices\/([^/]+)\/(driver_override|driver\/unbind)$/.exec(rel);
    const ofDriver = /^bus\/pci\/drivers\/([^/]+)\/(bind|unbind)$/.exec(rel);
    const enodev = () => Object.assign(new Error("ENODEV"), { code: "ENODEV" });
    if (ofDev?.[2] === "driver_override") {
      writeFileSync(file, `${bdfArg === "" ? "(null)" : bdfArg}\n`);
    } else if (ofDev) {
      if (ofDev[1] !== bdfArg) throw enodev();
      unbind(bdfArg);
    } else if (ofDriver?.[2] === "unbind") {
      if (driverOf(bdfArg) !== ofDriver[1]) throw enodev();
      unbind(bdfArg);
    } else if (ofDriver) {
      if (driverOf(bdfArg) !== undefined) throw Object.assign(new Error("EBUSY"), { code: "EBUSY" });
      bind(bdfArg, ofDriver[1] as string);
    } else if (rel === "bus/pci/drivers_probe") {
      probe(bdfArg);
    } else {
      throw new Error(`the fake kernel has no file ${rel}`);
    }
  };

  return {
    sysRoot: sys,
    procRoot: proc,
    bindTimeoutMs: 200,
    write,
    async modprobe(module) {
      modprobed.push(module);
      if (!opts.noVfioModule) loadDriver(module);
    },
    writes,
    modprobed,
    driverOf,
    overrideOf,
    failWrites: (suffix, code) => failing.set(suffix, code),
    refuseVfioProbe: (refuse) => {
      vfioRefuses = refuse;
    },
    addProcess,
  };
}
