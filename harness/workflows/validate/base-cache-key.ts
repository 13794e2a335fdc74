/**
 * What decides the verdicts of `hil validate`'s base side, and the cache key made of it: the base
 * kernel (its cache key: base tree, config fragments), the guest (the initramfs's key, the QEMU
 * that boots it), the driver and executor, the device profile by content, each scenario by the
 * bytes of its file and the known bugs it carries, the scenario filter, the oracle's rule sets,
 * and hil itself by the content of its code (HARNESS_SOURCES).
 *
 * hil by content, not by version and commit: package.json's version does not move between
 * commits, an installed package has no commit to read, and a working tree's edits (the oracle,
 * the device model, an executor) change verdicts before anything is committed. A digest of the
 * code sees all three; its price is that any edit to hil's code, one that could not change a
 * verdict too, runs the base again.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadProfile } from "../../../qemu/erdma/profile-file.ts";
import { hashFile, hashParts } from "../../../util/hash.ts";
import { PACKAGE_ROOT } from "../../../util/package.ts";
import { sourceDigest } from "../../../util/source-digest.ts";
import { type ChosenDevice, impliedProfile, recordedDevice } from "../../backend/registry.ts";
import type { PreparedGuest } from "../../boot.ts";
import type { Scenario } from "../../scenario/schema.ts";
import type { JobSpec } from "../job/job.ts";

/**
 * hil's code: what runs on the host (harness, the device model in qemu/, util, bin, the
 * dependencies pinned by the lock file) and in the guest (guest/: executors, init, kconfig).
 * Data a run reads is keyed by what it reads (scenarios, profiles, known bugs), so fixtures/ is
 * not here: a new scenario or an edited series does not run the base again.
 */
export const HARNESS_SOURCES: readonly string[] = [
  "bin",
  "guest",
  "harness",
  "qemu",
  "util",
  "package.json",
  "package-lock.json",
];

let harnessDigest: string | undefined;

/** The digest of hil's code as installed here (once per process; Node's version with it). */
export function harnessVersion(root = PACKAGE_ROOT): string {
  if (root !== PACKAGE_ROOT) return `${process.versions.node}:${sourceDigest(root, HARNESS_SOURCES)}`;
  harnessDigest ??= `${process.versions.node}:${sourceDigest(root, HARNESS_SOURCES)}`;
  return harnessDigest;
}

export interface ScenarioIdentity {
  name: string;
  /** sha256 of the scenario file's bytes */
  sha256: string;
  /** the known-bug records it carries (its own and those of fixtures/known-bugs.yaml), as JSON */
  knownBugs: string;
}

/** Everything the base side's verdicts depend on; recorded with the cached verdicts, for people. */
export interface BaseKeyInputs {
  kernel: string;
  image: string;
  qemu: string;
  driver: JobSpec["driver"];
  executor: JobSpec["executor"];
  /** the resolved profile (its `extends` applied) as JSON; null for a driver with no device */
  deviceProfile: string | null;
  /** in the order they run (later scenarios run in the guest earlier ones ran in) */
  scenarios: ScenarioIdentity[];
  /** scenarios not meant for the target were left out (no --scenario given) */
  meantOnly: boolean;
  /** the rule sets judged, sorted; null: each scenario's own */
  rules: string[] | null;
  harness: string;
  /** the device, where it is not the one the spec implies (--device-rtl: its verdicts.json record) */
  device?: string;
}

const KEY_FORMAT = "hil-validate-base/1";

function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof RegExp ? `/${v.source}/${v.flags}` : v));
}

export function baseCacheKey(inputs: BaseKeyInputs): string {
  return hashParts([
    KEY_FORMAT,
    inputs.kernel,
    inputs.image,
    inputs.qemu,
    inputs.driver,
    inputs.executor,
    inputs.deviceProfile ?? "no device",
    ...inputs.scenarios.map((s) => `${s.name}\n${s.sha256}\n${s.knownBugs}`),
    inputs.meantOnly ? "meant only" : "all selected",
    inputs.rules ? inputs.rules.join(",") : "each scenario's own rule sets",
    inputs.harness,
    // absent for the implied device, so the keys of bases cached before it was keyed stay valid
    ...(inputs.device !== undefined ? [`device ${inputs.device}`] : []),
  ]);
}

export function scenarioIdentity(s: Scenario): ScenarioIdentity {
  return {
    name: s.name,
    sha256: createHash("sha256").update(readFileSync(s.file)).digest("hex"),
    knownBugs: json(s.known_bugs ?? []),
  };
}

/** The inputs of the base side of a validation: its spec, its prepared guest, its scenarios. */
export async function baseKeyInputs(
  spec: JobSpec,
  prepared: PreparedGuest,
  scenarios: readonly Scenario[],
  opts: { meantOnly: boolean; harness?: string; device?: ChosenDevice },
): Promise<BaseKeyInputs> {
  const profile = impliedProfile(spec.driver, spec.deviceProfile);
  return {
    kernel: prepared.kernel.key,
    image: prepared.initrdKey ?? (await hashFile(prepared.initrd)),
    qemu: `${prepared.qemu.version} ${prepared.qemu.binary}`,
    driver: spec.driver,
    executor: spec.executor,
    deviceProfile: profile !== undefined ? json(loadProfile(profile)) : null,
    scenarios: scenarios.map(scenarioIdentity),
    meantOnly: opts.meantOnly,
    rules: spec.oracle ? [...new Set(spec.oracle)].sort() : null,
    harness: opts.harness ?? harnessVersion(),
    ...(opts.device ? { device: json(recordedDevice(opts.device, "")) } : {}),
  };
}
