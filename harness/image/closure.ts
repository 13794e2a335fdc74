import { type AptContext, askAboutLists } from "../../util/apt.ts";
import { HilError } from "../../util/errors.ts";

/** One "Depends:" or "PreDepends:" line group: alternatives, the first preferred. */
export type DependencyGroup = string[];

export interface PackageNode {
  /** false for a virtual package (apt prints it as <name>) */
  real: boolean;
  depends: DependencyGroup[];
}

export type DependencyGraph = Map<string, PackageNode>;

function stripArch(name: string): string {
  return name.replace(/:(amd64|any|all)$/, "");
}

/**
 * Parses `apt-cache depends --recurse` output. Alternatives are printed as " |Depends: a" lines
 * followed by the last "  Depends: b"; providers of a virtual package follow on deeper-indented lines.
 */
export function parseAptDepends(text: string): DependencyGraph {
  const graph: DependencyGraph = new Map();
  let current: PackageNode | undefined;
  let pending: string[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (!line.startsWith(" ")) {
      const virtual = /^<(.+)>$/.exec(line.trim());
      const name = stripArch(virtual ? (virtual[1] ?? "") : line.trim());
      current = graph.get(name) ?? { real: !virtual, depends: [] };
      graph.set(name, current);
      pending = [];
      continue;
    }
    const m = /^ ([ |])(Depends|PreDepends): (.+)$/.exec(line);
    if (!m || !current) continue;
    pending.push(stripArch((m[3] ?? "").trim()));
    if (m[1] === " ") {
      current.depends.push(pending);
      pending = [];
    }
  }
  return graph;
}

function unwrapVirtual(name: string): { name: string; virtual: boolean } {
  const m = /^<(.+)>$/.exec(name);
  return m ? { name: m[1] ?? "", virtual: true } : { name, virtual: false };
}

/**
 * The packages reachable from `roots` over Depends/PreDepends. A group mentioning a packaging-only
 * package is dropped; otherwise its first real alternative is taken. Virtual-only groups are skipped.
 *
 * apt's own resolver (`apt-get install --simulate`, or mmdebstrap) answers a different question:
 * what a dpkg-managed system must hold to configure the packages, maintainer scripts included, so
 * it brings in dpkg, debconf, perl-base and the Essential set. The guest is an initramfs that runs
 * no maintainer script and has busybox for a base; its closure leaves those out on purpose
 * (recipe.ts PACKAGING_ONLY), and elf.ts then checks with readelf that every ELF file's libraries
 * are there, so a library the walk left out is a build error, not a broken guest.
 */
export function dependencyClosure(
  graph: DependencyGraph,
  roots: readonly string[],
  packagingOnly: ReadonlySet<string>,
): string[] {
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const name = queue.shift() as string;
    if (seen.has(name)) continue;
    const node = graph.get(name);
    if (!node) throw new HilError(`package ${name} is not in the apt dependency listing`);
    if (!node.real) continue;
    seen.add(name);
    for (const group of node.depends) {
      const alternatives = group.map(unwrapVirtual);
      if (alternatives.some((a) => packagingOnly.has(a.name))) continue;
      const chosen = alternatives.find((a) => !a.virtual && graph.get(a.name)?.real !== false);
      if (chosen && !seen.has(chosen.name)) queue.push(chosen.name);
    }
  }
  return [...seen].sort();
}

const DEPENDS_ONLY = [
  "--recurse",
  "--no-recommends",
  "--no-suggests",
  "--no-conflicts",
  "--no-breaks",
  "--no-replaces",
  "--no-enhances",
];

/** The sorted dependency closure of `roots` in the context's package lists. */
export async function resolvePackageClosure(
  ctx: AptContext,
  roots: readonly string[],
  packagingOnly: ReadonlySet<string>,
): Promise<string[]> {
  const r = await askAboutLists(ctx, "apt-cache", [
    "-o",
    "APT::Architectures=amd64",
    "depends",
    ...DEPENDS_ONLY,
    ...roots,
  ]);
  if (r.exitCode !== 0) {
    throw new HilError(`cannot list the dependencies of the guest packages in ${ctx.name}`, {
      detail: r.stderr.trim(),
    });
  }
  return dependencyClosure(parseAptDepends(r.stdout), roots, packagingOnly);
}
