/**
 * A software RDMA driver's device on a guest netdev (siw, rxe): its module loaded, then
 * `rdma link add <device> type <type> netdev <nic>` (iproute2's rdma tool, in the guest image),
 * waited for until the device is registered in /sys/class/infiniband.
 */
import { HilError } from "../../util/errors.ts";
import type { ModuleShell } from "../image/kmod.ts";
import type { SoftLink } from "../scenario/drivers.ts";

/** How the link script ends when the module does not load (not in the kernel, or refused). */
const NO_MODULE = 3;

/** The shell script that links `link` to `netdev` (exit 0 once the device is registered). */
export function softLinkScript(link: SoftLink, netdev: string): string {
  const dev = `/sys/class/infiniband/${link.device}`;
  return [
    `modprobe ${link.module} || exit ${NO_MODULE}`,
    `rdma link add ${link.device} type ${link.type} netdev ${netdev} || exit 1`,
    `for i in $(seq 50); do [ -e ${dev} ] && exit 0; sleep 0.1; done; exit 1`,
  ].join("; ");
}

/** Loads the driver and adds its link on `netdev`; returns the device's name once it is registered. */
export async function addSoftLink(guest: ModuleShell, link: SoftLink, netdev = "eth0"): Promise<string> {
  const r = await guest.exec(softLinkScript(link, netdev), { timeoutMs: 30_000 });
  const output = `${r.stdout}${r.stderr}`.trim();
  if (r.exitCode === NO_MODULE)
    throw new HilError(`the guest kernel cannot load ${link.module} (the ${link.type} driver)`, {
      detail: `${output}\nis the kernel built with its config? --driver ${link.type} adds guest/kconfig/${link.type}.config (--config ${link.type}) to the kernels hil builds`,
    });
  if (r.exitCode !== 0)
    throw new HilError(`cannot add the ${link.type} link ${link.device} on ${netdev}`, { detail: output });
  return link.device;
}
