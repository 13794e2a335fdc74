/**
 * A Stryker test runner ("tap-in-process", stryker.config.json) that runs tap test files inside
 * its own worker process and keeps that process for the next mutant. Stryker's command runner
 * starts one process per mutant, and each paid node, tsx, tap and the harness's modules again
 * (about 4 s of 5 on this machine). Here they load once per worker:
 *
 * - Stryker instruments every mutant into the code at once ("mutation switching"), each behind a
 *   check of `globalThis.__stryker__.activeMutant` made when the code runs, so switching mutants is
 *   setting that field.
 * - A test file runs again by importing it under a new query string (`?stryker-run=N`): its own
 *   top-level `t.test` calls register anew on tap's root test, while the modules it imports
 *   resolve to the URLs without the query and stay loaded.
 * - Each test file is one Stryker "test" with its own coverage (the instrumented code counts the
 *   mutants it reaches under `__stryker__.currentTestId`), so a mutant runs only the files that
 *   reach it, and a mutant no file reaches is reported as not covered without a run.
 * - Code that runs only while a module loads (a top-level constant) cannot be switched afterwards:
 *   the modules the test files import load before any test runs, so what they reach then is
 *   Stryker's "static" coverage. A static mutant runs on a fresh copy of the project's modules,
 *   loaded with the mutant active: its test files are imported under `?stryker-gen=N`, and a
 *   resolve hook hands every project module they reach (not node_modules: tap stays one) the same
 *   query, so each is a new module. The copies stay in memory until the worker ends, so
 *   stryker.config.json restarts it now and then (maxTestRunnerReuse).
 *
 * A file whose tests fail under a mutant kills it; failures are counted on tap's root test, whose
 * TAP output goes nowhere but the first failure's line, kept for the report.
 */
import { readFileSync } from "node:fs";
import { register } from "node:module";
import { dirname, relative, resolve } from "node:path";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import {
  INSTRUMENTER_CONSTANTS,
  type InstrumenterContext,
  type StrykerOptions,
} from "@stryker-mutator/api/core";
import { commonTokens, declareClassPlugin, PluginKind, tokens } from "@stryker-mutator/api/plugin";
import {
  type DryRunOptions,
  type DryRunResult,
  DryRunStatus,
  type MutantRunOptions,
  type MutantRunResult,
  MutantRunStatus,
  type TestResult,
  type TestRunner,
  type TestRunnerCapabilities,
  TestStatus,
} from "@stryker-mutator/api/test-runner";

type TapRoot = typeof import("tap")["t"];

interface TapInProcessOptions {
  /** Test files, relative to the project (the sandbox Stryker runs in), in the order they run. */
  testFiles: string[];
}

const OPTIONS_KEY = "tapInProcess";

export const strykerValidationSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    [OPTIONS_KEY]: {
      description: "Options of the tap-in-process test runner (test/support/stryker-tap-runner.ts).",
      type: "object",
      properties: {
        testFiles: {
          description: "The tap test files to run, relative to the project, in the order they run.",
          type: "array",
          items: { type: "string" },
          minItems: 1,
        },
      },
      required: ["testFiles"],
      additionalProperties: false,
    },
  },
};

/** The instrumented code's shared state, created by whichever of them runs first. */
function strykerNamespace(): InstrumenterContext {
  const global = globalThis as { [INSTRUMENTER_CONSTANTS.NAMESPACE]?: InstrumenterContext };
  const ns = global[INSTRUMENTER_CONSTANTS.NAMESPACE] ?? {};
  global[INSTRUMENTER_CONSTANTS.NAMESPACE] = ns;
  return ns;
}

/**
 * Module resolution hook (node:module register, in the loader's thread): a module imported from a
 * URL carrying `stryker-gen=N` gets the same query when it is one of the project's (under `root`,
 * outside node_modules), so each generation is a new copy of the project's modules.
 */
const GENERATION_HOOK = `
let root;
export function initialize(data) { root = data.root; }
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const generation = context.parentURL && /[?&]stryker-gen=(\\d+)/.exec(context.parentURL);
  if (!generation || !resolved.url.startsWith(root) || resolved.url.includes("/node_modules/") || resolved.url.includes("?")) {
    return resolved;
  }
  return { ...resolved, url: resolved.url + "?stryker-gen=" + generation[1] };
}
`;

/** The relative module specifiers a test file imports (`from "…"`, `import "…"`). */
function relativeImports(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom|^import)\s*["'](\.{1,2}\/[^"']+)["']/gm)].map((m) => m[1] as string);
}

export class TapInProcessRunner implements TestRunner {
  static inject = tokens(commonTokens.options);

  readonly #testFiles: string[];
  #root: TapRoot | undefined;
  #runs = 0;
  #generations = 0;
  /** The first `not ok` lines of the file running now: an assertion's, then its tests'. */
  #failures: string[] = [];
  #rootTeardowns: (() => unknown)[] = [];

  constructor(options: StrykerOptions) {
    const own = options[OPTIONS_KEY] as TapInProcessOptions | undefined;
    if (!own?.testFiles.length) {
      throw new Error(`stryker config: ${OPTIONS_KEY}.testFiles must list the tap test files to run`);
    }
    this.#testFiles = own.testFiles;
  }

  capabilities(): TestRunnerCapabilities {
    return { reloadEnvironment: true };
  }

  async dryRun(options: DryRunOptions): Promise<DryRunResult> {
    const ns = strykerNamespace();
    await this.#load();
    const tests: TestResult[] = [];
    for (const file of this.#testFiles) {
      ns.currentTestId = file;
      const start = performance.now();
      const failure = await this.#runFile(file);
      const timeSpentMs = Math.round(performance.now() - start);
      tests.push(
        failure === undefined
          ? { id: file, name: file, fileName: file, timeSpentMs, status: TestStatus.Success }
          : {
              id: file,
              name: file,
              fileName: file,
              timeSpentMs,
              status: TestStatus.Failed,
              failureMessage: failure,
            },
      );
    }
    ns.currentTestId = undefined;
    return {
      status: DryRunStatus.Complete,
      tests,
      // a copy: the instrumented code goes on counting into the original
      mutantCoverage: options.coverageAnalysis === "off" ? undefined : structuredClone(ns.mutantCoverage),
    };
  }

  async mutantRun(options: MutantRunOptions): Promise<MutantRunResult> {
    const ns = strykerNamespace();
    // The modules loaded first never run with a mutant active while loading: a static mutant gets a
    // generation of its own, and a later mutant (Stryker's reloadEnvironment) the first modules.
    await this.#load();
    const generation = options.mutantActivation === "static" ? ++this.#generations : undefined;
    try {
      ns.activeMutant = options.activeMutant.id;
      ns.hitCount = options.hitLimit === undefined ? undefined : 0;
      ns.hitLimit = options.hitLimit;
      const files = options.testFilter ?? this.#testFiles;
      const killedBy: string[] = [];
      let failureMessage = "";
      let nrOfTests = 0;
      for (const file of files) {
        nrOfTests++;
        const failure = await this.#runFile(file, generation);
        if (ns.hitLimit !== undefined && (ns.hitCount ?? 0) > ns.hitLimit) {
          return {
            status: MutantRunStatus.Timeout,
            reason: `hit limit reached (${ns.hitCount}/${ns.hitLimit})`,
          };
        }
        if (failure !== undefined) {
          killedBy.push(file);
          failureMessage ||= failure;
          if (!options.disableBail) break;
        }
      }
      return killedBy.length
        ? { status: MutantRunStatus.Killed, killedBy, failureMessage, nrOfTests }
        : { status: MutantRunStatus.Survived, nrOfTests };
    } finally {
      ns.activeMutant = undefined;
      ns.hitCount = undefined;
      ns.hitLimit = undefined;
    }
  }

  /**
   * Starts tap's root test with its output going nowhere (no exit code, no timeout of its own:
   * Stryker times each run), then loads every module the test files import, so that what loading
   * them reaches counts as static.
   */
  async #load(): Promise<void> {
    if (this.#root !== undefined) return;
    process.env.TAP_TIMEOUT = "0";
    // tap's root test tells a parent tap runner its timeout over IPC; the parent here is Stryker,
    // whose channel carries only its own (string) messages.
    const send = process.send?.bind(process);
    if (send !== undefined) {
      process.send = ((message: unknown, ...rest: never[]) =>
        typeof message === "string" ? send(message, ...rest) : false) as typeof process.send;
    }
    const { t } = await import("tap");
    register(`data:text/javascript,${encodeURIComponent(GENERATION_HOOK)}`, {
      data: { root: pathToFileURL(`${process.cwd()}/`).href },
    });
    t.pipe(
      new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          if (this.#failures.length < 3) {
            const lines = chunk.toString().split("\n");
            this.#failures.push(
              ...lines.filter((line) => /^\s*not ok /.test(line)).map((line) => line.trim()),
            );
          }
          done();
        },
      }),
    );
    // A teardown on the root test would end it once idle, and run only when the process ends: here
    // it runs when the file that added it has finished, as it would at the end of that file's
    // own process.
    const keep = (fn: () => unknown) => {
      this.#rootTeardowns.push(fn);
    };
    Object.assign(t, { teardown: keep, after: keep });
    this.#root = t;
    for (const file of this.#testFiles) {
      const path = resolve(file);
      for (const specifier of relativeImports(readFileSync(path, "utf8"))) {
        await import(pathToFileURL(resolve(dirname(path), specifier)).href);
      }
    }
  }

  /**
   * Runs one test file's tests to their end, on the modules loaded first or on a new generation of
   * them; returns why it failed, or undefined if it passed.
   */
  async #runFile(file: string, generation?: number): Promise<string | undefined> {
    const root = this.#root;
    if (root === undefined) throw new Error("tap-in-process: run before load");
    if (root.results !== undefined || root.bailedOut) {
      // tap's root test has ended (a mutant made a test bail out): no later run could pass here, so
      // this worker ends and Stryker runs the mutant again in a new one.
      process.exit(70);
    }
    const failsBefore = root.counts.fail;
    this.#failures = [];
    try {
      const query = generation === undefined ? `stryker-run=${++this.#runs}` : `stryker-gen=${generation}`;
      await import(`${pathToFileURL(resolve(file)).href}?${query}`);
    } catch (error) {
      return `${relative(process.cwd(), resolve(file))} failed to load: ${String(error)}`;
    }
    await new Promise<void>((idle) => (root.idle ? idle() : root.once("idle", () => idle())));
    for (const teardown of this.#rootTeardowns.splice(0)) {
      try {
        await teardown();
      } catch (error) {
        return `${file}: its teardown failed: ${String(error)}`;
      }
    }
    if (root.counts.fail === failsBefore) return undefined;
    return `${file}: ${this.#failures.slice(0, 3).join(" / ") || "a test failed"}`;
  }
}

export const strykerPlugins = [
  declareClassPlugin(PluginKind.TestRunner, "tap-in-process", TapInProcessRunner),
];
