import { stringify } from "yaml";
import { HilError } from "../../util/errors.ts";

/**
 * A LAVA v2 job for the `qemu` device type (x86_64): the kernel and initramfs deployed to tmpfs,
 * booted with `-kernel`/`-initrd`, and one inline test definition running one shell line at a
 * login-less prompt. Job format: https://docs.lavasoftware.org/lava/first-job.html and
 * https://docs.lavasoftware.org/lava/actions-deploy.html#to-tmpfs
 */
export interface LavaJobOptions {
  jobName: string;
  /** http(s):// or file:// URL of the x86 bzImage */
  kernelUrl: string;
  /** http(s):// or file:// URL of the initramfs: one gzip-compressed newc archive (LAVA adds its overlay to it) */
  ramdiskUrl: string;
  /** the kernel command line, passed to QEMU's -append */
  kernelArgs: string;
  /** the one shell line the DUT runs, e.g. "sh /hil-lava/run.sh" */
  testCommand: string;
  /** the DUT's shell prompt LAVA waits for, e.g. "hil-lava# " */
  prompt: string;
  timeouts: { jobMinutes: number; bootMinutes: number; testMinutes: number };
  /** the job context's extra_options: more QEMU arguments, e.g. "-device vfio-user-pci,socket=..." */
  qemuExtraOptions?: string[];
  memoryMb?: number;
}

const URL_SCHEMES = ["http:", "https:", "file:"];
/** LAVA's pattern for a test definition's name (lava_common/constants.py DEFAULT_TESTDEF_NAME_CLASS: no dots) */
const TEST_NAME = /^[-_a-zA-Z0-9]+$/;

function bad(option: string, what: string): HilError {
  return new HilError(`LAVA job option ${option} ${what}`, { where: "lava job" });
}

function checkUrl(option: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(option, `is not a URL: ${JSON.stringify(value)}`);
  }
  if (!URL_SCHEMES.includes(url.protocol))
    throw bad(option, `must be an http://, https:// or file:// URL, not ${JSON.stringify(value)}`);
}

/** One line of text, non-empty unless `mayBeEmpty`; `forbid` lists characters it cannot hold. */
function checkLine(
  option: string,
  value: string,
  opts: { mayBeEmpty?: boolean; forbid?: string } = {},
): void {
  if (!opts.mayBeEmpty && value.trim() === "") throw bad(option, "is empty");
  if (/[\r\n]/.test(value)) throw bad(option, "must be one line");
  for (const c of opts.forbid ?? "")
    if (value.includes(c)) throw bad(option, `must not contain ${JSON.stringify(c)}`);
}

function checkMinutes(option: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0)
    throw bad(option, `must be a positive whole number, not ${value}`);
}

function checkOptions(o: LavaJobOptions): void {
  checkLine("jobName", o.jobName);
  if (o.jobName.length > 200) throw bad("jobName", "is longer than LAVA's 200 characters");
  checkUrl("kernelUrl", o.kernelUrl);
  checkUrl("ramdiskUrl", o.ramdiskUrl);
  // QEMU's -append argument is written in double quotes on the command line LAVA builds
  checkLine("kernelArgs", o.kernelArgs, { mayBeEmpty: true, forbid: '"' });
  checkLine("testCommand", o.testCommand);
  checkLine("prompt", o.prompt);
  checkMinutes("timeouts.jobMinutes", o.timeouts.jobMinutes);
  checkMinutes("timeouts.bootMinutes", o.timeouts.bootMinutes);
  checkMinutes("timeouts.testMinutes", o.timeouts.testMinutes);
  for (const [name, minutes] of [
    ["timeouts.bootMinutes", o.timeouts.bootMinutes],
    ["timeouts.testMinutes", o.timeouts.testMinutes],
  ] as const) {
    if (minutes > o.timeouts.jobMinutes)
      throw bad(name, `(${minutes}) is longer than timeouts.jobMinutes (${o.timeouts.jobMinutes})`);
  }
  o.qemuExtraOptions?.forEach((opt, i) => {
    checkLine(`qemuExtraOptions[${i}]`, opt);
  });
  if (o.memoryMb !== undefined && (!Number.isInteger(o.memoryMb) || o.memoryMb <= 0))
    throw bad("memoryMb", `must be a positive whole number of MiB, not ${o.memoryMb}`);
}

/** The test definition's name: the job's name in the characters LAVA allows there. */
function testName(jobName: string): string {
  const name = jobName.replace(/[^-_a-zA-Z0-9]+/g, "-").replace(/^-+|-+$/g, "");
  return TEST_NAME.test(name) ? name : "hil-lava";
}

export function lavaJobYaml(o: LavaJobOptions): string {
  checkOptions(o);
  const name = testName(o.jobName);
  const append = o.kernelArgs.trim() === "" ? "" : ` -append "${o.kernelArgs.trim()}"`;
  const job = {
    device_type: "qemu",
    job_name: o.jobName,
    timeouts: { job: { minutes: o.timeouts.jobMinutes } },
    priority: "medium",
    visibility: "public",
    context: {
      arch: "amd64",
      ...(o.memoryMb !== undefined ? { memory: o.memoryMb } : {}),
      ...(o.qemuExtraOptions?.length ? { extra_options: o.qemuExtraOptions } : {}),
    },
    actions: [
      {
        deploy: {
          to: "tmpfs",
          timeout: { minutes: o.timeouts.bootMinutes },
          images: {
            kernel: { url: o.kernelUrl, image_arg: `-kernel {kernel}${append}` },
            // LAVA's overlay (lava-test-shell and the test definition) goes into the ramdisk:
            // gunzipped, unpacked, the overlay added, packed (AppendOverlays); without it the
            // qemu device type builds a disk image with libguestfs, which needs a host kernel
            ramdisk: {
              url: o.ramdiskUrl,
              image_arg: "-initrd {ramdisk}",
              compression: "gz",
              format: "cpio.newc",
              overlays: { lava: true },
            },
          },
        },
      },
      {
        boot: {
          method: "qemu",
          media: "tmpfs",
          timeout: { minutes: o.timeouts.bootMinutes },
          prompts: [o.prompt],
        },
      },
      {
        test: {
          timeout: { minutes: o.timeouts.testMinutes },
          definitions: [
            {
              from: "inline",
              name,
              path: "inline/hil-lava.yaml",
              repository: {
                metadata: {
                  format: "Lava-Test Test Definition 1.0",
                  name,
                  description: `hil: ${o.testCommand}`,
                },
                run: { steps: [o.testCommand] },
              },
            },
          ],
        },
      },
    ],
  };
  return stringify(job, { lineWidth: 0 });
}
