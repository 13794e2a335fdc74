// Started by launch-failure.test.ts: boots a guest, reports QEMU's pid, waits to be interrupted.
import { startGuest } from "../../qemu/launch/guest.ts";
import { bootArtifacts } from "./guest.ts";

const artifacts = await bootArtifacts();
await startGuest({
  qemu: artifacts.qemu,
  kernel: artifacts.kernel.bzImage,
  initrd: artifacts.initrd,
  onQemuStarted: (info) => process.stdout.write(`${JSON.stringify(info)}\n`),
});
await new Promise(() => setInterval(() => {}, 1000));
