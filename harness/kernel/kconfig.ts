import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { HilError, isHilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";
import { readUserFile } from "../../util/user-file.ts";

/** One option a fragment asks for; `value` is "y", "m", "n" (also for "# ... is not set") or the raw value. */
export interface ConfigRequest {
  name: string;
  value: string;
  file: string;
  line: number;
}

/** A config fragment as the build uses it: its bytes, where it came from, what it asks for. */
export interface Fragment {
  path: string;
  /** the name messages use: the path as the user gave it */
  label: string;
  bytes: Buffer;
  requests: ConfigRequest[];
}

/** The fragments shipped in guest/kconfig besides base.config, by name (`--config smp`). */
export const SHIPPED_FRAGMENT_DIR = fileURLToPath(new URL("../../guest/kconfig/", import.meta.url));

export function shippedFragments(): string[] {
  try {
    return readdirSync(SHIPPED_FRAGMENT_DIR)
      .filter((f) => f.endsWith(".config") && f !== "base.config")
      .map((f) => f.slice(0, -".config".length))
      .sort();
  } catch {
    return [];
  }
}

/**
 * A fragment as the user names it: a file, or (when no such file exists and the name has no
 * slash) a fragment shipped in guest/kconfig, e.g. `smp` for guest/kconfig/smp.config.
 */
export function resolveFragmentPath(nameOrPath: string): string {
  if (existsSync(nameOrPath) || nameOrPath.includes("/")) return nameOrPath;
  const shipped = join(SHIPPED_FRAGMENT_DIR, `${nameOrPath.replace(/\.config$/, "")}.config`);
  return existsSync(shipped) ? shipped : nameOrPath;
}

export function readFragment(path: string, label = path): Fragment {
  let bytes: Buffer;
  try {
    bytes = readUserFile(path, "config fragment");
  } catch (err) {
    if (isHilError(err)) throw err;
    throw new HilError(`config fragment ${label} does not exist or cannot be read`, {
      where: resolve(path),
      detail: `give a fragment file, or one of the fragments shipped in guest/kconfig: ${shippedFragments().join(", ") || "(none)"}`,
    });
  }
  return { path: resolve(path), label, bytes, requests: parseFragment(bytes.toString("utf8"), label) };
}

const ASSIGNMENT = /^CONFIG_([A-Za-z0-9_]+)=(.*)$/;
const NOT_SET = /^# CONFIG_([A-Za-z0-9_]+) is not set\s*$/;

/** Parses a Kconfig fragment; anything that is neither an option, a comment nor blank is an error. */
export function parseFragment(text: string, file: string): ConfigRequest[] {
  const requests: ConfigRequest[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    const notSet = NOT_SET.exec(line);
    if (notSet?.[1]) {
      requests.push({ name: notSet[1], value: "n", file, line: i + 1 });
      return;
    }
    if (line === "" || line.startsWith("#")) return;
    const assign = ASSIGNMENT.exec(line);
    if (!assign?.[1] || assign[2] === undefined || assign[2] === "") {
      throw new HilError(`not a Kconfig option line: ${JSON.stringify(raw)}`, {
        where: `${file}:${i + 1}`,
        detail: 'expected CONFIG_NAME=value (y, m, n, a number or a "string") or "# CONFIG_NAME is not set"',
      });
    }
    requests.push({ name: assign[1], value: assign[2], file, line: i + 1 });
  });
  return requests;
}

/** The options of a .config: name -> value, "n" for "is not set". */
export function parseDotConfig(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const notSet = NOT_SET.exec(line);
    if (notSet?.[1]) values.set(notSet[1], "n");
    const assign = ASSIGNMENT.exec(line);
    if (assign?.[1] && assign[2] !== undefined) values.set(assign[1], assign[2]);
  }
  return values;
}

/** What each option ends up requesting after all fragments merge: the last request of each name wins. */
export function effectiveRequests(fragments: ReadonlyArray<readonly ConfigRequest[]>): ConfigRequest[] {
  const last = new Map<string, ConfigRequest>();
  for (const fragment of fragments) for (const r of fragment) last.set(r.name, r);
  return [...last.values()];
}

/** Whether the fragments ask for an SMP kernel (guest/kconfig/smp.config). */
export function asksForSmp(fragments: readonly Fragment[]): boolean {
  return effectiveRequests(fragments.map((f) => f.requests)).some((r) => r.name === "SMP" && r.value === "y");
}

/**
 * base.config builds an SMP kernel (as Debian's are) and the guest boots it on one CPU unless the
 * user's fragments ask for SMP (smp.config): `nosmp` when they do not.
 */
export function smpBootArgs(userFragments: readonly Fragment[]): string[] {
  return asksForSmp(userFragments) ? [] : ["nosmp"];
}

export interface ConfigMismatch {
  request: ConfigRequest;
  /** the value in the final .config; undefined when the option is absent */
  actual: string | undefined;
}

/** Requests that the final .config does not honour. "n" is honoured by an absent option too. */
export function findMismatches(
  requests: readonly ConfigRequest[],
  finalConfig: Map<string, string>,
): ConfigMismatch[] {
  const out: ConfigMismatch[] = [];
  for (const request of requests) {
    const actual = finalConfig.get(request.name);
    const honoured =
      request.value === "n" ? actual === undefined || actual === "n" : actual === request.value;
    if (!honoured) out.push({ request, actual });
  }
  return out;
}

/** Where a symbol is defined and what it needs, read from the Kconfig files. */
export interface SymbolDefinition {
  file: string;
  line: number;
  type: string | undefined;
  /** conditions of the `if` blocks around the definition in its file, outermost first */
  insideIf: string[];
  dependsOn: string[];
}

const BLOCK_START = /^(config|menuconfig|choice|endchoice|menu|endmenu|if|endif|comment|source)\b/;

/** Reads a symbol's `config NAME` block out of Kconfig text: its type, its `if`s and "depends on" lines. */
export function parseSymbolBlock(
  kconfigText: string,
  name: string,
): Omit<SymbolDefinition, "file"> | undefined {
  const lines = kconfigText.split("\n");
  const start = lines.findIndex((l) => new RegExp(`^\\s*(menu)?config\\s+${name}\\s*$`).test(l));
  if (start < 0) return undefined;
  const insideIf: string[] = [];
  for (const raw of lines.slice(0, start)) {
    const cond = /^\s*if\s+(.+?)\s*$/.exec(raw);
    if (cond?.[1]) insideIf.push(cond[1]);
    else if (/^\s*endif\b/.test(raw)) insideIf.pop();
  }
  let type: string | undefined;
  const dependsOn: string[] = [];
  for (const raw of lines.slice(start + 1)) {
    const l = raw.trim();
    if (BLOCK_START.test(l)) break;
    const t = /^(def_)?(bool|tristate|string|int|hex)\b/.exec(l);
    if (t && !type) type = t[2];
    const dep = /^depends on\s+(.*)$/.exec(l);
    if (dep?.[1]) dependsOn.push(dep[1]);
  }
  return { line: start + 1, type, insideIf, dependsOn };
}

/** Finds the Kconfig file that defines `name` (grep over every Kconfig* file of the tree). */
export async function findSymbolDefinition(
  srcDir: string,
  name: string,
): Promise<SymbolDefinition | undefined> {
  const r = await probe("grep", ["-rlE", "--include=Kconfig*", `^\\s*(menu)?config\\s+${name}\\s*$`, srcDir]);
  const file = r.stdout.split("\n").find((l) => l.length > 0);
  if (!file) return undefined;
  const block = parseSymbolBlock(readFileSync(file, "utf8"), name);
  return block ? { file: relative(srcDir, file), ...block } : undefined;
}

function shown(value: string | undefined): string {
  return value === undefined || value === "n" ? "not set" : value;
}

/** The symbols a Kconfig expression names, with their values in the final .config. */
function symbolValues(expressions: readonly string[], finalConfig: ReadonlyMap<string, string>): string {
  const names = new Set(expressions.flatMap((e) => e.match(/\b[A-Z0-9_]*[A-Z][A-Z0-9_]*\b/g) ?? []));
  return [...names]
    .map((n) => {
      const v = finalConfig.get(n);
      return v === undefined || v === "n" ? `${n} is not set` : `${n}=${v}`;
    })
    .join(", ");
}

/** One line per mismatch: what was asked, where, what came out, and why. */
export function explainMismatch(
  m: ConfigMismatch,
  def: SymbolDefinition | undefined,
  kernel: string,
  finalConfig: ReadonlyMap<string, string> = new Map(),
): string {
  const { request, actual } = m;
  const asked = `CONFIG_${request.name}=${request.value} (${request.file}:${request.line})`;
  if (!def) {
    return `${asked}: the symbol does not exist in Linux ${kernel} (no "config ${request.name}" in any Kconfig file)`;
  }
  const where = `${def.file}:${def.line}`;
  if (request.value === "m" && def.type === "bool") {
    return `${asked}: is a bool (${where}) and cannot be a module; the final .config has ${shown(actual)}`;
  }
  const outcome = actual === undefined ? "dropped it" : `changed it to ${shown(actual)}`;
  const conditions = [...def.insideIf.map((c) => `${c} (enclosing if)`), ...def.dependsOn];
  const needs =
    conditions.length > 0
      ? `; ${where} requires ${conditions.join(" && ")}; in the final .config: ${symbolValues(conditions, finalConfig)}`
      : ` (${where})`;
  return `${asked}: olddefconfig ${outcome}: a dependency is unmet or another option limits it${needs}`;
}

/** Throws one HilError listing every requested option the final .config lacks. */
export async function checkRequestedOptions(
  requests: readonly ConfigRequest[],
  buildDir: string,
  srcDir: string,
  kernel: string,
): Promise<void> {
  const finalConfig = parseDotConfig(readFileSync(join(buildDir, ".config"), "utf8"));
  const mismatches = findMismatches(requests, finalConfig);
  if (mismatches.length === 0) return;
  const lines: string[] = [];
  for (const m of mismatches)
    lines.push(explainMismatch(m, await findSymbolDefinition(srcDir, m.request.name), kernel, finalConfig));
  const names = mismatches.map((m) => `CONFIG_${m.request.name}`).join(", ");
  throw new HilError(
    `kernel config: ${mismatches.length} requested option(s) not in the final .config of Linux ${kernel}: ${names}`,
    {
      detail: lines.join("\n"),
    },
  );
}
