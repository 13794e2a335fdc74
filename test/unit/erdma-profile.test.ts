// Device profiles as data: fixtures/profiles/*.json load into the profiles the core knows, and every
// bad file is one HilError naming the file and the field.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { builtinProfiles, profile2022, profileIbCompliant, profileReflush } from "../../qemu/erdma/index.ts";
import { DEFAULT_PROFILE, listProfiles, loadProfile, profilePath } from "../../qemu/erdma/profile-file.ts";

function strip<T extends { description?: string; source?: string }>(p: T): Omit<T, "description" | "source"> {
  const { description: _d, source: _s, ...rest } = p;
  return rest;
}

t.test("the shipped profiles are the core's profiles", async (t) => {
  t.equal(DEFAULT_PROFILE, "erdma-reflush");
  t.same(listProfiles(), Object.keys(builtinProfiles).sort(), "one file per built-in profile");
  t.same(strip(loadProfile("erdma-reflush")), profileReflush);
  t.same(strip(loadProfile("erdma-2022")), profile2022, "extends the default, two fields differ");
  t.same(strip(loadProfile("erdma-ib-compliant")), profileIbCompliant);
  t.same(strip(loadProfile()), profileReflush, "the default");
  t.match(loadProfile("erdma-2022").description, /2022/, "a profile says what it models");
  for (const name of listProfiles()) t.ok(loadProfile(name).source, `${name} documents its source`);
  t.equal(profilePath("erdma-2022"), join(profilePath("x"), "..", "erdma-2022.json"));
});

function expectError(t: Test, fn: () => unknown, where: string, message: RegExp, detail?: RegExp) {
  try {
    fn();
    t.fail("no error");
  } catch (err) {
    const e = err as { name: string; where?: string; message: string; detail?: string };
    t.equal(e.name, "HilError");
    t.equal(e.where, where, "names the file");
    t.match(e.message, message);
    if (detail) t.match(e.detail, detail, "names the field");
  }
}

t.test("bad profiles: one clear error naming the file and the field", async (t) => {
  const dir = t.testdir({
    "not-json.json": "{ name: ",
    "wrong-name.json": JSON.stringify({ name: "other", extends: "erdma-reflush" }),
    "bad-field.json": JSON.stringify({
      name: "bad-field",
      extends: "erdma-reflush",
      caps: { maxCqeLog2: 99 },
    }),
    "bad-enum.json": JSON.stringify({ name: "bad-enum", extends: "erdma-reflush", reflush: "sometimes" }),
    "unknown-key.json": JSON.stringify({ name: "unknown-key", extends: "erdma-reflush", colour: "blue" }),
    "bad-hex.json": JSON.stringify({ name: "bad-hex", extends: "erdma-reflush", version: "0xZZ" }),
    "missing.json": JSON.stringify({ name: "missing", protocol: "iwarp" }),
    "cycle-a.json": JSON.stringify({ name: "cycle-a", extends: "cycle-b" }),
    "cycle-b.json": JSON.stringify({ name: "cycle-b", extends: "cycle-a" }),
    "orphan.json": JSON.stringify({ name: "orphan", extends: "nowhere" }),
    "vectors.json": JSON.stringify({ name: "vectors", extends: "erdma-reflush", msixVectors: 33 }),
    "hex-ok.json": JSON.stringify({
      name: "hex-ok",
      extends: "erdma-reflush",
      fwVersion: "0x00020001",
      grpNum: 4,
    }),
  });
  const f = (n: string) => join(dir, n);
  expectError(
    t,
    () => loadProfile("no-such-profile"),
    profilePath("no-such-profile"),
    /no such device profile/,
  );
  expectError(t, () => loadProfile(f("not-json.json")), f("not-json.json"), /not valid JSON/);
  expectError(t, () => loadProfile(f("wrong-name.json")), f("wrong-name.json"), /name: "other" differs/);
  expectError(
    t,
    () => loadProfile(f("bad-field.json")),
    f("bad-field.json"),
    /invalid/,
    /^caps\.maxCqeLog2: /m,
  );
  expectError(t, () => loadProfile(f("bad-enum.json")), f("bad-enum.json"), /invalid/, /^reflush: /m);
  expectError(t, () => loadProfile(f("unknown-key.json")), f("unknown-key.json"), /invalid/, /colour/);
  expectError(t, () => loadProfile(f("bad-hex.json")), f("bad-hex.json"), /invalid/, /^version: .*0x/m);
  expectError(t, () => loadProfile(f("missing.json")), f("missing.json"), /invalid/, /^version: /m);
  expectError(t, () => loadProfile(f("cycle-a.json")), f("cycle-b.json"), /cycle/);
  expectError(t, () => loadProfile(f("orphan.json")), f("orphan.json"), /extends: no profile "nowhere"/);
  expectError(t, () => loadProfile(f("vectors.json")), f("vectors.json"), /invalid/, /^msixVectors: /m);
  const ok = loadProfile(f("hex-ok.json"));
  t.equal(ok.fwVersion, 0x0002_0001, "hex strings are numbers");
  t.equal(ok.grpNum, 4);
  t.equal(ok.caps.maxCqeLog2, profileReflush.caps.maxCqeLog2, "the rest from the base");
  writeFileSync(
    f("caps-merge.json"),
    JSON.stringify({ name: "caps-merge", extends: "erdma-reflush", caps: { atomic: true } }),
  );
  const merged = loadProfile(f("caps-merge.json"));
  t.equal(merged.caps.atomic, true, "caps are merged field by field");
  t.equal(merged.caps.qblock, profileReflush.caps.qblock);
});
