// A suite without a guest: scenarios parsed from a few lines, a fake boot and an executor that
// plays a script (pass, hang in the drain, or break) with the trace a healthy driver would write.
import type { BootedGuest, PreparedGuest } from "../../harness/boot.ts";
import type { ExecutorGuest, ExecutorOutcome, ScenarioExecutor } from "../../harness/executor/executor.ts";
import { phaseSent, setupSent, stepSent } from "../../harness/executor/sent.ts";
import { type TraceRecord, traceRecordSchema } from "../../harness/protocol/trace.ts";
import type { CompiledScenario } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import type { Scenario } from "../../harness/scenario/schema.ts";
import type { SuiteOptions } from "../../harness/suite/options.ts";
import { runSuite } from "../../harness/suite/suite.ts";

export function scenario(name: string, lines: string[] = []): Scenario {
  return parseScenario(
    [
      "description: d",
      "covers: [9]",
      "profiles: [ib, linux]",
      "steps: [ { drain: { which: qp } } ]",
      ...lines,
    ].join("\n"),
    `${name}.yaml`,
  );
}

export const PREPARED = {
  kernel: { describe: "debian:6.12", version: "6.12.95" },
} as unknown as PreparedGuest;

/**
 * What the executor writes for one of these scenarios (setup, one ib_drain_qp of an idle QP,
 * teardown) on a healthy driver: every command sent shows, done with rc 0, both markers flushed;
 * or, hung, up to the drain whose SQ marker never completes.
 */
export function scriptedRun(compiled: CompiledScenario, hang = false): ExecutorOutcome {
  const all = [
    ...setupSent(compiled),
    ...compiled.steps.flatMap(stepSent),
    ...phaseSent(["reset"], "teardown"),
  ];
  const drainAt = all.findIndex((c) => c.line.startsWith("drain "));
  const sent = hang ? all.slice(0, drainAt + 1) : all;
  const records: TraceRecord[] = [];
  const push = (r: Record<string, unknown>) =>
    records.push(traceRecordSchema.parse({ seq: records.length, ns: records.length, ...r }));
  for (const [i, c] of sent.entries()) {
    push({ ev: "cmd", id: i + 1, line: c.line });
    if (c.line.startsWith("connect "))
      push({ ev: "create", kind: "qp", name: "qp", qp_num: 3, cm: true, scq: "cq", rcq: "cq" });
    if (c.line.startsWith("connect ")) push({ ev: "cm", id: "qp", event: "ESTABLISHED", code: 9, status: 0 });
    if (c.line.startsWith("drain ")) {
      push({ ev: "drain", call: 1, qp: "qp", which: "qp" });
      for (const [call, queue] of [
        [2, "sq"],
        [3, "rq"],
      ] as const) {
        push({ ev: "modify", call, qp: "qp", state: "ERR", by: "drain" });
        push({ ev: "modify_ret", call, rc: 0 });
        push({ ev: "drain_marker", call: 1, qp: "qp", queue, how: "kernel", rc: 0 });
        if (hang) return { records, stuck: [], sent };
        push({
          ev: "drain_marker_cqe",
          call: 1,
          cq: "cq",
          qp: "qp",
          queue,
          status: 5,
          status_name: "WR_FLUSH_ERR",
          opcode: 0,
          opcode_name: "SEND",
          qp_num: 3,
          vendor_err: 0,
        });
      }
      push({ ev: "drain_ret", call: 1, us: 100, state: "ERR" });
    }
    push({ ev: "done", id: i + 1, op: c.line.split(" ")[0], rc: 0, us: 1 });
  }
  return { records, stuck: [], sent };
}

/** What the scripted executor does in one run of a scenario: pass, hang in the drain, or break. */
export type Act = "pass" | "hang" | "break";

export interface Fakes {
  boots: number;
  disposed: number;
  /** per run, in order: the scenario, the port its setup listens on and the guest (its boot) it ran on */
  runs: Array<{ scenario: string; port: string; guest: number }>;
  /** per boot, the console log it keeps */
  consoles: string[];
}

/**
 * runSuite's options for a fake guest whose executor does what `script(scenario, nth run of it)`
 * says; `bootConsole(boot)`: what that boot wrote to its console before the suite took it (none).
 */
export function fakeSuite(
  script: (name: string, nth: number) => Act,
  bootConsole?: (boot: number) => string,
) {
  const fakes: Fakes = { boots: 0, disposed: 0, runs: [], consoles: [] };
  const seen = new Map<string, number>();
  const boot = async (_: PreparedGuest, o?: { keepConsole?: string }) => {
    const id = ++fakes.boots;
    fakes.consoles.push(o?.keepConsole ?? "");
    const console = bootConsole?.(id) ?? "";
    return {
      id,
      device: undefined,
      consoleLog: () => console,
      exec: async () => ({ exitCode: 0, stdout: "", stderr: "" }),
      dispose: async () => {
        fakes.disposed++;
      },
    } as unknown as BootedGuest;
  };
  const executorFactory = async (guest: ExecutorGuest): Promise<ScenarioExecutor> => {
    const on = (guest as unknown as { id: number }).id;
    let wedged = false;
    return {
      kind: "kernel",
      get wedged() {
        return wedged;
      },
      runScenario: async (compiled) => {
        const name = compiled.scenario.name;
        const nth = (seen.get(name) ?? 0) + 1;
        seen.set(name, nth);
        const listen = compiled.setup.find((l) => l.startsWith("listen")) ?? "";
        fakes.runs.push({ scenario: name, port: /port=(\d+)/.exec(listen)?.[1] ?? "?", guest: on });
        // a turn of the event loop, as a guest round trip takes: other guests run meanwhile
        await new Promise((resolve) => setImmediate(resolve));
        const act = script(name, nth);
        if (act === "break") return { records: [], stuck: [], sent: [], error: "ssh went away" };
        if (act === "hang") {
          wedged = true;
          return {
            ...scriptedRun(compiled, true),
            stuck: [
              { ev: "stuck", step: 0, op: "drain", ms: 10_004, stack: "[<0>] __ib_drain_sq", state: "D" },
            ],
          };
        }
        return scriptedRun(compiled);
      },
      close: async () => {},
    };
  };
  return { fakes, opts: { boot, executorFactory } };
}

/** The suite on the fake guests into `runDir`, with erdma and its reflush profile, as `hil run` would. */
export async function runFakeSuite(
  runDir: string,
  scenarios: Scenario[],
  script: (name: string, nth: number) => Act,
  extra: Pick<SuiteOptions, "repeat" | "guests" | "probe"> = {},
  bootConsole?: (boot: number) => string,
) {
  const { fakes, opts } = fakeSuite(script, bootConsole);
  const report = await runSuite({
    prepared: PREPARED,
    scenarios,
    runDir,
    driver: "erdma",
    executor: "kernel",
    deviceProfile: "erdma-reflush",
    ...extra,
    ...opts,
  });
  return { dir: runDir, fakes, report };
}

/** A scenario with a fault step (a dropped send completion): a SKIP where no fault can be armed. */
export function faultyScenario(): Scenario {
  return parseScenario(
    [
      "description: d",
      "covers: [5]",
      "drivers: [erdma]",
      "steps:",
      "  - post_send: { count: 2 }",
      "  - fault: { kind: drop-cqe, queue: sq }",
      "  - drain: { which: sq }",
    ].join("\n"),
    "faulty.yaml",
  );
}

/** The suite of faultyScenario() alone on `device`, under linux, where no executor may load: nothing boots. */
export function runFaultyOn(device: SuiteOptions["device"], runDir: string) {
  return runSuite({
    prepared: {} as PreparedGuest,
    scenarios: [faultyScenario()],
    runDir,
    driver: "erdma",
    executor: "kernel",
    device,
    profiles: ["linux"],
    executorFactory: async () => {
      throw new Error("no executor may load: nothing boots");
    },
  });
}
