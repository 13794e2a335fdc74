import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  COMPLETE_MARK,
  describeEntry,
  inspectEntry,
  sizeDifference,
  writeMarker,
} from "../../util/cache-manifest.ts";
import { tempDir } from "../support/temp-dir.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** An entry: two boot files, a bulk tree, a symlink, and (optionally) its marker. */
function makeEntry(t: Test): string {
  const dir = tempDir(t, "hil-manifest-test-");
  writeFileSync(join(dir, "bzImage"), "kernel image bytes");
  mkdirSync(join(dir, "modules", "lib"), { recursive: true });
  writeFileSync(join(dir, "modules", "lib", "a.ko"), "module");
  mkdirSync(join(dir, "build", "init"), { recursive: true });
  writeFileSync(join(dir, "build", "init", "main.o"), "object file");
  symlinkSync("/nowhere", join(dir, "build", "source"));
  return dir;
}

t.test(
  "a manifest: hashed files by size and sha256, bulk trees by size, links and the marker left out",
  async (t) => {
    const dir = makeEntry(t);
    writeFileSync(join(dir, COMPLETE_MARK), "2026-01-01T00:00:00.000Z\n");
    const m = await describeEntry(dir, { bulk: ["build"] });
    t.same(m.hashed, {
      bzImage: [18, sha256("kernel image bytes")],
      "modules/lib/a.ko": [6, sha256("module")],
    });
    t.same(m.sized, { "build/init/main.o": 11 });
  },
);

t.test("inspectEntry: absent, unrecorded (an older marker), intact", async (t) => {
  const dir = makeEntry(t);
  t.same(await inspectEntry(dir, { contents: true }), { state: "absent" });
  writeFileSync(join(dir, COMPLETE_MARK), "2026-01-01T00:00:00.000Z\n");
  t.same(await inspectEntry(dir, { contents: true }), { state: "unrecorded" });
  await writeMarker(dir, await describeEntry(dir, { bulk: ["build"] }));
  t.equal((await inspectEntry(dir, { contents: true })).state, "intact");
  t.same(
    readFileSync(join(dir, COMPLETE_MARK), "utf8").trim().startsWith("{"),
    true,
    "the marker is the manifest",
  );
});

t.test("a file cut short is found on the next use, digests checked or not", async (t) => {
  const dir = makeEntry(t);
  await writeMarker(dir, await describeEntry(dir, { bulk: ["build"] }));
  t.equal((await inspectEntry(dir, { contents: true })).state, "intact");
  truncateSync(join(dir, "bzImage"), 4);
  t.same(await inspectEntry(dir, { contents: false }), {
    state: "damaged",
    problem: { file: "bzImage", what: "is 4 bytes, recorded 18 bytes" },
  });
  rmSync(join(dir, "modules", "lib", "a.ko"));
  writeFileSync(join(dir, "bzImage"), "kernel image bytes");
  t.same(await inspectEntry(dir, { contents: false }), {
    state: "damaged",
    problem: { file: "modules/lib/a.ko", what: "is missing" },
  });
});

t.test("a same-size change is found by the digest; a bulk file by its size, with the digests", async (t) => {
  const dir = makeEntry(t);
  await writeMarker(dir, await describeEntry(dir, { bulk: ["build"] }));
  writeFileSync(join(dir, "bzImage"), "KERNEL image bytes");
  t.equal((await inspectEntry(dir, { contents: false })).state, "intact", "sizes alone do not see it");
  t.same(await inspectEntry(dir, { contents: true }), {
    state: "damaged",
    problem: { file: "bzImage", what: "differs from its recorded sha256" },
  });
  writeFileSync(join(dir, "bzImage"), "kernel image bytes");
  writeFileSync(join(dir, "build", "init", "main.o"), "obj");
  t.equal(
    (await inspectEntry(dir, { contents: false })).state,
    "intact",
    "bulk sizes wait for the contents check",
  );
  t.same(await inspectEntry(dir, { contents: true }), {
    state: "damaged",
    problem: { file: "build/init/main.o", what: "is 3 bytes, recorded 11 bytes" },
  });
});

t.test("digests are read once per process and marker; a new marker is checked again", async (t) => {
  const dir = makeEntry(t);
  await writeMarker(dir, await describeEntry(dir));
  t.equal((await inspectEntry(dir, { contents: true })).state, "intact");
  writeFileSync(join(dir, "bzImage"), "KERNEL image bytes");
  t.equal(
    (await inspectEntry(dir, { contents: true })).state,
    "intact",
    "checked already in this process: not read again",
  );
  const { execa } = await import("execa");
  const manifestModule = new URL("../../util/cache-manifest.ts", import.meta.url).href;
  const script = `
    import { inspectEntry } from ${JSON.stringify(manifestModule)};
    console.log(JSON.stringify(await inspectEntry(process.argv[1], { contents: true })));`;
  const child = await execa("node", ["--import", "tsx", "--input-type=module", "-e", script, dir]);
  t.same(
    JSON.parse(child.stdout),
    { state: "damaged", problem: { file: "bzImage", what: "differs from its recorded sha256" } },
    "another process reads them and finds the change",
  );
  writeFileSync(join(dir, "bzImage"), "kernel image bytes");
  await writeMarker(dir, await describeEntry(dir));
  writeFileSync(join(dir, "bzImage"), "KERNEL image bytes");
  t.equal(
    (await inspectEntry(dir, { contents: true })).state,
    "damaged",
    "a rewritten marker (an entry built again) is a new entry to check",
  );
});

t.test("a marker cut short is damage, not an older marker", async (t) => {
  const dir = makeEntry(t);
  await writeMarker(dir, await describeEntry(dir));
  const text = readFileSync(join(dir, COMPLETE_MARK), "utf8");
  writeFileSync(join(dir, COMPLETE_MARK), text.slice(0, 20));
  t.same(await inspectEntry(dir, { contents: false }), {
    state: "damaged",
    problem: { file: COMPLETE_MARK, what: "is not a manifest" },
  });
});

t.test("writeMarker leaves no temp file", async (t) => {
  const dir = makeEntry(t);
  await writeMarker(dir, await describeEntry(dir));
  const { readdirSync } = await import("node:fs");
  t.same(readdirSync(dir).sort(), [COMPLETE_MARK, "build", "bzImage", "modules"]);
});

t.test("sizes in notices: MB when they tell the difference, bytes when rounding hides it", async (t) => {
  t.equal(sizeDifference(3 * 1024 * 1024, 11 * 1024 * 1024), "is 3.0 MB, recorded 11 MB");
  t.equal(sizeDifference(2249727, 2249728), "is 2249727 bytes, recorded 2249728");
  t.equal(sizeDifference(0, 100), "is 0 bytes, recorded 100 bytes");
});
