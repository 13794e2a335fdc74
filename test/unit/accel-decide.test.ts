import t from "tap";
import { accelCachePath, decideAccel, resolveAccel } from "../../qemu/launch/accel.ts";

t.test("no /dev/kvm: TCG without a probe", async (t) => {
  t.same(decideAccel({ kvmDevice: false }), { accel: "tcg", reason: "no usable /dev/kvm" });
});

t.test("/dev/kvm present: a probe decides", async (t) => {
  t.equal(decideAccel({ kvmDevice: true }), "probe");
  t.match(decideAccel({ kvmDevice: true, probe: { kind: "ok", ms: 900 } }), {
    accel: "kvm",
    reason: /900 ms/,
  });
});

t.test("a probe that hangs or crashes falls back to TCG and says why", async (t) => {
  t.match(decideAccel({ kvmDevice: true, probe: { kind: "timeout", ms: 20000 } }), {
    accel: "tcg",
    reason: /hung/,
  });
  t.match(
    decideAccel({
      kvmDevice: true,
      probe: { kind: "crash", exit: "was killed by SIGABRT", detail: "kvm_cpu_exec: Assertion failed" },
    }),
    { accel: "tcg", reason: /SIGABRT: kvm_cpu_exec: Assertion/ },
  );
});

t.test("HIL_ACCEL overrides, and is checked", async (t) => {
  t.same(decideAccel({ override: "tcg", kvmDevice: true }), { accel: "tcg", reason: "HIL_ACCEL=tcg" });
  t.same(decideAccel({ override: "kvm", kvmDevice: true, probe: { kind: "timeout", ms: 1 } }), {
    accel: "kvm",
    reason: "HIL_ACCEL=kvm",
  });
  t.throws(() => decideAccel({ override: "kvm", kvmDevice: false }), {
    name: "HilError",
    message: /\/dev\/kvm/,
  });
  t.throws(() => decideAccel({ override: "hvf", kvmDevice: true }), {
    name: "HilError",
    message: /kvm or tcg/,
  });
  t.same(
    decideAccel({ override: "", kvmDevice: false }),
    { accel: "tcg", reason: "no usable /dev/kvm" },
    "empty is unset",
  );
});

t.test("the probe answer is cached per machine boot and QEMU binary", async (t) => {
  const q = {
    binary: "/q/bin/qemu-system-x86_64",
    version: "10.2.2",
    origin: "built" as const,
    firmwareDirs: [],
  };
  t.equal(accelCachePath(q, "boot-a"), accelCachePath(q, "boot-a"));
  t.not(accelCachePath(q, "boot-a"), accelCachePath(q, "boot-b"));
  t.not(accelCachePath(q, "boot-a"), accelCachePath({ ...q, binary: "/other/qemu" }, "boot-a"));
});

t.test("guests booting side by side share one probe, and its answer is kept for the next", async (t) => {
  const env = { HIL_CACHE_DIR: t.testdir({}) };
  const qemu = { binary: "/opt/qemu/bin/qemu-system-x86_64", version: "10.2.2", firmwareDirs: [] } as never;
  const image = { kernel: "/k", initrd: "/i" };
  let probes = 0;
  const probe = async () => {
    probes++;
    await new Promise((r) => setTimeout(r, 50));
    return { kind: "timeout" as const, ms: 50 };
  };
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = env.HIL_CACHE_DIR;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
  const both = await Promise.all([
    resolveAccel(qemu, image, { env, kvmDevice: true, probe }),
    resolveAccel(qemu, image, { env, kvmDevice: true, probe }),
  ]);
  t.equal(probes, 1, "one probe for the two");
  t.same(both[0], both[1]);
  t.match(both[0], { accel: "tcg", reason: /hung/ });
  const later = await resolveAccel(qemu, image, { env, kvmDevice: true, probe });
  t.equal(probes, 1, "the next boot reads the kept answer");
  t.same(later, both[0]);
});
