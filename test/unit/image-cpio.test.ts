import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import t from "tap";
import { type CpioEntry, listCpio, walkTree, writeCpioGz } from "../../harness/image/cpio.ts";
import { tempDir } from "../support/temp-dir.ts";

t.test("writes a gzip'd newc archive GNU cpio reads back, device nodes included", async (t) => {
  const dir = tempDir(t, "hil-cpio-test-");
  const src = join(dir, "src");
  mkdirSync(join(src, "etc"), { recursive: true });
  mkdirSync(join(src, "dev"));
  writeFileSync(join(src, "etc/hello"), "hello\n", { mode: 0o640 });
  writeFileSync(join(src, "odd"), "x");
  symlinkSync("etc/hello", join(src, "link"));
  async function* entries(): AsyncGenerator<CpioEntry> {
    yield* walkTree(src);
    yield { kind: "chardev", path: "dev/console", mode: 0o600, major: 5, minor: 1 };
  }
  const out = join(dir, "a.cpio.gz");
  t.equal(await writeCpioGz(out, entries()), 6);
  const listing = execFileSync("sh", ["-c", `zcat ${out} | cpio -itv --quiet`], { encoding: "utf8" });
  t.match(listing, /^crw------- .* 5,\s+1 .* dev\/console$/m);
  t.match(listing, /^lrwxrwxrwx .* link -> etc\/hello$/m);
  t.match(listing, /^-rw-r----- .* etc\/hello$/m);
  const names = listing
    .trim()
    .split("\n")
    .map((l) =>
      l
        .replace(/ -> .*$/, "")
        .split(" ")
        .pop(),
    );
  t.same(names, ["dev", "etc", "etc/hello", "link", "odd", "dev/console"], "parents first, names in order");
  const outDir = join(dir, "out");
  mkdirSync(outDir);
  execFileSync("sh", ["-c", `zcat ${out} | cpio -id --quiet --no-absolute-filenames 2>/dev/null; true`], {
    cwd: outDir,
  });
  t.equal(readFileSync(join(outDir, "etc/hello"), "utf8"), "hello\n");
});

t.test("the same tree gives the same bytes", async (t) => {
  const dir = tempDir(t, "hil-cpio-test-");
  const src = join(dir, "src");
  mkdirSync(src);
  writeFileSync(join(src, "f"), "data");
  await writeCpioGz(join(dir, "1.gz"), walkTree(src));
  await writeCpioGz(join(dir, "2.gz"), walkTree(src));
  t.same(readFileSync(join(dir, "1.gz")), readFileSync(join(dir, "2.gz")));
});

t.test("listCpio reads layers laid end to end, as the kernel does", async (t) => {
  const dir = tempDir(t, "hil-cpio-test-");
  await writeCpioGz(join(dir, "a.gz"), [
    { kind: "dir", path: "etc", mode: 0o755 },
    { kind: "file", path: "etc/a", mode: 0o644, data: Buffer.from("abc") },
  ]);
  await writeCpioGz(join(dir, "b.gz"), [
    { kind: "chardev", path: "dev/console", mode: 0o600, major: 5, minor: 1 },
    { kind: "symlink", path: "x", target: "etc/a" },
  ]);
  const both = gunzipSync(Buffer.concat([readFileSync(join(dir, "a.gz")), readFileSync(join(dir, "b.gz"))]));
  t.same(listCpio(both), [
    { path: "etc", mode: 0o040755, size: 0 },
    { path: "etc/a", mode: 0o100644, size: 3 },
    { path: "dev/console", mode: 0o020600, size: 0 },
    { path: "x", mode: 0o120777, size: 5 },
  ]);
  t.throws(
    () => listCpio(Buffer.from("garbage that is long enough to hold a header".repeat(4))),
    /not a newc header/,
  );
});
