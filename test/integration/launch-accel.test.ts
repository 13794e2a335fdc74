import t from "tap";
import { probeKvm, resolveAccel } from "../../qemu/launch/accel.ts";
import { bootArtifacts } from "../support/guest.ts";

t.setTimeout(60 * 60 * 1000);

const artifacts = await bootArtifacts();
const image = { kernel: artifacts.kernel.bzImage, initrd: artifacts.initrd };

t.test("a real KVM probe ends one way or another, within its timeout, leaving no QEMU", async (t) => {
  const started = Date.now();
  const outcome = await probeKvm(artifacts.qemu, image, 15_000);
  const ms = Date.now() - started;
  t.comment(`probe outcome here: ${JSON.stringify(outcome)} after ${ms} ms`);
  t.ok(["ok", "timeout", "crash"].includes(outcome.kind));
  t.ok(ms < 25_000, "the probe does not outlive its timeout");
});

t.test("HIL_ACCEL wins; the decision is cached per boot and binary", async (t) => {
  t.same(await resolveAccel(artifacts.qemu, image, { env: { HIL_ACCEL: "tcg" } }), {
    accel: "tcg",
    reason: "HIL_ACCEL=tcg",
  });
  const first = await resolveAccel(artifacts.qemu, image, { env: {}, probeTimeoutMs: 15_000 });
  const started = Date.now();
  const again = await resolveAccel(artifacts.qemu, image, { env: {} });
  t.same(again, first);
  t.ok(Date.now() - started < 1000, "the second answer comes from the cache");
  t.comment(`accelerator here: ${JSON.stringify(first)}`);
});
