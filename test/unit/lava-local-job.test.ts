// A job directory as hil lava-run takes it: what is checked before lava-run starts, each bad one
// one error naming the file.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { stringify } from "yaml";
import { readLocalJob } from "../../harness/lava/local-job.ts";

const FILES = {
  "lava-plan.json": JSON.stringify({ format: 1, digest: "abc", scenarios: [], notPlanned: [] }),
  bzImage: "k",
  "ramdisk.cpio.gz": "r",
};

/** `dir` (FILES in it) with job.yaml written from `job` (or the text `edit` makes of it). */
function jobDir(dir: string, job: Record<string, unknown> = {}, edit = (s: string) => s): string {
  const images = {
    kernel: { url: `file://${join(dir, "bzImage")}` },
    ramdisk: { url: `file://${join(dir, "ramdisk.cpio.gz")}` },
  };
  const text = stringify({
    timeouts: { job: { minutes: 24 } },
    context: { arch: "amd64", memory: 1024 },
    actions: [{ deploy: { to: "tmpfs", images } }],
    ...job,
  });
  writeFileSync(join(dir, "job.yaml"), edit(text));
  return dir;
}

t.test("a job hil lava-job wrote: its memory, timeout and the job's own QEMU options", async (t) => {
  const job = readLocalJob(jobDir(t.testdir(FILES)));
  t.equal(job.memoryMb, 1024);
  t.equal(job.jobMinutes, 24);
  t.same(job.extraOptions, []);
  t.equal(job.plan.digest, "abc");
  const bare = readLocalJob(
    jobDir(t.testdir(FILES), {
      timeouts: undefined,
      context: { arch: "amd64", extra_options: ["-smp 2"] },
    }),
  );
  t.equal(bare.memoryMb, 512, "qemu.jinja2's default memory");
  t.equal(bare.jobMinutes, 60);
  t.same(bare.extraOptions, ["-smp 2"]);
});

t.test("bad job directories: one error naming what and where", async (t) => {
  t.throws(() => readLocalJob(t.testdir({})), /not a directory hil lava-job wrote/);
  const lab = jobDir(t.testdir(FILES), {}, (s) =>
    s.replace(/file:\/\/[^\n]*bzImage/, "https://lab.example/bzImage"),
  );
  t.throws(
    () => readLocalJob(lab),
    /fetches its kernel from https:\/\/lab.example\/bzImage: hil lava-run runs jobs whose images are file:\/\/ URLs/,
  );
  const moved = jobDir(t.testdir(FILES), {}, (s) => s.replace("bzImage", "gone/bzImage"));
  t.throws(() => readLocalJob(moved), /the job's kernel .*gone\/bzImage does not exist/);
  const memory = jobDir(t.testdir(FILES), { context: { memory: "lots" } });
  t.throws(() => readLocalJob(memory), /context memory \(MiB\) must be a positive whole number, not "lots"/);
  const yaml = jobDir(t.testdir(FILES), {}, () => "a: [unclosed\n");
  t.throws(() => readLocalJob(yaml), /not a LAVA job \(YAML\)/);
});
