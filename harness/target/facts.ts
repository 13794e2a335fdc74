/**
 * What the harness needs to know of a target before it runs there, read in one command: the
 * running kernel, whether it is root, its RDMA devices (driver, firmware, netdev), the IPv4
 * addresses of its netdevs, the netdev of its default route (where soft-iWARP is linked), the tools
 * the runner uses; then the device the suite runs on, chosen from them.
 */
import { HilError } from "../../util/errors.ts";
import { KVERBS_MODULE } from "../image/kverbs-module.ts";
import type { DriverName } from "../scenario/schema.ts";

export interface TargetRdmaDevice {
  name: string;
  /** the kernel driver of its PCI function ("" for a software device) */
  driver: string;
  firmware: string;
  netdev: string;
}

export interface TargetFacts {
  release: string;
  root: boolean;
  kverbsLoaded: boolean;
  devices: TargetRdmaDevice[];
  /** netdev → its first IPv4 address */
  addresses: Map<string, string>;
  /** the netdev of the default route */
  routeNetdev: string;
  /** the console log level (the runner lowers it; the cleanup puts it back) */
  consoleLevel: string;
  missingTools: string[];
}

const RUNNER_TOOLS = [
  "insmod",
  "rmmod",
  "modprobe",
  "dmesg",
  "md5sum",
  "sed",
  "grep",
  "mktemp",
  "rdma",
  "ip",
];

export const FACTS_SCRIPT = [
  'echo "release=$(uname -r)"',
  'echo "uid=$(id -u)"',
  'echo "printk=$(cut -f1 /proc/sys/kernel/printk 2>/dev/null)"',
  `[ -d /sys/module/${KVERBS_MODULE} ] && echo kverbs=loaded`,
  `for d in /sys/class/infiniband/*; do [ -e "$d" ] || continue; n=\${d##*/}; ` +
    `drv=$(cd "$d/device/driver" 2>/dev/null && pwd -P); drv=\${drv##*/}; fw=$(cat "$d/fw_ver" 2>/dev/null); ` +
    `nd=$(rdma link show "$n/1" 2>/dev/null | sed -n 's/.* netdev \\([^ ]*\\).*/\\1/p'); ` +
    'echo "dev=$n|$drv|$fw|$nd"; done',
  `ip -4 -o addr show 2>/dev/null | sed -n 's/^[0-9]*: *\\([^ ]*\\) *inet \\([0-9.]*\\).*/addr=\\1|\\2/p'`,
  `echo "route=$(ip route show default 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1)"`,
  `for t in ${RUNNER_TOOLS.join(" ")}; do command -v "$t" >/dev/null 2>&1 || echo "missing=$t"; done`,
  "true",
].join("\n");

/**
 * The driver of a device registered without a parent device (erdma up to at least 6.12 sits under
 * /sys/devices/virtual/infiniband): the prefix its driver names it with (erdma_0, mlx5_1).
 */
function driverByName(name: string): string {
  const m = /^([a-z][a-z0-9]*?)_\d+$/.exec(name);
  return m?.[1] ?? "";
}

export function parseTargetFacts(text: string): TargetFacts {
  const facts: TargetFacts = {
    release: "",
    root: false,
    kverbsLoaded: false,
    devices: [],
    addresses: new Map(),
    routeNetdev: "",
    consoleLevel: "",
    missingTools: [],
  };
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1).trim();
    if (key === "release") facts.release = value;
    else if (key === "uid") facts.root = value === "0";
    else if (key === "kverbs") facts.kverbsLoaded = true;
    else if (key === "route") facts.routeNetdev = value;
    else if (key === "printk") facts.consoleLevel = value;
    else if (key === "missing") facts.missingTools.push(value);
    else if (key === "addr") {
      const [netdev = "", addr = ""] = value.split("|");
      if (netdev && addr && !facts.addresses.has(netdev))
        facts.addresses.set(netdev.replace(/@.*$/, ""), addr);
    } else if (key === "dev") {
      const [name = "", driver = "", firmware = "", netdev = ""] = value.split("|");
      if (name) facts.devices.push({ name, driver: driver || driverByName(name), firmware, netdev });
    }
  }
  if (!facts.release) throw new HilError("the target did not say which kernel it runs (uname -r)");
  return facts;
}

/** The device the suite runs on, and the address its QPs connect on. */
export interface TargetDevice {
  /** for siw: the device the runner links (siw0), which may not exist yet */
  name: string;
  netdev: string;
  addr: string;
  driver: string;
  firmware: string;
}

const SIW_DEVICE = "siw0";

function addressOf(facts: TargetFacts, netdev: string, device: string): string {
  const addr = facts.addresses.get(netdev);
  if (!addr)
    throw new HilError(
      `${device}'s netdev ${netdev} has no IPv4 address on the target: the scenarios connect over IPv4`,
      {
        where: "--target-device",
      },
    );
  return addr;
}

export function chooseTargetDevice(
  facts: TargetFacts,
  driver: DriverName,
  wanted: string | undefined,
): TargetDevice {
  if (driver === "siw") {
    if (wanted !== undefined && wanted !== SIW_DEVICE)
      throw new HilError(
        `--driver siw runs on ${SIW_DEVICE}, the soft-iWARP device hil links: drop --target-device`,
        {
          where: "--target-device",
        },
      );
    const existing = facts.devices.find((d) => d.name === SIW_DEVICE);
    const netdev = existing?.netdev || facts.routeNetdev;
    if (!netdev)
      throw new HilError("the target has no default route: hil links soft-iWARP to its netdev", {
        where: "--target",
      });
    return {
      name: SIW_DEVICE,
      netdev,
      addr: addressOf(facts, netdev, SIW_DEVICE),
      driver: "siw",
      firmware: "",
    };
  }
  const candidates = facts.devices.filter((d) => d.driver === driver);
  const listed = facts.devices.map((d) => `${d.name} (${d.driver || "software"})`).join(", ") || "none";
  let device: TargetRdmaDevice | undefined;
  if (wanted !== undefined) {
    device = facts.devices.find((d) => d.name === wanted);
    if (!device)
      throw new HilError(`the target has no RDMA device ${wanted}`, {
        where: "--target-device",
        detail: `its devices: ${listed}`,
      });
    if (device.driver !== driver)
      throw new HilError(`${wanted} is driven by ${device.driver || "software"}, not ${driver} (--driver)`, {
        where: "--target-device",
      });
  } else if (candidates.length === 1) device = candidates[0];
  else if (candidates.length === 0)
    throw new HilError(`the target has no ${driver} RDMA device`, {
      where: "--target",
      detail: `its devices: ${listed}`,
    });
  else
    throw new HilError(
      `the target has ${candidates.length} ${driver} devices: pick one with --target-device`,
      {
        where: "--target",
        detail: `its devices: ${listed}`,
      },
    );
  const chosen = device as TargetRdmaDevice;
  if (!chosen.netdev)
    throw new HilError(`cannot tell ${chosen.name}'s netdev (rdma link show ${chosen.name}/1 names none)`, {
      where: "--target-device",
    });
  return {
    name: chosen.name,
    netdev: chosen.netdev,
    addr: addressOf(facts, chosen.netdev, chosen.name),
    driver: chosen.driver,
    firmware: chosen.firmware,
  };
}

/** What the target must be before anything is copied to it. */
export function checkTargetReady(facts: TargetFacts, label: string, release: string): void {
  if (!facts.root)
    throw new HilError(`${label}: hil loads a kernel module there and needs root: log in as root`, {
      where: "--target",
    });
  if (facts.missingTools.length > 0)
    throw new HilError(`${label} lacks what the runner uses: ${facts.missingTools.join(", ")}`, {
      where: "--target",
    });
  if (facts.kverbsLoaded)
    throw new HilError(`${label} has ${KVERBS_MODULE} loaded already (another run there?): unload it first`, {
      where: "--target",
    });
  if (facts.release !== release)
    throw new HilError(`${label} runs Linux ${facts.release}, and ${KVERBS_MODULE} is built for ${release}`, {
      where: "--kernel",
      detail: "give --kernel the kernel the target runs (the build tree hil_kverbs is built against)",
    });
}
