import { HilError } from "../../util/errors.ts";

export type Accel = "kvm" | "tcg";

/**
 * A point-to-point Ethernet link to another guest: QEMU's `dgram` netdev over unix datagram
 * sockets. QEMU binds `localPath` (removing a stale file first) and sends to `remotePath`, the
 * other guest's `localPath`; frames sent before the other guest is up are dropped, as on a wire.
 */
export interface DgramLink {
  localPath: string;
  remotePath: string;
}

/** A guest's NIC on the fabric network (the one the erdma device binds to), with a static IPv4. */
export interface FabricNic {
  mac: string;
  /** the guest's address and prefix on the fabric, e.g. 10.99.0.1/24 (init sets it: hil.fabric_ip) */
  ipCidr: string;
  link: DgramLink;
}

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
  /** user networking, restricted, with SSH forwarded from 127.0.0.1:sshPort (userNetdev); absent: no NIC at all */
  network?: { sshPort: number; mac: string };
  firmwareDirs: readonly string[];
  /** a second NIC on a network shared with other guests; needs `network` (the SSH NIC) too */
  fabric?: FabricNic;
  /** more -device/-object/... arguments, e.g. the erdma device behind vfio-user */
  extraArgs?: readonly string[];
}

/** The kernel refuses longer command lines (COMMAND_LINE_SIZE on x86). */
export const KERNEL_CMDLINE_MAX = 2048;

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;
const IPV4_CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;
/** sun_path holds 108 bytes with the terminating NUL */
const UNIX_PATH_MAX = 107;
/** QEMU's netdev id of the fabric NIC */
export const FABRIC_NETDEV_ID = "fabric0";

export function authKeyParam(publicKeyLine: string): string {
  return `hil.authkey=${Buffer.from(`${publicKeyLine.trim()}\n`, "utf8").toString("base64")}`;
}

export function kernelCommandLine(spec: GuestSpec): string {
  // no_timer_check: under TCG on a loaded host the IO-APIC timer check can fail and panic the boot
  // unknown_nmi_panic: an NMI the harness injects into a frozen guest makes it print the CPU's
  // stack and end (harness/suite/freeze.ts)
  // pty.legacy_count=0: tinyconfig keeps CONFIG_LEGACY_PTYS, whose 256 BSD pty pairs pty_init
  // registers one by one (0.16 s of each TCG boot); dropbear uses /dev/ptmx. A kernel without
  // legacy ptys (Debian's) ignores the unused module parameter.
  const params = [
    "console=ttyS0,115200",
    "panic=-1",
    "no_timer_check",
    `loglevel=${spec.loglevel}`,
    "unknown_nmi_panic=1",
    "pty.legacy_count=0",
  ];
  if (spec.probe) params.push("hil.probe");
  if (spec.authorizedKey) params.push(authKeyParam(spec.authorizedKey));
  if (spec.fabric) params.push(...fabricParams(spec.fabric));
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

/** What init needs to configure the fabric NIC: which NIC (by MAC) and its address. */
export function fabricParams(nic: FabricNic): string[] {
  return [`hil.fabric_mac=${nic.mac.toLowerCase()}`, `hil.fabric_ip=${nic.ipCidr}`];
}

function checkMac(mac: string, what: string): void {
  if (!MAC.test(mac))
    throw new HilError(`bad ${what} MAC address ${JSON.stringify(mac)} (want xx:xx:xx:xx:xx:xx)`);
  if ((Number.parseInt(mac.slice(0, 2), 16) & 1) === 1)
    throw new HilError(`${what} MAC address ${mac} is a multicast address`);
}

function checkFabric(fabric: FabricNic, network: GuestSpec["network"]): void {
  checkMac(fabric.mac, "fabric NIC");
  if (!network) throw new HilError("a fabric NIC needs the SSH NIC too (spec.network)");
  if (network.mac.toLowerCase() === fabric.mac.toLowerCase())
    throw new HilError(`the fabric NIC and the SSH NIC both have the MAC ${fabric.mac}: each needs its own`);
  const m = IPV4_CIDR.exec(fabric.ipCidr);
  const octets = m?.slice(1, 5).map(Number) ?? [];
  const prefix = Number(m?.[5]);
  if (!m || octets.some((o) => o > 255) || prefix < 1 || prefix > 30)
    throw new HilError(
      `bad fabric address ${JSON.stringify(fabric.ipCidr)} (want a.b.c.d/prefix, prefix 1-30)`,
    );
  const { localPath, remotePath } = fabric.link;
  if (!localPath || !remotePath || localPath === remotePath)
    throw new HilError(
      `a fabric link needs two different socket paths (local ${JSON.stringify(localPath)}, remote ${JSON.stringify(remotePath)})`,
    );
  for (const path of [localPath, remotePath])
    if (Buffer.byteLength(path) > UNIX_PATH_MAX)
      throw new HilError(`the fabric socket path is longer than ${UNIX_PATH_MAX} bytes`, { where: path });
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
  if (spec.fabric) checkFabric(spec.fabric, spec.network);
}

/** A value inside a QEMU "key=value,..." option: commas are doubled. */
export function optValue(value: string): string {
  return value.replaceAll(",", ",,");
}

/**
 * The CPU a TCG guest gets: QEMU's max model without 5-level paging. With LA57, Linux 6.12's
 * pgtable_l5_enabled() is cpu_feature_enabled(X86_FEATURE_LA57) (asm/pgtable_64_types.h), which
 * identify_cpu() clears for the boot CPU with interrupts on (cpu/common.c:1899, the memset of
 * x86_capability) before alternatives are patched; KASAN's shadow bounds follow it
 * (asm/kasan.h KASAN_SHADOW_START), so an interrupt in that window reports its per-CPU read at a
 * 5-level direct-map address as a wild-memory-access, taints the kernel and turns lockdep off
 * (seen in 4 of 57 debug-kernel boots of the nightly plan, 2026-12-06). Servers rarely run LA57.
 */
export const TCG_CPU = "max,la57=off";

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
    spec.accel === "kvm" ? "host" : TCG_CPU,
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
      userNetdev(spec.network.sshPort),
      "-device",
      `virtio-net-pci,netdev=net0,mac=${spec.network.mac.toLowerCase()},romfile=`,
    );
  }
  if (spec.fabric) argv.push(...fabricNicArgs(spec.fabric));
  argv.push(...(spec.extraArgs ?? []));
  return argv;
}

/**
 * The SSH NIC's user network: the host's 127.0.0.1:sshPort forwarded to the guest's port 22, and
 * nothing else. restrict=on isolates the guest: it cannot open connections to the host (10.0.2.2
 * is the host's loopback in QEMU's slirp) or through it to anywhere; forwarding rules still work
 * (QEMU 10.2.2, qemu-options.hx on restrict=on|off: "it will not be able to contact the host and
 * no guest IP packets will be routed over the host to the outside. This option does not affect
 * any explicitly set forwarding rules"). The guest runs a kernel built from a series no one has
 * reviewed yet: it must not reach the host's loopback services (another guest's SSH, a server
 * bound to 127.0.0.1), only be reached on its own forwarded port.
 */
export function userNetdev(sshPort: number): string {
  return `user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${sshPort}-:22`;
}

/** The fabric NIC: a virtio-net behind a dgram netdev over unix datagram sockets (no root, no tap). */
export function fabricNicArgs(nic: FabricNic): string[] {
  const { localPath, remotePath } = nic.link;
  return [
    "-netdev",
    `dgram,id=${FABRIC_NETDEV_ID},local.type=unix,local.path=${optValue(localPath)},remote.type=unix,remote.path=${optValue(remotePath)}`,
    "-device",
    `virtio-net-pci,netdev=${FABRIC_NETDEV_ID},mac=${nic.mac.toLowerCase()},romfile=`,
  ];
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
