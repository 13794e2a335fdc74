// Started by vfio-pci.test.ts: builds a fake host in argv[2], binds its erdma function to
// vfio-pci, says "bound" and waits for a signal (the exit hook must give the function back).
import { bindVfioPci } from "../../qemu/launch/vfio-pci.ts";
import { fakeHost } from "./fake-sysfs.ts";

const root = process.argv[2] ?? "";
const host = fakeHost(root, {
  functions: [{ bdf: "0000:03:00.0", ids: "1ded:107f", driver: "erdma", group: "7" }],
  drivers: ["vfio-pci"],
});
await bindVfioPci(host, "0000:03:00.0");
process.stdout.write(`bound ${host.driverOf("0000:03:00.0")}\n`);
setInterval(() => {}, 1000);
