import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  ARTIFACT_FILE,
  readArtifactRecord,
  writeArtifactRecord,
} from "../../harness/kernel/artifact-record.ts";
import type { KernelArtifact } from "../../harness/kernel/types.ts";
import { privateCacheDir } from "../support/private-cache.ts";

const KEY = "82bc32fddf7b6e8c0383d42e1ea6a6b78a8a697a309ce7f5ccd467c23f960feb";
const BASE_KEY = "de17630f02733ef87240d22ba5d580468811e1848ea10e884df4bd6e5345ea19";

/** Two cache roots in one temp dir, HIL_CACHE_DIR pointing at `use` while a test runs. */
function caches(t: Test): { a: string; b: string; use: (root: string) => void } {
  const dir = privateCacheDir(t, "hil-artifact-test-");
  return {
    a: join(dir, "a"),
    b: join(dir, "b"),
    use: (root) => {
      process.env.HIL_CACHE_DIR = root;
    },
  };
}

function artifactIn(root: string): KernelArtifact {
  const dir = join(root, "kernel", KEY);
  const srcDir = join(root, "kernel-base", BASE_KEY, "src");
  return {
    key: KEY,
    dir,
    bzImage: join(dir, "bzImage"),
    modulesRoot: join(dir, "modules"),
    release: "6.12.95",
    buildDir: join(dir, "build"),
    srcDir,
    kbuildNames: { srcDir, buildDir: join(dir, "build") },
    config: join(dir, "config"),
    describe: "debian:6.12",
    version: "6.12.95",
    patches: [],
  };
}

/** The files of a kernel entry and of its source tree, in cache `root`. */
function makeEntryFiles(root: string): void {
  const a = artifactIn(root);
  mkdirSync(join(a.modulesRoot, "lib", "modules", "6.12.95"), { recursive: true });
  mkdirSync(a.buildDir, { recursive: true });
  mkdirSync(a.srcDir, { recursive: true });
  writeFileSync(a.bzImage, `bzImage of ${root}`);
  writeFileSync(a.config, "CONFIG_X=y\n");
  writeFileSync(join(a.srcDir, "Makefile"), "VERSION = 6\n");
}

const PATHS = ["dir", "bzImage", "modulesRoot", "buildDir", "srcDir", "config"] as const;

t.test("artifact.json stores paths relative to the entry, and reads back absolute", async (t) => {
  const { a, use } = caches(t);
  use(a);
  makeEntryFiles(a);
  const artifact = artifactIn(a);
  await writeArtifactRecord(artifact.dir, artifact);
  const raw = JSON.parse(readFileSync(join(artifact.dir, ARTIFACT_FILE), "utf8"));
  t.same(
    PATHS.map((f) => raw[f]),
    [".", "bzImage", "modules", "build", `../../kernel-base/${BASE_KEY}/src`, "config"],
  );
  t.notMatch(JSON.stringify({ ...raw, kbuildNames: undefined }), a, "no path of the cache but kbuildNames");
  t.same(await readArtifactRecord(artifact.dir), artifact);
});

for (const format of ["written before (absolute paths)", "relative paths"] as const) {
  t.test(`a copied cache uses only its own files: ${format}`, async (t) => {
    const { a, b, use } = caches(t);
    use(a);
    makeEntryFiles(a);
    const original = artifactIn(a);
    if (format === "relative paths") await writeArtifactRecord(original.dir, original);
    else {
      const { kbuildNames: _, ...older } = original;
      writeFileSync(join(original.dir, ARTIFACT_FILE), JSON.stringify(older, null, 2));
    }
    cpSync(a, b, { recursive: true });
    renameSync(a, `${a}.gone`); // the original's paths, as the record names them, lead nowhere now
    use(b);
    const copy = await readArtifactRecord(join(b, "kernel", KEY));
    for (const f of PATHS) {
      t.ok(copy[f].startsWith(`${b}/`), `${f} is in the copy: ${copy[f]}`);
      t.ok(existsSync(copy[f]), `${f} exists`);
    }
    t.equal(readFileSync(copy.bzImage, "utf8"), `bzImage of ${a}`, "the copy's own bzImage");
    t.same(
      copy.kbuildNames,
      original.kbuildNames,
      "the build tree's records still name where it was built: text to find, not a path opened",
    );
  });
}

t.test("a record naming a path outside its cache is an error naming the record", async (t) => {
  const { a, use } = caches(t);
  use(a);
  makeEntryFiles(a);
  const artifact = { ...artifactIn(a), config: "/etc/kernel-config" };
  writeFileSync(join(artifact.dir, ARTIFACT_FILE), JSON.stringify(artifact));
  await t.rejects(readArtifactRecord(artifact.dir), {
    message: /names \/etc\/kernel-config, outside the cache it is in/,
    where: join(artifact.dir, ARTIFACT_FILE),
  });
});

t.test("an older record with only some fields reads as it is", async (t) => {
  const { a, use } = caches(t);
  use(a);
  const dir = join(a, "kernel", KEY);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, ARTIFACT_FILE), JSON.stringify({ key: KEY, release: "6.12.95" }));
  t.same(await readArtifactRecord(dir), { key: KEY, release: "6.12.95" });
});
