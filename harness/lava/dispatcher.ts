import { randomBytes } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { parse } from "yaml";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { probe, run } from "../../util/exec.ts";
import { ensureLavaDeviceTypes } from "./device-types.ts";

/** Debian's packages hil setup --lava installs: the dispatcher (lava-run) and what renders templates. */
export const LAVA_HOST_PACKAGES = ["lava-dispatcher", "python3-jinja2", "python3-yaml"];

/** Debian's python, where python3-jinja2 and lava-common are installed (not a python3 earlier on PATH). */
const SYSTEM_PYTHON = "/usr/bin/python3";
/** Where lava-run makes its job's directory, whatever --output-dir says (lava_common/constants.py). */
const DISPATCHER_TMP = "/var/lib/lava/dispatcher/tmp";
/** lava-run's KVM check looks here when the device's options hold -enable-kvm. */
const SYS_CLASS_KVM = "/sys/class/misc/kvm";

export interface QemuDeviceOptions {
  /** where base.jinja2 and qemu.jinja2 are; default: the cached templates (ensureLavaDeviceTypes) */
  templatesDir?: string;
  memoryMb?: number;
  /** QEMU arguments the device adds (qemu.jinja2's extra_options) */
  extraOptions?: string[];
  /** leave out -cpu host -enable-kvm */
  noKvm?: boolean;
  /** the -net backend, default user */
  netdevice?: string;
  /** the guest NIC's MAC (qemu.jinja2's mac_addr, default 52:54:00:12:34:58) */
  macAddr?: string;
  /** the job's context: variables the template sees when the device dictionary does not set them */
  context?: Record<string, unknown>;
}

/** A device dictionary as a LAVA instance keeps one: the device type it extends and its variables. */
export function qemuDeviceDictionary(o: Omit<QemuDeviceOptions, "templatesDir" | "context">): string {
  const vars: [string, unknown][] = [["arch", "amd64"]];
  if (o.memoryMb !== undefined) vars.push(["memory", o.memoryMb]);
  if (o.netdevice !== undefined) vars.push(["netdevice", o.netdevice]);
  if (o.macAddr !== undefined) vars.push(["mac_addr", o.macAddr]);
  if (o.noKvm) vars.push(["no_kvm", true]);
  if (o.extraOptions?.length) vars.push(["extra_options", o.extraOptions]);
  // JSON's strings, numbers, lists and true are Jinja literals too
  const sets = vars.map(([k, v]) => `{% set ${k} = ${JSON.stringify(v)} %}`);
  return ["{% extends 'qemu.jinja2' %}", ...sets, ""].join("\n");
}

// Checked with PyYAML, as lava-run reads it: the templates write a quoted newline across two lines,
// which the yaml package refuses.
const RENDER_PY = `
import json, sys, jinja2, yaml
req = json.load(sys.stdin)
env = jinja2.Environment(loader=jinja2.FileSystemLoader(req["templates"]), trim_blocks=True, autoescape=False)
text = env.from_string(req["dictionary"]).render(**req["context"])
device = yaml.safe_load(text)
if "qemu" not in ((device or {}).get("actions", {}).get("boot", {}).get("methods") or {}):
    sys.exit("the rendered device has no qemu boot method:\\n" + text)
sys.stdout.write(text)
`;

/** The device configuration (YAML) lava-run takes with --device, rendered from LAVA's qemu.jinja2. */
export async function renderQemuDevice(o: QemuDeviceOptions = {}): Promise<string> {
  const templates = o.templatesDir ?? (await ensureLavaDeviceTypes()).dir;
  if (!existsSync(join(templates, "qemu.jinja2")))
    throw new HilError("no qemu.jinja2 among the LAVA device types", { where: templates });
  const request = { templates, dictionary: qemuDeviceDictionary(o), context: o.context ?? {} };
  const { stdout } = await run(
    `rendering LAVA's qemu device type from ${templates}`,
    SYSTEM_PYTHON,
    ["-c", RENDER_PY],
    {
      input: JSON.stringify(request),
    },
  );
  return stdout;
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const file = join(dir, name);
    if (dir && existsSync(file)) return file;
  }
  return undefined;
}

/** lava-run's path, or undefined when it is not installed. */
export function findLavaRun(): string | undefined {
  return findOnPath("lava-run");
}

export function lavaRunPath(): string {
  const found = findLavaRun();
  if (!found)
    throw new HilError("lava-run is not installed: hil setup --lava installs it (Debian's lava-dispatcher)");
  return found;
}

const SCHEMA_PY = `
import sys, yaml
from lava_common.schemas import validate
from voluptuous import Invalid
try:
    validate(yaml.safe_load(sys.stdin), strict=True)
except Invalid as exc:
    print(exc)
`;

/** What lava-server checks on submission (its job schema, strict), which lava-run does not: "" when it passes. */
async function schemaErrors(jobText: string): Promise<string> {
  const { stdout } = await run("checking the job against LAVA's schema", SYSTEM_PYTHON, ["-c", SCHEMA_PY], {
    input: jobText,
  });
  return stdout.trim();
}

interface LavaLogLine {
  lvl?: string;
  msg?: unknown;
}

/**
 * lava-run prints one log entry a line (a YAML flow mapping, lava_common/log.py dump); a failed validation is its "job" result's error_msg
 * (and the exception's name on an error line), a passed one a "validate" result "pass".
 */
export function lavaRunOutcome(output: string): {
  validated: boolean;
  errors: string[];
  /** LAVA's result of the whole job, when the log holds it */
  job?: string;
  /** why LAVA failed the job ("Infrastructure error: Connection closed") */
  jobError?: string;
} {
  const errors: string[] = [];
  let validated = false;
  let job: string | undefined;
  let jobError: string | undefined;
  for (const line of output.split("\n")) {
    let entry: LavaLogLine;
    try {
      entry = parse(line) as LavaLogLine;
    } catch {
      if (line.trim()) errors.push(line.trim());
      continue;
    }
    if (!entry || typeof entry !== "object") {
      if (line.trim()) errors.push(line.trim());
      continue;
    }
    const msg = entry.msg;
    if (entry.lvl === "results" && msg && typeof msg === "object") {
      const r = msg as { case?: string; result?: string; error_msg?: string; error_type?: string };
      if (r.case === "validate" && r.result === "pass") validated = true;
      if (r.case === "job" && typeof r.result === "string") job = r.result;
      if (r.case === "job" && r.error_msg)
        jobError = `${r.error_type ? `${r.error_type} error: ` : ""}${r.error_msg.trim()}`;
      if (r.result === "fail" && r.error_msg)
        errors.push(`${r.error_type ? `${r.error_type} error: ` : ""}${r.error_msg.trim()}`);
    } else if ((entry.lvl === "error" || entry.lvl === "exception") && typeof msg === "string") {
      errors.push(msg.trim());
    }
  }
  return {
    validated,
    errors,
    ...(job !== undefined ? { job } : {}),
    ...(jobError !== undefined ? { jobError } : {}),
  };
}

/**
 * Validates a job the way a LAVA lab would: its schema (lava-server's check on submission), then
 * `lava-run --validate` against a qemu device rendered with the job's context. Nothing is left
 * behind: a private temp dir, and lava-run's own directory under /var/lib/lava, are removed.
 */
export async function validateLavaJob(
  jobYamlPath: string,
  device: QemuDeviceOptions = {},
): Promise<{ ok: boolean; errors: string }> {
  const lavaRun = lavaRunPath();
  const jobText = await readFile(jobYamlPath, "utf8");
  let job: { context?: Record<string, unknown> } | null;
  try {
    job = parse(jobText) as typeof job;
  } catch (err) {
    return { ok: false, errors: `${jobYamlPath} is not YAML: ${(err as Error).message}` };
  }
  const noKvm = device.noKvm ?? !existsSync(SYS_CLASS_KVM);
  const deviceYaml = await renderQemuDevice({
    ...device,
    noKvm,
    context: { ...job?.context, ...device.context },
  });
  const schema = await schemaErrors(jobText);

  const prefix = `hil-validate-${process.pid}-${randomBytes(4).toString("hex")}-`;
  const jobId = "1";
  const lavaTmp = join(DISPATCHER_TMP, `${prefix}${jobId}`);
  const dir = await mkdtemp(join(tmpdir(), "hil-lava-validate-"));
  const cleanup = () => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(lavaTmp, { recursive: true, force: true });
  };
  const unregister = onProcessExit(cleanup);
  try {
    const devicePath = join(dir, "device.yaml");
    const dispatcherPath = join(dir, "dispatcher.yaml");
    await writeFile(devicePath, deviceYaml);
    await writeFile(dispatcherPath, `prefix: ${JSON.stringify(prefix)}\n`);
    const r = await probe(lavaRun, [
      "--validate",
      "--job-id",
      jobId,
      "--output-dir",
      join(dir, "output"),
      "--device",
      devicePath,
      "--dispatcher",
      dispatcherPath,
      jobYamlPath,
    ]);
    const outcome = lavaRunOutcome(`${r.stdout}\n${r.stderr}`);
    const errors = [...(schema ? [`LAVA job schema: ${schema}`] : []), ...outcome.errors];
    const ok = r.exitCode === 0 && outcome.validated && schema === "";
    if (!ok && errors.length === 0) errors.push(`lava-run --validate exited with status ${r.exitCode}`);
    return { ok, errors: errors.join("\n") };
  } finally {
    unregister();
    await rm(dir, { recursive: true, force: true });
    await rm(lavaTmp, { recursive: true, force: true });
  }
}
