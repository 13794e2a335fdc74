import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { kernelEntryOptions } from "../../harness/kernel/build.ts";
import { bzImageProblem } from "../../harness/kernel/bzimage.ts";
import { ensureEntry } from "../../util/cache.ts";
import { privateCacheDir } from "../support/private-cache.ts";

const tempDir = (t: Test) => privateCacheDir(t, "hil-bzimage-test-");

/** A bzImage as its header describes it: setup_sects 31 (32 sectors with the boot sector), syssize paragraphs. */
function bzImage(syssize: number): Buffer {
  const b = Buffer.alloc(32 * 512 + syssize * 16, 0x90);
  b.writeUInt8(31, 0x1f1);
  b.writeUInt32LE(syssize, 0x1f4);
  b.write("HdrS", 0x202, "latin1");
  return b;
}

t.test(
  "a bzImage as long as its header says is whole; shorter, without a header or missing is not",
  async (t) => {
    const dir = tempDir(t);
    const path = join(dir, "bzImage");
    writeFileSync(path, bzImage(139584)); // the debian:6.12 image's header: 2249728 bytes
    t.equal(await bzImageProblem(path), undefined);
    truncateSync(path, 2249727);
    t.same(await bzImageProblem(path), {
      file: "bzImage",
      what: "is 2249727 bytes, its header says 2249728",
    });
    truncateSync(path, 1024 * 1024);
    t.same(await bzImageProblem(path), { file: "bzImage", what: "is 1.0 MB, its header says 2.1 MB" });
    writeFileSync(path, Buffer.alloc(4096));
    t.same(await bzImageProblem(path), { file: "bzImage", what: "has no x86 boot header (HdrS)" });
    t.same(await bzImageProblem(join(dir, "none")), { file: "bzImage", what: "is missing" });
  },
);

t.test("an older kernel entry with a cut bzImage is rebuilt, not adopted", async (t) => {
  const root = tempDir(t);
  const dir = join(root, "kernel", "k1");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "bzImage"), bzImage(139584).subarray(0, 1024 * 1024));
  writeFileSync(join(dir, ".complete"), "2026-12-01T20:37:00.000Z\n");
  const built: string[] = [];
  const r = await ensureEntry("kernel", "k1", kernelEntryOptions("kernel debian:6.12"), async (work) => {
    built.push(work);
    writeFileSync(join(work, "bzImage"), bzImage(139584));
  });
  t.ok(r.built);
  t.same(built, [dir], "built in place");
});
