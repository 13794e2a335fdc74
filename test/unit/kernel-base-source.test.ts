import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { baseKey, ensureBaseTree, kernelVersion } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { run } from "../../util/exec.ts";

const tinyKernel = () => ({
  Makefile: "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 95\nEXTRAVERSION =\n",
  Kconfig: 'mainmenu "tiny"\n',
  scripts: { kconfig: { "merge_config.sh": "#!/bin/sh\n" } },
  init: { "main.c": "int main;\n" },
});

t.test("local bases: plain directory, git work tree, tarball", async (t) => {
  const dir = t.testdir({ cache: {}, plain: tinyKernel(), repo: tinyKernel() });
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = join(dir, "cache");
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });

  const plain = parseBaseSpec(join(dir, "plain"));
  const plainTree = await ensureBaseTree(plain);
  t.equal(readFileSync(join(plainTree.srcDir, "init", "main.c"), "utf8"), "int main;\n");
  t.same(kernelVersion(plainTree.srcDir), { major: 6, minor: 12, sublevel: 95, text: "6.12.95" });
  t.equal((await ensureBaseTree(plain)).srcDir, plainTree.srcDir, "a second call finds the entry");

  const repo = join(dir, "repo");
  const git = (...args: string[]) =>
    run("git", "git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "base");
  const spec = parseBaseSpec(repo);
  t.equal(spec.kind, "git");
  const clean = await baseKey(spec);
  writeFileSync(join(repo, "init", "main.c"), "int main = 1;\n");
  const dirty = await baseKey(spec);
  t.not(dirty, clean, "an uncommitted change changes the key");
  const gitTree = await ensureBaseTree(spec);
  t.equal(
    readFileSync(join(gitTree.srcDir, "init", "main.c"), "utf8"),
    "int main = 1;\n",
    "uncommitted change exported",
  );
  t.notOk(existsSync(join(gitTree.srcDir, ".git")));

  const tarball = join(dir, "linux-6.12.95.tar.gz");
  await run("tar", "tar", ["-czf", tarball, "-C", dir, "plain"]);
  const tarSpec = parseBaseSpec(tarball);
  const tarTree = await ensureBaseTree(tarSpec);
  t.equal(tarTree.key, await baseKey(tarSpec));
  t.ok(existsSync(join(tarTree.srcDir, "Makefile")), "the single top-level directory is dropped");

  const notKernel = join(dir, "junk.tar");
  await run("tar", "tar", ["-cf", notKernel, "-C", join(dir, "plain"), "init"]);
  await t.rejects(ensureBaseTree(parseBaseSpec(notKernel)), /does not contain a kernel source tree/);
  const leftovers = (await run("ls", "ls", ["-A", join(dir, "cache", "kernel-base")])).stdout.split("\n");
  t.notOk(
    leftovers.some((n) => n.includes(".tmp-")),
    "a failed unpack leaves no temp dir",
  );
});
