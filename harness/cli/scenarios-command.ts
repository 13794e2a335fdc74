/**
 * hil scenarios: the drain suite's scenarios as an author sees them. A listing (what each is meant
 * for), --check (each file loaded and compiled: ok or its file:line:col error) and --show (the
 * hil_kverbs command lines each step becomes, with its watchdog, and where it runs).
 */
import { isAbsolute, relative } from "node:path";
import type { Command } from "commander";
import { listProfiles } from "../../qemu/erdma/profile-file.ts";
import { HilError, isHilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { ulpCommand } from "../executor/ulp.ts";
import { RULES, ULP_RULE_SET } from "../oracle/judge.ts";
import { commandLine, keyValueLine } from "../protocol/commands.ts";
import { FIRST_PORT, GUEST_ADDR } from "../protocol/guest-net.ts";
import { type CompiledScenario, type CompiledStep, compileScenario } from "../scenario/compile.ts";
import { stepRules } from "../scenario/exercise.ts";
import { loadScenarioFile } from "../scenario/load.ts";
import { DEVICE_CONDITIONS, describeCondition } from "../scenario/premise-schema.ts";
import { DRIVERS, EXECUTORS, type FaultStep, type Scenario, type Workload } from "../scenario/schema.ts";
import { SCENARIO_DIR, selectScenarioFiles } from "../scenario/select.ts";
import { type Plan, planScenario, planSteps } from "../suite/plan.ts";

/** One selected file: the scenario compiled as the suite would, or why it cannot be. */
export interface ScenarioEntry {
  /** the file as the user reads it: relative to the working directory when below it */
  file: string;
  scenario?: Scenario;
  compiled?: CompiledScenario;
  error?: HilError;
}

/** One driver/executor pair the scenario is meant for, and whether the suite runs it there. */
export interface TargetPlan {
  driver: (typeof DRIVERS)[number];
  executor: (typeof EXECUTORS)[number];
  plan: Plan;
}

function displayPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
}

function asHilError(err: unknown, file: string): HilError {
  if (isHilError(err)) return err;
  return new HilError(err instanceof Error ? err.message : String(err), { where: file, cause: err });
}

/**
 * Loads and compiles the files the patterns select (the `hil run --scenario` syntax; all of `dir`
 * without patterns). A file that does not load is an entry with its error, not a throw; a pattern
 * that matches nothing throws.
 */
export async function loadEntries(
  patterns: string | undefined,
  opts: { dir?: string; cwd?: string } = {},
): Promise<ScenarioEntry[]> {
  const cwd = opts.cwd ?? process.cwd();
  const files = selectScenarioFiles(patterns, opts.dir ?? SCENARIO_DIR);
  const byName = new Map<string, string>();
  const entries: ScenarioEntry[] = [];
  for (const [i, abs] of files.entries()) {
    const file = displayPath(abs, cwd);
    try {
      const scenario: Scenario = { ...(await loadScenarioFile(abs)), file };
      const other = byName.get(scenario.name);
      if (other)
        throw new HilError(`scenario name "${scenario.name}" is also the name of ${other}`, { where: file });
      byName.set(scenario.name, file);
      const compiled = compileScenario(scenario, { addr: GUEST_ADDR, port: FIRST_PORT + i });
      entries.push({ file, scenario, compiled });
    } catch (err) {
      entries.push({ file, error: relocate(asHilError(err, file), abs, file) });
    }
  }
  return entries;
}

/** The loader names the file as it was opened (absolute): name it as the user reads it. */
function relocate(err: HilError, abs: string, file: string): HilError {
  if (abs === file) return err;
  const swap = (text: string | undefined) => text?.split(abs).join(file);
  return new HilError(err.message, {
    ...(err.where !== undefined ? { where: swap(err.where) } : {}),
    ...(err.detail !== undefined ? { detail: swap(err.detail) } : {}),
    exitCode: err.exitCode,
    cause: err,
  });
}

/** 0 when every file loaded and compiled, 2 (bad input) when one did not. */
export function exitCodeOf(entries: readonly ScenarioEntry[]): 0 | 2 {
  return entries.some((e) => e.error) ? 2 : 0;
}

/** The driver/executor pairs the scenario names, each with the suite's plan for it. */
export function targetPlans(c: CompiledScenario): TargetPlan[] {
  const s = c.scenario;
  const out: TargetPlan[] = [];
  for (const driver of DRIVERS.filter((d) => s.drivers.includes(d)))
    for (const executor of EXECUTORS.filter((e) => s.executors.includes(e))) {
      const target = { driver, executor };
      const plan = planScenario(s, target);
      out.push({ driver, executor, plan: plan.run ? planSteps(c, target) : plan });
    }
  return out;
}

/** What an author should know about a valid scenario: where it will not run, and why. */
export function scenarioNotes(c: CompiledScenario, known: readonly string[] = listProfiles()): string[] {
  const notes: string[] = [];
  for (const t of targetPlans(c))
    if (!t.plan.run) notes.push(`on ${t.driver}/${t.executor}: ${t.plan.verdict}: ${t.plan.reason}`);
  const s = c.scenario;
  const profiles = [
    ...(s.device_profiles ?? []).map((p) => ({ p, where: "device_profiles" })),
    ...(s.known_bugs ?? []).flatMap((b, i) =>
      (b.device_profiles ?? []).map((p) => ({ p, where: `known_bugs[${i}].device_profiles` })),
    ),
  ];
  for (const { p, where } of profiles)
    if (!known.includes(p))
      notes.push(
        `${where}: "${p}" is not a device profile of fixtures/profiles (${known.join(", ")}): it matches only --device-profile ${p}`,
      );
  return notes;
}

function oneLine(text: string, width: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= width ? flat : `${flat.slice(0, Math.max(1, width - 3))}...`;
}

function xfailsOf(s: Scenario): string {
  const parts: string[] = [];
  const named = (s.known_bugs ?? []).filter((b) => !b.implied);
  if (named.length > 0) parts.push(`${named.length} known bug${named.length > 1 ? "s" : ""}`);
  if (s.expect_fail) parts.push(`expect_fail ${s.expect_fail.rules.join(",")}`);
  return parts.join("; ") || "-";
}

/** Words wrapped to `width` columns, each line indented by `indent`. */
function wrap(text: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.trim().split(/\s+/)) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(`${indent}${line}`);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(`${indent}${line}`);
  return lines;
}

/**
 * The listing: a row a scenario (name, covers, drivers, executors, device profiles, known bugs and
 * expected failures) with its whole description wrapped to `width` below it, then a row a bad file.
 */
export function renderList(entries: readonly ScenarioEntry[], width = 160): string {
  const scenarios = entries.flatMap((e) => (e.scenario ? [e.scenario] : []));
  const rows = scenarios.map((s) => [
    s.name,
    s.covers.join(","),
    s.drivers.join(","),
    s.executors.join(","),
    s.device_profiles?.join(",") ?? "any",
    xfailsOf(s),
  ]);
  const head = ["scenario", "covers", "drivers", "executors", "device profiles", "xfail"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join("  ")
      .trimEnd();
  const out = rows.length > 0 ? [line(head)] : [];
  rows.forEach((r, i) => {
    out.push(line(r), ...wrap((scenarios[i] as Scenario).description, Math.max(40, width), "    "));
  });
  for (const e of entries) if (e.error) out.push(`bad  ${indentDetail(e.error.format())}`);
  return out.length ? `${out.join("\n")}\n` : "";
}

function indentDetail(text: string): string {
  return text.split("\n").join("\n     ");
}

/** --check: "ok <name> <file>" (with notes below it) or "bad <file:line:col>: <error>" per file. */
export function renderCheck(entries: readonly ScenarioEntry[], known?: readonly string[]): string {
  const out: string[] = [];
  for (const e of entries) {
    if (e.error || !e.compiled) {
      out.push(`bad  ${indentDetail(e.error?.format() ?? `${e.file}: not compiled`)}`);
      continue;
    }
    out.push(`ok   ${e.compiled.scenario.name}  ${e.file}`);
    for (const n of scenarioNotes(e.compiled, known)) out.push(`     note: ${n}`);
  }
  return out.length ? `${out.join("\n")}\n` : "";
}

function wrRange(step: CompiledStep): string {
  const p = step.posts;
  if (!p) return "";
  const ids = p.count === 1 ? `wr_id ${p.wrId}` : `wr_ids ${p.wrId}-${p.wrId + p.count - 1}`;
  return ` ${ids} on ${p.qp} ${p.queue}${p.queue === "sq" ? `, signal ${p.signal}` : ""}`;
}

function faultLine(f: FaultStep): string {
  return `${keyValueLine("device fault:", {
    kind: f.kind,
    on: f.on,
    queue: f.queue,
    wr_id: f.wr_id,
    status: f.status,
    ms: f.ms,
    delta: f.delta,
    vector: f.vector,
    count: f.count,
    until: f.until,
    after: f.after,
  })}${f.optional ? " (optional: a control for the device model, left out where no fault can be armed)" : ""}`;
}

function ruleTitle(rule: number | string, workload: Workload): string {
  return (workload === "verbs" ? RULES : ULP_RULE_SET).find((r) => r.id === String(rule))?.title ?? "?";
}

/** The premise as --show prints it: each condition, where it is read, and the implicit one. */
export function premiseLines(s: Scenario): string[] {
  if (s.premise && "none" in s.premise) return [`  premise: none needed: ${oneLine(s.premise.none, 10_000)}`];
  const faults = s.steps.some((x) => "fault" in x);
  if (!s.premise && !faults) return ["  premise: none stated (a PASS then claims only that the rules held)"];
  const lines = (s.premise ?? []).map(
    (c) =>
      `    - ${describeCondition(c)}${DEVICE_CONDITIONS.includes(c.kind) ? " (the device's hardware trace)" : ""}`,
  );
  if (faults) lines.push("    - every device fault the scenario arms fires (the device's hardware trace)");
  return ["  premise (checked on every run; not met: MISS):", ...lines];
}

/** --show: per scenario, what it is meant for and the command lines each stage runs. */
export function renderShow(entries: readonly ScenarioEntry[]): string {
  const out: string[] = [];
  for (const e of entries) {
    if (e.error || !e.compiled) {
      out.push(`bad  ${indentDetail(e.error?.format() ?? `${e.file}: not compiled`)}`, "");
      continue;
    }
    const c = e.compiled;
    const s = c.scenario;
    out.push(`${s.name}  (${e.file})`, `  ${oneLine(s.description, 10_000)}`);
    out.push("  covers:");
    for (const r of s.covers) out.push(`    rule ${r}: ${ruleTitle(r, s.workload)}`);
    out.push(
      `  rule sets: ${s.profiles.join(", ")}`,
      `  meant for: drivers ${s.drivers.join(", ")}; executors ${s.executors.join(", ")}; device profiles ${s.device_profiles?.join(", ") ?? "any"}`,
    );
    const applicable = (s.known_bugs ?? []).filter(
      (b) =>
        s.drivers.includes(b.driver) && (!b.executors || b.executors.some((x) => s.executors.includes(x))),
    );
    for (const b of applicable) {
      const where = [
        b.driver,
        b.kernels && `kernels ${b.kernels.join(", ")}`,
        b.device_profiles && `device profiles ${b.device_profiles.join(", ")}`,
        b.executors && `executors ${b.executors.join(", ")}`,
        b.oracle_profiles && `rule sets ${b.oracle_profiles.join(", ")}`,
      ].filter(Boolean);
      out.push(
        `  ${b.implied ? "shared known bug" : "known bug"} (${where.join("; ")}): rules ${b.rules.join(", ")} XFAIL; ${b.reference}`,
      );
    }
    if (s.expect_fail)
      out.push(`  expect_fail: rules ${s.expect_fail.rules.join(", ")}: ${s.expect_fail.why}`);
    out.push(...premiseLines(s));
    out.push("  where it runs:");
    for (const t of targetPlans(c))
      out.push(
        `    ${t.driver}/${t.executor}: ${t.plan.run ? "runs" : `${t.plan.verdict}: ${t.plan.reason}`}`,
      );
    if (s.workload !== "verbs") {
      out.push(...ulpStages(c), "");
      continue;
    }
    out.push(`  setup (watchdog ${c.setupTimeoutMs} ms):`, ...c.setup.map((l) => `    ${l}`));
    const exercised = stepRules(c);
    for (const step of c.steps) {
      const rules = exercised[step.index] ?? [];
      const meant =
        rules.length > 0 ? `, exercises rule${rules.length > 1 ? "s" : ""} ${rules.join(", ")}` : "";
      const head = `  step ${step.index + 1}, line ${step.line}: ${step.kind}${meant}`;
      if (step.fault) {
        out.push(
          `${head} (armed on the device's control channel once the steps before it are done; no hil_kverbs command)`,
          `    ${faultLine(step.fault)}`,
        );
        continue;
      }
      out.push(`${head} (watchdog ${step.timeoutMs} ms)${wrRange(step)}`);
      if (step.untilDeviceIdle)
        out.push(
          `    (on the device model the host waits instead, until the device is idle, ${step.untilDeviceIdle.ms} ms at most; elsewhere:)`,
        );
      if (step.unsupported) out.push(`    (needs the ${step.unsupported.needs}: ${step.unsupported.reason})`);
      out.push(...step.commands.map((l) => `    ${l}`));
    }
    out.push(
      "  settle (kernel executor): a poll per CQ for the completions the trace says it still owes, then reset",
      ...c.cqs.map((cq) => `    ${commandLine("poll", { cq, min: "<owed>", timeout: "<wait>" })}`),
      "    reset",
      "  console barrier: the console slice ends at the kernel log line of this mark",
      "    mark id=<n>",
      "",
    );
  }
  return out.join("\n");
}

/** A ULP workload's stages: the guest command of each step, its faults, the counts and the barrier. */
function ulpStages(c: CompiledScenario): string[] {
  const out = [
    "  before the first step: the RDMA objects counted (rdma resource show; the device model's QPs and MRs)",
  ];
  for (const step of c.steps) {
    const head = `  step ${step.index + 1}, line ${step.line}: ${step.kind}`;
    if (step.fault)
      out.push(
        `${head} (armed on the device's control channel, on any QP)`,
        `    ${faultLine(step.fault).replace(" on=qp", "")}`,
      );
    else if (step.ulp !== undefined)
      out.push(`${head} (watchdog ${step.timeoutMs} ms)`, `    ${ulpCommand(c, step.ulp)}`);
    else out.push(`${head} (watchdog ${step.timeoutMs} ms)`, ...step.commands.map((l) => `    ${l}`));
  }
  out.push(
    "  after the last step: the objects counted again (teardown leaves none behind), then the console barrier",
    "    echo hil-mark <n> > /dev/kmsg",
  );
  return out;
}

function errorJson(e: ScenarioEntry): Record<string, unknown> {
  return {
    file: e.file,
    ok: false,
    error: {
      message: e.error?.message ?? "not compiled",
      ...(e.error?.where ? { where: e.error.where } : {}),
      ...(e.error?.detail ? { detail: e.error.detail.split("\n") } : {}),
    },
  };
}

/** The entries as JSON for the mode: the listing's fields, plus notes (check) or commands (show). */
export function entriesJson(entries: readonly ScenarioEntry[], mode: "list" | "check" | "show"): unknown[] {
  return entries.map((e) => {
    const c = e.compiled;
    if (e.error || !c) return errorJson(e);
    const s = c.scenario;
    const base = {
      file: e.file,
      ok: true,
      name: s.name,
      description: s.description,
      covers: s.covers,
      profiles: s.profiles,
      drivers: s.drivers,
      executors: s.executors,
      device_profiles: s.device_profiles ?? null,
      ...(s.known_bugs ? { known_bugs: s.known_bugs } : {}),
      ...(s.expect_fail ? { expect_fail: s.expect_fail } : {}),
      premise: s.premise
        ? "none" in s.premise
          ? { none: s.premise.none }
          : s.premise.map((c) => ({ ...c, text: describeCondition(c) }))
        : null,
    };
    if (mode === "list") return base;
    if (mode === "check") return { ...base, notes: scenarioNotes(c) };
    return {
      ...base,
      qp: s.qp,
      peer: s.peer,
      targets: targetPlans(c).map((t) => ({ driver: t.driver, executor: t.executor, ...t.plan })),
      setup: { timeoutMs: c.setupTimeoutMs, commands: c.setup },
      steps: c.steps.map((step) => ({
        index: step.index,
        line: step.line,
        kind: step.kind,
        timeoutMs: step.timeoutMs,
        commands: step.commands,
        ...(step.posts ? { posts: step.posts } : {}),
        ...(step.fault ? { fault: step.fault } : {}),
        ...(step.unsupported ? { unsupported: step.unsupported } : {}),
      })),
      cqs: c.cqs,
    };
  });
}

interface ScenariosOptionValues {
  check?: boolean;
  show?: boolean;
  json?: boolean;
}

export async function scenariosAction(patterns: string[], opts: ScenariosOptionValues): Promise<void> {
  const entries = await loadEntries(patterns.length > 0 ? patterns.join(",") : undefined);
  const mode = opts.show ? "show" : opts.check ? "check" : "list";
  if (opts.json) process.stdout.write(`${JSON.stringify(entriesJson(entries, mode), null, 2)}\n`);
  else if (mode === "show") process.stdout.write(renderShow(entries));
  else if (mode === "check") process.stdout.write(renderCheck(entries));
  else
    process.stdout.write(renderList(entries, process.stdout.isTTY ? (process.stdout.columns ?? 160) : 160));
  const bad = entries.filter((e) => e.error).length;
  progress.info(
    `hil: ${entries.length} scenario file(s), ${entries.length - bad} ok${bad ? `, ${bad} bad` : ""}`,
  );
  process.exitCode = exitCodeOf(entries);
}

export function registerScenariosCommand(program: Command): void {
  program
    .command("scenarios")
    .description(
      "list the drain suite's scenarios (what each covers and is meant for), check scenario files, or show the command lines they compile to",
    )
    .argument(
      "[patterns...]",
      "scenario names or globs from fixtures/scenarios (e.g. 'drain-*') or paths to scenario files, as hil run --scenario takes them (comma-separated; default: all)",
    )
    .option("--check", "load and compile each file: ok, or its error with file:line:col")
    .option(
      "--show",
      "print the hil_kverbs command lines of each stage (setup, each step with its kind and watchdog, settle) and where the scenario runs",
    )
    .option("--json", "print the same as JSON")
    .addHelpText(
      "after",
      [
        "",
        "The scenario language is described in fixtures/scenarios/README.md. A pattern without '/' is a scenario name",
        "(a file of fixtures/scenarios); a file of your own is a path: ./my-bug.yaml, not my-bug.yaml.",
        "",
        "The listing has a row a scenario: the rules it covers (README, What is judged), the drivers, executors and device profiles",
        "it is meant for (hil run leaves the others out, or lists them as SKIP when named with --scenario), and its",
        "known bugs and expected failures (XFAIL). --check loads and compiles each file as hil run would and adds a",
        "note where the suite would not run it (SKIP or MISS, with the reason). --show prints the hil_kverbs lines:",
        "the setup (device, PD, CQs, the peer's listener, the connection), each step with its line in the file, its",
        "watchdog and the wr_ids it posts (fault steps are armed on the device, not run in the guest), and the",
        "settling polls. The user executor (hil-uverbs) runs the same setup and step lines, its CQs polled directly.",
        "",
        "Exit status: 0 every selected file loads and compiles; 2 bad input (a file that does not, named with",
        "file:line:col, or a pattern that matches nothing).",
        "",
      ].join("\n"),
    )
    .action((patterns: string[], opts: ScenariosOptionValues) => scenariosAction(patterns, opts));
}

/** The name main.ts calls on each command module. */
export const register = registerScenariosCommand;
