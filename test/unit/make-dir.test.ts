// util/make-dir.ts: mkdir -p that ends with the first error where Node's recursive mkdir spins
// (a new name under /proc, whose mkdir says ENOENT while /proc exists).
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { makeDir } from "../../util/make-dir.ts";

/** Settles within `ms`, or says it did not (a spin would never settle). */
function within<T>(p: Promise<T>, ms = 10_000): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms).unref(),
    ),
  ]);
}

t.test("makes the missing directories, top down, and accepts ones that exist", async (t) => {
  const root = t.testdir({ has: {} });
  await makeDir(join(root, "a/b/c"));
  t.ok((await stat(join(root, "a/b/c"))).isDirectory());
  await makeDir(join(root, "a/b/c"));
  await makeDir(join(root, "has"));
  t.ok((await stat(join(root, "has"))).isDirectory());
});

t.test(
  "a new name under /proc: ENOENT at once, not a spin",
  { skip: process.platform !== "linux" },
  async (t) => {
    await t.rejects(within(makeDir("/proc/hil-nope/x")), { code: "ENOENT", path: "/proc/hil-nope" });
    await t.rejects(within(makeDir("/sys/hil-nope")), { code: /^(ENOENT|EACCES|EPERM|EROFS)$/ });
  },
);

t.test("a file in the way: ENOTDIR naming it, nothing made", async (t) => {
  const root = t.testdir({});
  await writeFile(join(root, "file"), "x");
  await t.rejects(makeDir(join(root, "file/sub")), { code: "ENOTDIR" });
  await t.rejects(makeDir(join(root, "file")), { code: "ENOTDIR", path: join(root, "file") });
});

t.test("two makers of the same tree at once both succeed", async (t) => {
  const root = t.testdir({});
  await Promise.all([
    makeDir(join(root, "x/y/z")),
    makeDir(join(root, "x/y/z")),
    mkdir(join(root, "x"), { recursive: true }),
  ]);
  t.ok((await stat(join(root, "x/y/z"))).isDirectory());
});

t.test("no code of hil makes directories with Node's recursive mkdir (it spins under /proc)", async (t) => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const offenders: string[] = [];
  for (const room of ["harness", "qemu", "util"])
    for (const file of readdirSync(join(root, room), { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".ts") || `${room}/${file}` === "util/make-dir.ts") continue;
      const text = readFileSync(join(root, room, file), "utf8");
      for (const [i, line] of text.split("\n").entries())
        if (/\bmkdir(Sync)?\([^)]*recursive:\s*true/.test(line)) offenders.push(`${room}/${file}:${i + 1}`);
    }
  t.same(offenders, [], "util/make-dir.ts's makeDir instead");
});
