/** TAP/KTAP text parsed back with tap's own parser: the closing counts and every result at every depth. */
import { Parser, type Result } from "tap-parser";

export interface ParsedTap {
  final: {
    ok: boolean;
    count: number;
    pass: number;
    fail: number;
    todo: number;
    skip: number;
    /** the failed results, and the parser's own complaints (with a tapError) */
    failures: Array<{ tapError?: string }>;
  };
  /** every result line at every depth */
  all: Result[];
}

export function parseTap(text: string): Promise<ParsedTap> {
  return new Promise((resolve) => {
    const all: Result[] = [];
    const watch = (p: Parser) => {
      p.on("assert", (r: Result) => all.push(r));
      p.on("child", (c: Parser) => watch(c));
    };
    const p = new Parser();
    watch(p);
    p.on("complete", (final) => resolve({ final, all }));
    p.end(text);
  });
}
