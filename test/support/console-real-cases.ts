// The console fixtures are real and can be made again (the cases of
// test/integration/console-real.test.ts and test/nightly/console-real-versions.test.ts): for a
// golden log of test/fixtures/console/ this captures the same kind on the same kernel from a real guest
// (test/support/console-capture.ts) and checks that the parser finds in the fresh log what the
// stored expected file says, up to what changes from run to run (PIDs, addresses, timestamps,
// line numbers): the same events in order, their texts, processes, WARN locations and the
// functions of their stacks, and the same blocked tasks.
import t from "tap";
import { parseConsole } from "../../harness/console/parse.ts";
import { withoutSlowBootWaits } from "../../harness/console/slow-boot.ts";
import {
  CAPTURE_CONFIGS,
  CAPTURE_KINDS,
  type CaptureKind,
  capture,
  fixtureHeader,
} from "./console-capture.ts";
import { type ConsoleGolden, goldenOf, listGolden, readGolden } from "./console-golden.ts";

/** What a header line says was captured: the kind and the kernel base. */
function capturedAs(header: string): { kind: CaptureKind; base: string } | undefined {
  const m = /^# REAL console log \(([\w.-]+)\): Linux \S+ \(([^)]+)\)/.exec(header);
  const kind = CAPTURE_KINDS.find((k) => k === m?.[1]);
  return kind && m ? { kind, base: m[2] as string } : undefined;
}

/** The parse without what differs between two runs of the same capture. */
function stable(g: ConsoleGolden) {
  const mask = (s: string | undefined) =>
    s
      ?.replace(/\b0x[0-9a-f]+\b/g, "0x_")
      .replace(/\b[0-9a-f]{16}\b/g, "_")
      .replace(/\d+/g, "N");
  // "? fn+off" frames are stale words the unwinder found on the stack, not calls: they change
  // with every build of a module, so only the reliable frames are compared
  const fns = (frames: string[]) =>
    frames.filter((f) => !f.startsWith("? ")).map((f) => /^([\w.$]+)\+/.exec(f)?.[1] ?? f);
  return {
    events: g.events.map((e) => ({
      kind: e.kind,
      text: mask(e.text),
      comm: e.process?.comm,
      at: e.at,
      rip: e.rip?.replace(/\+.*/, ""),
      message: mask(e.message),
      frames: fns(e.frames),
    })),
    blockedTasks: g.blockedTasks.map((b) => ({
      comm: b.process.comm,
      state: b.state,
      frames: fns(b.frames),
    })),
  };
}

/**
 * Whether a golden log was captured on the default kernel (debian:6.12 as base.config builds it,
 * no fragment): those are captured again in every `npm test`, the others in the nightly tier.
 */
export function onDefaultKernel(as: { kind: CaptureKind; base: string }): boolean {
  return as.base === "debian:6.12" && !CAPTURE_CONFIGS[as.kind];
}

/** One test per golden log that `which` takes (a log whose header names no kind is always taken). */
export function captureAgain(which: (as: { kind: CaptureKind; base: string }) => boolean): void {
  const { pairs } = listGolden();
  t.ok(pairs.length > 0, "golden logs to capture again");
  let taken = 0;
  for (const name of pairs) {
    const { log, expected } = readGolden(name);
    const as = capturedAs(log.split("\n")[0] ?? "");
    if (as && !which(as)) continue;
    taken++;
    t.test(`${name}: captured again (${as?.kind} on ${as?.base})`, async (t) => {
      if (!as) {
        t.fail(`${name}.log's header names no capture kind of console-capture.ts`);
        return;
      }
      const fresh = await capture(as.kind, as.base);
      const parsed = goldenOf(`${fixtureHeader(fresh)}\n${fresh.excerpt}`);
      t.same(stable(parsed), stable(expected), "the same reports as the stored log");
      t.ok(parsed.events.length > 0, "the fresh log has reports");
      // a debug kernel's boot is slower than the hung-task detector (harness/console/slow-boot.ts)
      t.same(
        withoutSlowBootWaits(parseConsole(fresh.log)).events.map((e) => e.kind),
        parsed.events.map((e) => e.kind),
        "the whole console has no report the excerpt left out",
      );
    });
  }
  t.ok(taken > 0, "golden logs of this tier to capture again");
}
