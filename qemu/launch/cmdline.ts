import { HilError } from "../../harness/util/errors.ts";

export type Accel = "kvm" | "tcg";

/** Everything that decides a guest's QEMU command line. */
export interface GuestSpec {
  accel: Accel;
  memoryMiB: number;
  /**
   * Guest RAM as a shared memfd (default): QEMU hands vfio-user servers an fd to map. Private RAM
   * makes them reach guest memory through DMA_READ/DMA_WRITE messages instead.
   */
  sharedMemory?: boolean;
  cpus: number;
  kernel: string;
  initrd: string;
  /** one OpenSSH public key line, handed to init as hil.authkey */
  authorizedKey?: string;
  /** kernel console loglevel (0-8) */
  loglevel: number;
  /** `hil.probe`: init prints its marker and powers off at once */
  probe?: boolean;
  /** further kernel parameters, appended last (so they win) */
  kernelArgs?: readonly string[];
  consoleLog: string;
  qmpSocket: string;
  /** user networking with SSH forwarded from 127.0.0.1:sshPort; absent: no NIC at all */
  network?: { sshPort: number; mac: string };
  firmwareDirs: readonly string[];
  /** more -device/-object/... arguments, e.g. the erdma device behind vfio-user */
  extraArgs?: readonly string[];
}

/** The kernel refuses longer command lines (COMMAND_LINE_SIZE on x86). */
export const KERNEL_CMDLINE_MAX = 2048;

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

export function authKeyParam(publicKeyLine: string): string {
  return `hil.authkey=${Buffer.from(`${publicKeyLine.trim()}\n`, "utf8").toString("base64")}`;
}

export function kernelCommandLine(spec: GuestSpec): string {
  // no_timer_check: under TCG on a loaded host the IO-APIC timer check can fail and panic the boot
  const params = ["console=ttyS0,115200", "panic=-1", "no_timer_check", `loglevel=${spec.loglevel}`];
  if (spec.probe) params.push("hil.probe");
  if (spec.authorizedKey) params.push(authKeyParam(spec.authorizedKey));
  params.push(...(spec.kernelArgs ?? []));
  const line = params.join(" ");
  if (Buffer.byteLength(line) >= KERNEL_CMDLINE_MAX) {
    throw new HilError(
      `the kernel command line is ${Buffer.byteLength(line)} bytes; the limit is ${KERNEL_CMDLINE_MAX - 1}`,
      {
        detail: line,
      },
    );
  }
  return line;
}

function checkSpec(spec: GuestSpec): void {
  if (!Number.isInteger(spec.memoryMiB) || spec.memoryMiB < 128) {
    throw new HilError(`guest memory must be a whole number of MiB, at least 128 (got ${spec.memoryMiB})`);
  }
  if (!Number.isInteger(spec.cpus) || spec.cpus < 1)
    throw new HilError(`guest CPUs must be at least 1 (got ${spec.cpus})`);
  if (spec.network) {
    const { mac, sshPort } = spec.network;
    if (!MAC.test(mac)) throw new HilError(`bad MAC address ${JSON.stringify(mac)} (want xx:xx:xx:xx:xx:xx)`);
    if ((Number.parseInt(mac.slice(0, 2), 16) & 1) === 1)
      throw new HilError(`MAC address ${mac} is a multicast address`);
    if (!Number.isInteger(sshPort) || sshPort < 1 || sshPort > 65535)
      throw new HilError(`bad SSH port ${sshPort}`);
  }
}

/** A value inside a QEMU "key=value,..." option: commas are doubled. */
export function optValue(value: string): string {
  return value.replaceAll(",", ",,");
}

/** QEMU's arguments (without the binary) for a guest. Pure: the same spec gives the same argv. */
export function qemuArgv(spec: GuestSpec): string[] {
  checkSpec(spec);
  const argv = ["-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"];
  for (const dir of spec.firmwareDirs) argv.push("-L", dir);
  argv.push(
    "-machine",
    "q35,memory-backend=ram0",
    "-accel",
    spec.accel,
    "-cpu",
    spec.accel === "kvm" ? "host" : "max",
    "-smp",
    String(spec.cpus),
    "-m",
    `${spec.memoryMiB}M`,
    "-object",
    spec.sharedMemory === false
      ? `memory-backend-ram,id=ram0,size=${spec.memoryMiB}M`
      : `memory-backend-memfd,id=ram0,size=${spec.memoryMiB}M,share=on`,
    "-kernel",
    spec.kernel,
    "-initrd",
    spec.initrd,
    "-append",
    kernelCommandLine(spec),
    "-chardev",
    `file,id=console,path=${optValue(spec.consoleLog)}`,
    "-serial",
    "chardev:console",
    "-chardev",
    `socket,id=qmp,path=${optValue(spec.qmpSocket)},server=on,wait=off`,
    "-mon",
    "chardev=qmp,mode=control",
  );
  if (spec.network) {
    argv.push(
      "-netdev",
      `user,id=net0,hostfwd=tcp:127.0.0.1:${spec.network.sshPort}-:22`,
      "-device",
      `virtio-net-pci,netdev=net0,mac=${spec.network.mac.toLowerCase()},romfile=`,
    );
  }
  argv.push(...(spec.extraArgs ?? []));
  return argv;
}

/** The -device argument (JSON form) attaching a PCI device served over vfio-user at `socketPath`. */
export function vfioUserPciArgs(socketPath: string, id?: string): string[] {
  const device = {
    driver: "vfio-user-pci",
    ...(id ? { id } : {}),
    socket: { type: "unix", path: socketPath },
  };
  return ["-device", JSON.stringify(device)];
}
