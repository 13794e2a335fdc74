// The key of hil validate's cached base side: each thing that decides the base's verdicts changes
// it (the base kernel, the guest image, QEMU, driver, executor, the device profile's content, a
// scenario file's bytes, the scenario filter, the rule sets, hil's code); what does not decide
// them (the series, a profile's path when its content is the same, the rule sets' order, hil's
// documentation and tests, fixtures no run reads) leaves it as it was.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { PreparedGuest } from "../../harness/boot.ts";
import { loadScenarioFile } from "../../harness/scenario/load.ts";
import { SCENARIO_DIR } from "../../harness/scenario/select.ts";
import type { JobSpec } from "../../harness/workflows/job/job.ts";
import {
  type BaseKeyInputs,
  baseCacheKey,
  baseKeyInputs,
  HARNESS_SOURCES,
  harnessVersion,
} from "../../harness/workflows/validate/base-cache-key.ts";
import { PROFILES_DIR } from "../../qemu/erdma/profile-file.ts";
import { PACKAGE_ROOT } from "../../util/package.ts";
import { sourceFiles } from "../../util/source-digest.ts";

const INPUTS: BaseKeyInputs = {
  kernel: "k".repeat(64),
  image: "i".repeat(64),
  qemu: "10.2.2 /cache/qemu/x/bin/qemu-system-x86_64",
  driver: "erdma",
  executor: "kernel",
  deviceProfile: '{"name":"erdma-reflush"}',
  scenarios: [
    { name: "drain-qp-idle", sha256: "a".repeat(64), knownBugs: "[]" },
    { name: "post-send-in-error", sha256: "b".repeat(64), knownBugs: "[]" },
  ],
  meantOnly: false,
  rules: null,
  harness: "20.19.0:h",
};

t.test("every input changes the key", async (t) => {
  const key = baseCacheKey(INPUTS);
  t.match(key, /^[0-9a-f]{64}$/);
  t.equal(baseCacheKey({ ...INPUTS, scenarios: [...INPUTS.scenarios] }), key, "same inputs, same key");
  const [first, second] = INPUTS.scenarios as [BaseKeyInputs["scenarios"][0], BaseKeyInputs["scenarios"][0]];
  const variants: Record<string, BaseKeyInputs> = {
    kernel: { ...INPUTS, kernel: "l".repeat(64) },
    image: { ...INPUTS, image: "j".repeat(64) },
    qemu: { ...INPUTS, qemu: "10.2.3 /cache/qemu/x/bin/qemu-system-x86_64" },
    driver: { ...INPUTS, driver: "siw" },
    executor: { ...INPUTS, executor: "user" },
    deviceProfile: { ...INPUTS, deviceProfile: '{"name":"erdma-2022"}' },
    noDevice: { ...INPUTS, deviceProfile: null },
    scenarioContent: { ...INPUTS, scenarios: [{ ...first, sha256: "c".repeat(64) }, second] },
    scenarioKnownBugs: { ...INPUTS, scenarios: [first, { ...second, knownBugs: '[{"id":"x"}]' }] },
    scenarioLeftOut: { ...INPUTS, scenarios: [first] },
    scenarioOrder: { ...INPUTS, scenarios: [second, first] },
    meantOnly: { ...INPUTS, meantOnly: true },
    rules: { ...INPUTS, rules: ["ib"] },
    harness: { ...INPUTS, harness: "20.19.0:g" },
    node: { ...INPUTS, harness: "22.1.0:h" },
    rtlEngine: { ...INPUTS, device: '{"profile":"erdma-reflush","trace":"","rtl":"rtl"}' },
    rtlEngineBug: { ...INPUTS, device: '{"profile":"erdma-reflush","trace":"","rtl":"rtl+owner-stuck"}' },
  };
  const seen = new Map<string, string>([[key, "base"]]);
  for (const [name, v] of Object.entries(variants)) {
    const k = baseCacheKey(v);
    t.not(k, key, `${name} changes the key`);
    t.notOk(seen.has(k), `${name} gives a key of its own (not ${seen.get(k)}'s)`);
    seen.set(k, name);
  }
});

const PREPARED = {
  kernel: { key: "k".repeat(64) },
  initrd: "/cache/image/initramfs/x/initramfs.cpio.gz",
  initrdKey: "i".repeat(64),
  qemu: { version: "10.2.2", binary: "/cache/qemu/x/bin/qemu-system-x86_64" },
} as unknown as PreparedGuest;

const SPEC: JobSpec = {
  kernel: "debian:6.12",
  driver: "erdma",
  executor: "kernel",
  deviceProfile: "erdma-reflush",
  scenarios: "drain-qp-idle",
};

async function scenarioCopy(dir: string, name: string, edit?: (text: string) => string) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.yaml`);
  const text = readFileSync(join(SCENARIO_DIR, `${name}.yaml`), "utf8");
  writeFileSync(file, edit ? edit(text) : text);
  return loadScenarioFile(file);
}

t.test("the inputs of a base side: by content, not by name or path", async (t) => {
  const dir = t.testdir({});
  const scenario = await loadScenarioFile(join(SCENARIO_DIR, "drain-qp-idle.yaml"));
  const opts = { meantOnly: false, harness: "h" };
  const key = baseCacheKey(await baseKeyInputs(SPEC, PREPARED, [scenario], opts));
  const same = async (spec: JobSpec, msg: string, scenarios = [scenario]) =>
    t.equal(baseCacheKey(await baseKeyInputs(spec, PREPARED, scenarios, opts)), key, msg);
  const differs = async (spec: JobSpec, msg: string, scenarios = [scenario]) =>
    t.not(baseCacheKey(await baseKeyInputs(spec, PREPARED, scenarios, opts)), key, msg);

  await same(
    { ...SPEC, series: "fixtures/series/erdma-module-only.mbox" },
    "the series is the patched side's",
  );
  await same({ ...SPEC, scenarios: "drain-qp-id*" }, "another pattern selecting the same file");
  await same({ ...SPEC, configs: ["smp"] }, "config fragments count through the kernel's key");
  await same({ ...SPEC, deviceProfile: undefined }, "no profile named is the default one");
  mkdirSync(join(dir, "mine"));
  const copy = join(dir, "mine", "erdma-reflush.json");
  copyFileSync(join(PROFILES_DIR, "erdma-reflush.json"), copy);
  await same({ ...SPEC, deviceProfile: copy }, "the same profile from another path");
  await same(SPEC, "a copy of the scenario file with the same bytes", [
    await scenarioCopy(join(dir, "same"), "drain-qp-idle"),
  ]);

  const edited = JSON.parse(readFileSync(copy, "utf8"));
  edited.errorFlush = edited.errorFlush === "stop" ? "always" : "stop";
  writeFileSync(copy, JSON.stringify(edited));
  await differs({ ...SPEC, deviceProfile: copy }, "a profile with the same name and other behaviour");
  await differs({ ...SPEC, deviceProfile: "erdma-2022" }, "another profile");
  await differs({ ...SPEC, driver: "siw", deviceProfile: undefined }, "another driver, no device");
  await differs({ ...SPEC, executor: "user" }, "another executor");
  await differs({ ...SPEC, oracle: ["ib"] }, "fewer rule sets");
  await differs(SPEC, "the scenario file's content", [
    await scenarioCopy(join(dir, "edited"), "drain-qp-idle", (s) => `${s}\n# a comment\n`),
  ]);
  const a = baseCacheKey(
    await baseKeyInputs({ ...SPEC, oracle: ["linux", "ib"] }, PREPARED, [scenario], opts),
  );
  const b = baseCacheKey(
    await baseKeyInputs({ ...SPEC, oracle: ["ib", "linux", "ib"] }, PREPARED, [scenario], opts),
  );
  t.equal(a, b, "the rule sets' order and repeats do not count");
  t.not(
    baseCacheKey(await baseKeyInputs(SPEC, PREPARED, [scenario], { meantOnly: true, harness: "h" })),
    key,
    "leaving out scenarios not meant for the target",
  );
  t.not(
    baseCacheKey(await baseKeyInputs(SPEC, { ...PREPARED, initrdKey: "j".repeat(64) }, [scenario], opts)),
    key,
    "another guest image",
  );
});

t.test("hil's version is the content of its code: documentation, tests and fixtures aside", async (t) => {
  const root = t.testdir({
    harness: { oracle: { "rule.ts": "export const x = 1;\n" }, "README.md": "doc\n" },
    qemu: { erdma: { "model.ts": "export const y = 1;\n" } },
    guest: { kverbs: { "kv.c": "int x;\n" } },
    util: { ".x.ts.swp": "swap" },
    bin: { hil: "#!/bin/sh\n" },
    test: { "a.test.ts": "t\n" },
    fixtures: { series: { "a.mbox": "m\n" }, scenarios: { "s.yaml": "s\n" } },
    "package.json": "{}\n",
    "package-lock.json": "{}\n",
    "README.md": "r\n",
  });
  const v = harnessVersion(root);
  t.match(v, new RegExp(`^${process.versions.node.replace(/\./g, "\\.")}:[0-9a-f]{64}$`));
  const unchanged = (path: string, text: string) => {
    writeFileSync(join(root, path), text);
    t.equal(harnessVersion(root), v, `${path} is not hil's code`);
  };
  unchanged("README.md", "r2\n");
  unchanged("harness/README.md", "doc2\n");
  unchanged("test/a.test.ts", "t2\n");
  unchanged("fixtures/series/a.mbox", "m2\n");
  unchanged("fixtures/scenarios/s.yaml", "s2\n");
  unchanged("util/.x.ts.swp", "swap2");
  let last = v;
  for (const path of [
    "harness/oracle/rule.ts",
    "qemu/erdma/model.ts",
    "guest/kverbs/kv.c",
    "bin/hil",
    "package-lock.json",
  ]) {
    writeFileSync(join(root, path), `${readFileSync(join(root, path), "utf8")}// edited\n`);
    const now = harnessVersion(root);
    t.not(now, last, `${path} is hil's code`);
    last = now;
  }
  writeFileSync(join(root, "harness", "oracle", "new-rule.ts"), "export {};\n");
  t.not(harnessVersion(root), last, "a new file counts");
});

t.test("the real package: its code is covered, and it is read once per process", async (t) => {
  const files = sourceFiles(PACKAGE_ROOT, HARNESS_SOURCES);
  for (const f of [
    "harness/oracle/judge.ts",
    "qemu/erdma/profile-file.ts",
    "guest/common/commands.def",
    "package-lock.json",
  ])
    t.ok(files.includes(f), `${f} is in hil's version`);
  t.notOk(
    files.some(
      (f) =>
        f.startsWith("test/") || f.startsWith("fixtures/") || f.endsWith(".md") || f.includes("node_modules"),
    ),
    "no tests, fixtures, documentation or dependencies' files",
  );
  t.equal(harnessVersion(), harnessVersion());
});
