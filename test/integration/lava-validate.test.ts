// A job from lavaJobYaml validated by the real lava-run (Debian's lava-dispatcher) against a qemu
// device rendered from LAVA's own device-type templates (Debian's lava-server .deb, in the cache):
// it passes, and broken jobs are reported with lava-run's and LAVA's schema's messages. Needs
// `hil setup --lava` (CI's .ci/run calls it); without lava-run this test fails, it never skips.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { parse, stringify } from "yaml";
import { ensureLavaDeviceTypes } from "../../harness/lava/device-types.ts";
import { findLavaRun, renderQemuDevice, validateLavaJob } from "../../harness/lava/dispatcher.ts";
import { type LavaJobOptions, lavaJobYaml } from "../../harness/lava/job.ts";

const LAVA_TMP = "/var/lib/lava/dispatcher/tmp";

/** The device as lava-run reads it, with PyYAML (the yaml package refuses a quoted newline in base.jinja2). */
function readDevice(text: string): unknown {
  const py = "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))";
  return JSON.parse(execFileSync("/usr/bin/python3", ["-c", py], { input: text, encoding: "utf8" }));
}

function leftovers(): string[] {
  const ours = (dir: string, prefix: string) =>
    existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(prefix)) : [];
  return [...ours(LAVA_TMP, `hil-validate-${process.pid}-`), ...ours(tmpdir(), "hil-lava-validate-")];
}

const lavaRun = findLavaRun();
if (!lavaRun) {
  t.fail("lava-run is not installed: hil setup --lava installs it (Debian's lava-dispatcher)");
} else {
  const work = await mkdtemp(join(tmpdir(), "hil-lava-test-"));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  // lava-run --validate only checks that a file:// image exists and is readable
  const kernel = join(work, "bzImage");
  const ramdisk = join(work, "initramfs.cpio.gz");
  await writeFile(kernel, "not a kernel");
  await writeFile(ramdisk, "not an initramfs");
  const options: LavaJobOptions = {
    // a dot, which lava-run refuses in a test definition's name
    jobName: "hil lava validate 6.12",
    kernelUrl: `file://${kernel}`,
    ramdiskUrl: `file://${ramdisk}`,
    kernelArgs: "console=ttyS0,115200",
    testCommand: "sh /hil-lava/run.sh",
    prompt: "hil-lava# ",
    timeouts: { jobMinutes: 10, bootMinutes: 3, testMinutes: 5 },
    qemuExtraOptions: ["-smp 2"],
    memoryMb: 1024,
  };
  const before = leftovers();

  async function validate(name: string, job: unknown): Promise<{ ok: boolean; errors: string }> {
    const path = join(work, name);
    await writeFile(path, typeof job === "string" ? job : stringify(job));
    return validateLavaJob(path);
  }

  t.test("the qemu device renders from LAVA's templates with the options given", async (t) => {
    const types = await ensureLavaDeviceTypes();
    t.ok(existsSync(join(types.dir, "qemu.jinja2")), `qemu.jinja2 in ${types.dir}`);
    t.match(types.deb, /^lava-server_.*\.deb$/);
    t.notOk((await ensureLavaDeviceTypes()).fetched, "a second call finds them in the cache");
    const device = readDevice(
      await renderQemuDevice({
        templatesDir: types.dir,
        memoryMb: 1024,
        noKvm: true,
        extraOptions: ["-smp 2"],
      }),
    ) as {
      available_architectures: string[];
      actions: {
        boot: { methods: { qemu: { parameters: { command: string; options: string[]; extra: string[] } } } };
      };
    };
    t.ok(device.available_architectures.includes("amd64"));
    const qemu = device.actions.boot.methods.qemu.parameters;
    t.equal(qemu.command.trim(), "qemu-system-x86_64");
    t.ok(qemu.options.includes("-m 1024"), "memory");
    t.notOk(qemu.options.includes("-enable-kvm"), "no KVM when asked");
    t.same(qemu.extra, ["-smp 2"]);
  });

  t.test("a job from lavaJobYaml passes lava-run --validate", async (t) => {
    const r = await validate("good.yaml", lavaJobYaml(options));
    t.same(r, { ok: true, errors: "" });
  });

  t.test("a boot action without its method is invalid, in lava-run's and the schema's words", async (t) => {
    const job = parse(lavaJobYaml(options)) as { actions: Record<string, Record<string, unknown>>[] };
    delete job.actions[1]?.boot?.method;
    const r = await validate("no-method.yaml", job);
    t.equal(r.ok, false);
    t.match(r.errors, /method not specified in boot parameters/);
    t.match(r.errors, /LAVA job schema: unknown action type/);
  });

  t.test("a deploy without images is invalid, in lava-run's and the schema's words", async (t) => {
    const job = parse(lavaJobYaml(options)) as { actions: Record<string, Record<string, unknown>>[] };
    delete job.actions[0]?.deploy?.images;
    const r = await validate("no-images.yaml", job);
    t.equal(r.ok, false);
    t.match(r.errors, /None of the deployment strategies accepted your deployment parameters/);
    t.match(r.errors, /"images" was not in the deployment parameters/);
    t.match(r.errors, /LAVA job schema: required key not provided .*\['images'\]/);
  });

  t.test("a file:// image that is not there is invalid", async (t) => {
    const r = await validate(
      "missing-kernel.yaml",
      lavaJobYaml({ ...options, kernelUrl: `file://${work}/nope` }),
    );
    t.equal(r.ok, false);
    t.match(r.errors, new RegExp(`Image file '${work}/nope' does not exist or is not readable`));
  });

  t.test("without lava-run on PATH, one error saying hil setup --lava installs it", async (t) => {
    const path = process.env.PATH;
    process.env.PATH = work;
    t.teardown(() => {
      process.env.PATH = path;
    });
    await t.rejects(validateLavaJob(join(work, "good.yaml")), {
      name: "HilError",
      message: /^lava-run is not installed: hil setup --lava installs it/,
    });
  });

  t.test("nothing of the validations is left behind", async (t) => {
    t.same(leftovers(), before);
  });
}
