/**
 * Device behaviour profiles as data: fixtures/profiles/<name>.json, validated with zod. A profile
 * names every ErdmaProfile field, or `extends` another profile and names only what differs.
 * Numbers may be written as JSON numbers or "0x..." strings. Every problem is one HilError naming
 * the file and the field.
 */
import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { HilError, isHilError } from "../../util/errors.ts";
import { readUserText } from "../../util/user-file.ts";
import { NUM_MSIX_VEC } from "./hw.ts";
import { checkProfile, type ErdmaProfile } from "./profile.ts";

/** How deep `extends` may go: far more than any real profile needs, little enough to read at once. */
const MAX_EXTENDS_DEPTH = 16;

export const PROFILES_DIR = fileURLToPath(new URL("../../fixtures/profiles/", import.meta.url));
export const DEFAULT_PROFILE = "erdma-reflush";

const NAME = /^[a-z0-9][a-z0-9._-]*$/;

/** An integer in [lo, hi], as a JSON number or a "0x..." string. */
function int(lo: number, hi: number) {
  return z.unknown().transform((v, ctx) => {
    if (v === undefined) {
      ctx.addIssue({ code: "custom", message: "required" });
      return z.NEVER;
    }
    const n =
      typeof v === "number"
        ? v
        : typeof v === "string" && /^0x[0-9a-f]+$/i.test(v)
          ? Number.parseInt(v, 16)
          : NaN;
    if (Number.isNaN(n)) {
      ctx.addIssue({
        code: "custom",
        message: `expected a number or a "0x..." hex string, got ${JSON.stringify(v)}`,
      });
      return z.NEVER;
    }
    if (!Number.isInteger(n) || n < lo || n > hi) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(v)} is not an integer in ${lo}..${hi}` });
      return z.NEVER;
    }
    return n;
  });
}

const capsSchema = z.strictObject({
  maxCqeLog2: int(1, 24),
  maxRecvWrLog2: int(1, 16),
  maxMrSizeLog2: int(12, 63),
  maxMwLog2: int(0, 31),
  qblock: int(1, 0xfff),
  defaultCc: int(0, 15),
  localDmaKey: int(0, 0xffff_ffff),
  atomic: z.boolean(),
  mttVa: z.boolean(),
  extendDb: z.boolean(),
  maxGidLog2: int(0, 15),
  maxAhLog2: int(0, 20),
});

const profileSchema = z.strictObject({
  name: z.string().regex(NAME),
  description: z.string().optional(),
  /** where the behaviour comes from: a spec section, a driver source, a mailing-list thread */
  source: z.string().optional(),
  protocol: z.enum(["iwarp", "rocev2"]),
  version: int(1, 0xffff_ffff),
  fwVersion: int(0, 0xffff_ffff),
  grpNum: int(0, 0xffff_ffff),
  msixVectors: int(1, NUM_MSIX_VEC),
  caps: capsSchema,
  reflush: z.enum(["honour", "ignore", "unsupported"]),
  errorFlush: z.enum(["stop", "reflush", "always"]),
  statsCommand: z.boolean(),
  confDeviceCommand: z.boolean(),
  maxEqDepthLog2: int(1, 15),
  maxCmdqDepth: int(4, 1 << 16),
  closeInError: z.enum(["refuse", "accept"]),
  recvNotPosted: z.enum(["terminate", "wait"]).optional(),
});

/** What a file may hold: a whole profile, or `extends` and the fields that differ. */
const fileSchema = z
  .object({
    name: z.string().regex(NAME, "a profile name: lower case letters, digits, '-', '.', '_'"),
    extends: z.string().regex(NAME).optional(),
    caps: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

/** The profile file a name (fixtures/profiles/<name>.json) or a path (contains "/" or ends in .json) means. */
export function profilePath(nameOrPath: string): string {
  if (nameOrPath.includes("/") || nameOrPath.endsWith(".json")) return resolve(nameOrPath);
  return join(PROFILES_DIR, `${nameOrPath}.json`);
}

/** The names of the profiles in fixtures/profiles. */
export function listProfiles(): string[] {
  try {
    return readdirSync(PROFILES_DIR)
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -5))
      .sort();
  } catch {
    return [];
  }
}

function issuesText(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? i.path.join(".") : "(top level)"}: ${i.message}`)
    .join("\n");
}

function readRaw(file: string, chain: string[]): Record<string, unknown> {
  if (!existsSync(file)) {
    const known = listProfiles();
    throw new HilError(`no such device profile`, {
      where: file,
      detail: known.length ? `profiles in ${PROFILES_DIR}: ${known.join(", ")}` : undefined,
    });
  }
  let text: string;
  try {
    text = readUserText(file, "device profile");
  } catch (err) {
    if (isHilError(err)) throw err;
    throw new HilError("cannot read the device profile", { where: file, detail: (err as Error).message });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new HilError(`not valid JSON: ${(err as Error).message}`, { where: file });
  }
  const head = fileSchema.safeParse(data);
  if (!head.success)
    throw new HilError("not a device profile", { where: file, detail: issuesText(head.error) });
  const stem = basename(file, ".json");
  if (head.data.name !== stem) {
    throw new HilError(`name: "${head.data.name}" differs from the file name "${stem}"`, { where: file });
  }
  const raw = { ...(data as Record<string, unknown>) };
  const parent = head.data.extends;
  delete raw.extends;
  if (parent === undefined) return raw;
  if (chain.length >= MAX_EXTENDS_DEPTH) {
    throw new HilError(`extends: a profile may extend at most ${MAX_EXTENDS_DEPTH} others in a chain`, {
      where: file,
      detail: [...chain, parent].join(" -> "),
    });
  }
  if (chain.includes(parent)) {
    throw new HilError(`extends: "${parent}" makes a cycle (${[...chain, parent].join(" -> ")})`, {
      where: file,
    });
  }
  // the base: beside the file, else among the project's profiles
  const beside = join(dirname(file), `${parent}.json`);
  const baseFile = existsSync(beside) ? beside : join(PROFILES_DIR, `${parent}.json`);
  if (!existsSync(baseFile)) {
    throw new HilError(`extends: no profile "${parent}" beside it or in ${PROFILES_DIR}`, { where: file });
  }
  const base = readRaw(baseFile, [...chain, parent]);
  const caps = { ...((base.caps as Record<string, unknown>) ?? {}), ...(head.data.caps ?? {}) };
  // the description and the source belong to the file that says them
  return { ...base, description: undefined, source: undefined, ...raw, caps };
}

/** Loads and validates a profile by name or path. Throws HilError naming the file and the field. */
export function loadProfile(
  nameOrPath: string = DEFAULT_PROFILE,
): ErdmaProfile & { description?: string; source?: string } {
  const file = profilePath(nameOrPath);
  const raw = readRaw(file, [basename(file, ".json")]);
  const parsed = profileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new HilError("invalid device profile", { where: file, detail: issuesText(parsed.error) });
  }
  const { description, source, ...profile } = parsed.data;
  try {
    checkProfile(profile);
  } catch (err) {
    throw new HilError((err as Error).message, { where: file });
  }
  return {
    ...profile,
    ...(description === undefined ? {} : { description }),
    ...(source === undefined ? {} : { source }),
  };
}
