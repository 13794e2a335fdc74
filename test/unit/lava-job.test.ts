// The LAVA job definition hil writes: parsed back, it is the deploy/boot/test structure LAVA's qemu
// device type takes, with the options where LAVA reads them; each bad option is one HilError naming it.
import t from "tap";
import { parse } from "yaml";
import { qemuDeviceDictionary } from "../../harness/lava/dispatcher.ts";
import { type LavaJobOptions, lavaJobYaml } from "../../harness/lava/job.ts";
import { HilError } from "../../util/errors.ts";

const GOOD: LavaJobOptions = {
  jobName: "erdma drain 6.12",
  kernelUrl: "https://example.org/k/bzImage",
  ramdiskUrl: "file:///srv/hil/initramfs.cpio.gz",
  kernelArgs: "console=ttyS0,115200 hil.mode=lava",
  testCommand: "sh /hil-lava/run.sh",
  prompt: "hil-lava# ",
  timeouts: { jobMinutes: 30, bootMinutes: 4, testMinutes: 20 },
  qemuExtraOptions: ["-device vfio-user-pci,socket=/run/x.sock", "-smp 2"],
  memoryMb: 2048,
};

interface Job {
  device_type: string;
  job_name: string;
  visibility: string;
  timeouts: { job: { minutes: number } };
  context: { arch: string; memory?: number; extra_options?: string[] };
  actions: Record<string, Record<string, unknown>>[];
}

function job(o: Partial<LavaJobOptions> = {}): Job {
  return parse(lavaJobYaml({ ...GOOD, ...o })) as Job;
}

function action(j: Job, kind: string): Record<string, unknown> {
  const found = j.actions.find((a) => kind in a)?.[kind];
  if (!found) throw new Error(`no ${kind} action`);
  return found;
}

t.test("the job parses back to a qemu job with deploy, boot and test in that order", async (t) => {
  const j = job();
  t.equal(j.device_type, "qemu");
  t.equal(j.job_name, GOOD.jobName);
  t.equal(j.visibility, "public");
  t.same(
    j.actions.map((a) => Object.keys(a)),
    [["deploy"], ["boot"], ["test"]],
  );
  t.equal(j.context.arch, "amd64");
  t.equal(j.context.memory, 2048);
  t.same(j.context.extra_options, GOOD.qemuExtraOptions);
});

t.test("deploy: the kernel and the initramfs to tmpfs, handed to QEMU by image_arg", async (t) => {
  const deploy = action(job(), "deploy");
  t.equal(deploy.to, "tmpfs");
  const images = deploy.images as Record<string, { url: string; image_arg: string }>;
  t.same(Object.keys(images).sort(), ["kernel", "ramdisk"]);
  t.equal(images.kernel?.url, GOOD.kernelUrl);
  t.equal(images.ramdisk?.url, GOOD.ramdiskUrl);
  t.equal(images.kernel?.image_arg, `-kernel {kernel} -append "${GOOD.kernelArgs}"`);
  t.equal(images.ramdisk?.image_arg, "-initrd {ramdisk}");
  const ramdisk = images.ramdisk as unknown as Record<string, unknown>;
  t.same(
    [ramdisk.compression, ramdisk.format, ramdisk.overlays],
    ["gz", "cpio.newc", { lava: true }],
    "LAVA adds its overlay to the ramdisk (AppendOverlays), not to a libguestfs disk",
  );
  const bare = action(job({ kernelArgs: "  " }), "deploy").images as Record<string, { image_arg: string }>;
  t.equal(bare.kernel?.image_arg, "-kernel {kernel}", "no -append without kernel arguments");
});

t.test("boot: qemu from tmpfs, waiting for the prompt, no login", async (t) => {
  const boot = action(job(), "boot");
  t.equal(boot.method, "qemu");
  t.equal(boot.media, "tmpfs");
  t.same(boot.prompts, [GOOD.prompt]);
  t.notOk("auto_login" in boot);
  t.same(boot.timeout, { minutes: 4 });
});

t.test("test: one inline definition running the command", async (t) => {
  const test = action(job(), "test");
  t.same(test.timeout, { minutes: 20 });
  const defs = test.definitions as Record<string, unknown>[];
  t.equal(defs.length, 1);
  const def = defs[0] as {
    from: string;
    name: string;
    path: string;
    repository: { metadata: { format: string; name: string; description: string }; run: { steps: string[] } };
  };
  t.equal(def.from, "inline");
  t.match(def.name, /^[-_a-zA-Z0-9]+$/, "a name lava-run accepts (no dots)");
  t.equal(def.name, "erdma-drain-6-12");
  t.equal(def.repository.metadata.format, "Lava-Test Test Definition 1.0");
  t.equal(def.repository.metadata.name, def.name);
  t.match(def.repository.metadata.description, GOOD.testCommand);
  t.same(def.repository.run.steps, [GOOD.testCommand]);
});

t.test("timeouts: the job's, and no context keys that were not asked for", async (t) => {
  const j = job({ timeouts: { jobMinutes: 7, bootMinutes: 2, testMinutes: 5 } });
  t.same(j.timeouts, { job: { minutes: 7 } });
  const plain = job({ qemuExtraOptions: [] });
  t.notOk("extra_options" in plain.context);
  const { memoryMb: _, ...noMemory } = GOOD;
  t.notOk("memory" in (parse(lavaJobYaml(noMemory)) as Job).context);
});

t.test("a command or prompt YAML would quote is written so it parses back the same", async (t) => {
  const command = `echo "a: b" # 'c' {d} && exit 0`;
  const j = job({ testCommand: command, prompt: "- #: " });
  const def = (action(j, "test").definitions as { repository: { run: { steps: string[] } } }[])[0];
  t.same(def?.repository.run.steps, [command]);
  t.same(action(j, "boot").prompts, ["- #: "]);
});

const BAD: [string, Partial<LavaJobOptions>, RegExp][] = [
  ["jobName", { jobName: " " }, /^LAVA job option jobName is empty/],
  ["jobName", { jobName: "x".repeat(201) }, /^LAVA job option jobName is longer/],
  ["kernelUrl", { kernelUrl: "ftp://example.org/bzImage" }, /^LAVA job option kernelUrl must be an http/],
  ["kernelUrl", { kernelUrl: "/srv/bzImage" }, /^LAVA job option kernelUrl is not a URL/],
  ["ramdiskUrl", { ramdiskUrl: "scp://host/initrd" }, /^LAVA job option ramdiskUrl must be an http/],
  ["kernelArgs", { kernelArgs: 'root="x"' }, /^LAVA job option kernelArgs must not contain/],
  ["testCommand", { testCommand: "" }, /^LAVA job option testCommand is empty/],
  ["testCommand", { testCommand: "a\nb" }, /^LAVA job option testCommand must be one line/],
  ["prompt", { prompt: "" }, /^LAVA job option prompt is empty/],
  [
    "timeouts.jobMinutes",
    { timeouts: { jobMinutes: 0, bootMinutes: 1, testMinutes: 1 } },
    /^LAVA job option timeouts\.jobMinutes must be a positive/,
  ],
  [
    "timeouts.bootMinutes",
    { timeouts: { jobMinutes: 10, bootMinutes: -1, testMinutes: 1 } },
    /^LAVA job option timeouts\.bootMinutes must be a positive/,
  ],
  [
    "timeouts.testMinutes",
    { timeouts: { jobMinutes: 10, bootMinutes: 1, testMinutes: 1.5 } },
    /^LAVA job option timeouts\.testMinutes must be a positive/,
  ],
  [
    "timeouts.testMinutes",
    { timeouts: { jobMinutes: 10, bootMinutes: 1, testMinutes: 11 } },
    /^LAVA job option timeouts\.testMinutes \(11\) is longer than timeouts\.jobMinutes/,
  ],
  [
    "qemuExtraOptions",
    { qemuExtraOptions: ["-smp 2", ""] },
    /^LAVA job option qemuExtraOptions\[1\] is empty/,
  ],
  ["memoryMb", { memoryMb: 0 }, /^LAVA job option memoryMb must be a positive/],
];

for (const [name, change, message] of BAD) {
  t.test(`a bad ${name} is one HilError naming it (${JSON.stringify(change).slice(0, 60)})`, async (t) => {
    let caught: unknown;
    try {
      lavaJobYaml({ ...GOOD, ...change });
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof HilError, "a HilError");
    t.match((caught as Error).message, message);
  });
}

t.test("the qemu device dictionary extends qemu.jinja2 with Jinja literals", async (t) => {
  const dict = qemuDeviceDictionary({ memoryMb: 1024, noKvm: true, extraOptions: ["-smp 2"] });
  const lines = dict.trim().split("\n");
  t.equal(lines[0], "{% extends 'qemu.jinja2' %}");
  t.ok(lines.includes(`{% set arch = "amd64" %}`));
  t.ok(lines.includes("{% set memory = 1024 %}"));
  t.ok(lines.includes("{% set no_kvm = true %}"));
  t.ok(lines.includes(`{% set extra_options = ["-smp 2"] %}`));
  t.notOk(qemuDeviceDictionary({}).includes("no_kvm"), "KVM stays unless asked");
  t.ok(
    qemuDeviceDictionary({ macAddr: "52:54:00:12:34:56" }).includes(
      `{% set mac_addr = "52:54:00:12:34:56" %}`,
    ),
    "the NIC's MAC, which the emulated erdma reports too",
  );
});
