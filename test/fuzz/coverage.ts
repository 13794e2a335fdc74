/**
 * Coverage feedback from V8's precise block coverage (the inspector's Profiler domain, in this
 * process): after each execution, every block range of the watched scripts that ran becomes a
 * feature, refined by a hit-count bucket (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+, as AFL does).
 * Taking the coverage resets V8's counters, so each take sees one execution (or one batch).
 * https://chromedevtools.github.io/devtools-protocol/tot/Profiler/#method-takePreciseCoverage
 */
import { Session } from "node:inspector";

interface Range {
  startOffset: number;
  endOffset: number;
  count: number;
}
interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: { ranges: Range[] }[];
}

function bucket(count: number): number {
  if (count <= 3) return count;
  if (count < 8) return 4;
  if (count < 16) return 5;
  if (count < 32) return 6;
  return count < 128 ? 7 : 8;
}

export class BlockCoverage {
  private readonly session = new Session();
  private readonly blockIds = new Map<string, number>();

  /** `watch`: which scripts count (matched against their file URL). */
  constructor(private readonly watch: RegExp) {
    this.session.connect();
    this.call("Profiler.enable");
    this.call("Profiler.startPreciseCoverage", { callCount: true, detailed: true });
  }

  /** Distinct block ranges of the watched scripts seen so far (in any take). */
  get blocksKnown(): number {
    return this.blockIds.size;
  }

  // An in-thread inspector session answers synchronously: the callback has run when post returns.
  private call(method: string, params?: object): unknown {
    let result: unknown;
    let error: Error | null = null;
    let answered = false;
    this.session.post(method, params ?? {}, (err, res) => {
      error = err;
      result = res;
      answered = true;
    });
    if (!answered) throw new Error(`inspector ${method} did not answer synchronously`);
    if (error) throw error;
    return result;
  }

  /** The features hit since the last take (block id * 16 + count bucket), and resets the counters. */
  take(): number[] {
    const { result } = this.call("Profiler.takePreciseCoverage") as { result: ScriptCoverage[] };
    const features: number[] = [];
    for (const script of result) {
      if (!this.watch.test(script.url)) continue;
      for (const fn of script.functions) {
        for (const r of fn.ranges) {
          if (r.count === 0) continue;
          const key = `${script.url}:${r.startOffset}:${r.endOffset}`;
          let id = this.blockIds.get(key);
          if (id === undefined) {
            id = this.blockIds.size;
            this.blockIds.set(key, id);
          }
          features.push(id * 16 + bucket(r.count));
        }
      }
    }
    return features;
  }

  /** Blocks (not features) among `features`. */
  static blocksOf(features: Iterable<number>): Set<number> {
    const out = new Set<number>();
    for (const f of features) out.add(Math.floor(f / 16));
    return out;
  }

  close(): void {
    this.call("Profiler.stopPreciseCoverage");
    this.session.disconnect();
  }
}
