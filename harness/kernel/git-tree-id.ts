import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { probe, run } from "../../util/exec.ts";

/**
 * The git tree id a directory would have if committed with `git add -A --force`: every file and
 * symlink hashed (`update-index --info-only` stores no object), then `write-tree --missing-ok`.
 * A scratch git directory holds the index only, and is removed.
 */
export async function gitTreeIdOf(dir: string): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "hil-tree-id-"));
  try {
    const gitDir = join(scratch, "git");
    const env = { GIT_DIR: gitDir, GIT_INDEX_FILE: join(scratch, "index"), GIT_WORK_TREE: dir };
    const list = await probe("find", [".", "(", "-type", "f", "-o", "-type", "l", ")", "-printf", "%P\\0"], {
      cwd: dir,
    });
    if (list.exitCode !== 0) throw new HilError("cannot list the tree", { where: dir, detail: list.stderr });
    await run("git init (tree id)", "git", ["init", "-q", "--bare", gitDir]);
    await run(
      "git update-index (tree id)",
      "git",
      ["update-index", "--add", "--info-only", "-z", "--stdin"],
      {
        cwd: dir,
        env,
        input: list.stdout,
      },
    );
    return (
      await run("git write-tree (tree id)", "git", ["write-tree", "--missing-ok"], { cwd: dir, env })
    ).stdout.trim();
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
