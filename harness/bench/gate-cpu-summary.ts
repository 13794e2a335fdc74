import { relative } from "node:path";

/** One test file's process, as gate-cpu-record.mjs wrote it. */
export interface FileCpu {
  file: string;
  selfS: number;
  childrenS: number;
  wallS: number;
}

export interface GateCpuSummary {
  files: number;
  cpuS: number;
  wallSumS: number;
  /** CPU by the test directory under test/ (unit, integration, faults) */
  byTier: Array<{ tier: string; files: number; cpuS: number }>;
  /** the files that took the most CPU, most first, with their share of the whole */
  top: Array<FileCpu & { cpuS: number; share: number }>;
}

/** Parses the record's JSON lines; a line that is not one is an error naming its number. */
export function parseGateCpuLog(text: string): FileCpu[] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l, i) => {
      const r = JSON.parse(l) as Partial<FileCpu>;
      if (typeof r.file !== "string" || ![r.selfS, r.childrenS, r.wallS].every((x) => typeof x === "number"))
        throw new Error(`gate CPU record, line ${i + 1}: not a test file's record: ${l.slice(0, 120)}`);
      return r as FileCpu;
    });
}

export function summarizeGateCpu(
  records: readonly FileCpu[],
  repoRoot: string,
  topN: number,
): GateCpuSummary {
  const rows = records.map((r) => ({ ...r, file: relative(repoRoot, r.file), cpuS: r.selfS + r.childrenS }));
  const cpuS = rows.reduce((s, r) => s + r.cpuS, 0);
  const tiers = new Map<string, { files: number; cpuS: number }>();
  for (const r of rows) {
    const tier = /^test\/([^/]+)\//.exec(r.file)?.[1] ?? "other";
    const t = tiers.get(tier) ?? { files: 0, cpuS: 0 };
    tiers.set(tier, { files: t.files + 1, cpuS: t.cpuS + r.cpuS });
  }
  return {
    files: rows.length,
    cpuS,
    wallSumS: rows.reduce((s, r) => s + r.wallS, 0),
    byTier: [...tiers].map(([tier, t]) => ({ tier, ...t })).sort((a, b) => b.cpuS - a.cpuS),
    top: [...rows]
      .sort((a, b) => b.cpuS - a.cpuS)
      .slice(0, topN)
      .map((r) => ({ ...r, share: cpuS > 0 ? r.cpuS / cpuS : 0 })),
  };
}
