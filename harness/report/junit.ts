/**
 * JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test reporters; checked in the tests
 * with junitparser, the Python library Debian ships as python3-junitparser): one <testsuite> for
 * the probe stage and one per scenario, <properties> with the kernel, driver, executor and device
 * profile (or external device socket).
 *
 * A scenario's suite holds:
 * - the testcase "execution" (classname "<scenario>"): running the scenario in the guest, with the
 *   time it took (verdicts.json's durationMs). It passes when the scenario ran; it is an <error>
 *   when the run broke (ERROR) or the harness could not run it (MISS), <skipped> when the scenario
 *   is not meant for this kernel, driver or device (SKIP). Its time is the suite's time: the rules
 *   below judge the trace it left, in about a millisecond each, which is not measured per rule,
 *   so their testcases carry no time (consumers read 0) and the times add up to the run's.
 * - a testcase per oracle profile and rule that judged something (classname
 *   "<scenario>.<profile>", name "rule <id>: <title>"): PASS passes; FAIL is a <failure> whose
 *   message names the rule and the WRs its problems are about and whose text has the rule's
 *   citation, the WRs and the evidence; ERROR and MISS are an <error> (MISS: the rule is covered
 *   but found nothing to judge, not a pass).
 * - <skipped> only where a rule did not apply: the oracle profile does not judge it (`applies:
 *   false`, e.g. the Linux drain contract under ib). A rule that applies but found nothing to judge
 *   in a scenario that does not cover it is no test case of that scenario: it is listed in the
 *   suite's <system-out>. (A record written before rules carried `applies` has no way to tell the
 *   two apart: its SKIP rules are listed there too.)
 * - XFAIL (a recorded known bug, or a fault the scenario injects to break the rule) and XPASS pass,
 *   as they do in hil's exit code, with a <system-out> saying which rule failed as recorded, or
 *   held against the record, with the WRs and evidence; under --strict an XPASS is a <failure>.
 *   JUnit has no expected failure, and pytest's <skipped type="xfail"> would count a rule that was
 *   judged, and failed, as not run.
 *
 * A repeated run (--repeat n) has a <testsuite> per repetition (`<scenario>#<k>`), its properties
 * naming the scenario and the repetition.
 *
 * Written here rather than with junit-report-builder (5.1.2, the JUnit builder on npm): it writes
 * <skipped/> without a message, so the reason a rule did not apply would be lost, has no suite
 * <system-out>, and its CDATA writer (xmlbuilder 15.1.1, XMLStringifier.cdata) escapes only the
 * first "]]>" of a text, so evidence quoting it twice would make the file malformed. Text here is
 * escaped by xml.ts instead.
 */

import { runViews } from "../backend/registry.ts";
import {
  deviceOf,
  kernelBase,
  type RunDevice,
  type RunDir,
  repetitionOf,
  scenariosOf,
  stageChecks,
} from "../rundir/read.ts";
import type { RunRule, RunScenario } from "../rundir/schema.ts";
import type { Verdict } from "../verdict.ts";
import { xmlAttr, xmlText } from "./xml.ts";

/** What a testcase says: passed, or one of JUnit's failure, error and skipped, and its output. */
export type Outcome =
  | { kind: "pass"; out?: string }
  | { kind: "failure" | "error"; type: string; message: string; text: string }
  | { kind: "skipped"; message: string };

export interface JCase {
  classname: string;
  name: string;
  /** seconds; absent where it was not measured */
  timeSec?: number;
  outcome: Outcome;
}

export interface JSuite {
  name: string;
  timeSec: number;
  properties: Array<[string, string]>;
  cases: JCase[];
  /** the suite's <system-out> */
  out?: string;
}

/** A WR as the oracle's problems name it: `qp sq WR 1000`, or the drain's marker (wr_id -1). */
function wrName(w: { qp: string; queue: string; wrId: number }): string {
  return w.wrId < 0 ? `${w.qp} ${w.queue} drain marker` : `${w.qp} ${w.queue} WR ${w.wrId}`;
}

const MESSAGE_WRS = 8;

/** The WRs a rule's problems are about, each once, in order. */
function wrsOf(rule: RunRule): string[] {
  return [...new Set((rule.problems ?? []).flatMap((p) => (p.wrs ?? []).map(wrName)))];
}

function wrList(wrs: readonly string[], max: number): string {
  const more = wrs.length > max ? ` and ${wrs.length - max} more` : "";
  return `${wrs.slice(0, max).join(", ")}${more}`;
}

/** "rule 5 under ib: <reason>; WRs: qp sq WR 1000, ..." */
function ruleMessage(profile: string, rule: RunRule): string {
  const wrs = wrsOf(rule);
  return `rule ${rule.rule} under ${profile}: ${rule.reason}${wrs.length > 0 ? `; WRs: ${wrList(wrs, MESSAGE_WRS)}` : ""}`;
}

/** The rule, what it cites, the profile, every WR, each problem and the evidence. */
function ruleText(profile: string, rule: RunRule, head: string): string {
  const wrs = wrsOf(rule);
  return [
    `${head}rule ${rule.rule}: ${rule.title}`,
    ...(rule.citation ? [`  (${rule.citation})`] : []),
    `rule set: ${profile}`,
    `reason: ${rule.reason}`,
    ...(rule.knownBug
      ? [`recorded: ${rule.knownBug.reference}${rule.knownBug.note ? `: ${rule.knownBug.note}` : ""}`]
      : []),
    ...(wrs.length > 0 ? [`WRs: ${wrs.join(", ")}`] : []),
    ...(rule.problems && rule.problems.length > 0
      ? [
          "problems:",
          ...rule.problems.map(
            (p) => `- ${p.reason}${p.wrs?.length ? ` (${wrList(p.wrs.map(wrName), p.wrs.length)})` : ""}`,
          ),
        ]
      : []),
    ...(rule.evidence && rule.evidence.length > 0 ? ["evidence:", ...rule.evidence] : []),
  ].join("\n");
}

function ruleOutcome(profile: string, rule: RunRule, strict: boolean): Outcome {
  switch (rule.verdict) {
    case "PASS":
      return { kind: "pass" };
    case "FAIL":
      return {
        kind: "failure",
        type: "FAIL",
        message: ruleMessage(profile, rule),
        text: ruleText(profile, rule, ""),
      };
    case "ERROR":
    case "MISS":
      return {
        kind: "error",
        type: rule.verdict,
        message: ruleMessage(profile, rule),
        text: ruleText(profile, rule, `${rule.verdict}: `),
      };
    case "SKIP":
      return { kind: "skipped", message: `not judged under ${profile}: ${rule.reason}` };
    case "XFAIL":
      return { kind: "pass", out: ruleText(profile, rule, `XFAIL (${xfailCause(rule)}): `) };
    case "XPASS":
      return strict
        ? {
            kind: "failure",
            type: "XPASS",
            message: `XPASS (--strict): ${ruleMessage(profile, rule)}`,
            text: ruleText(profile, rule, "XPASS (held against the record): "),
          }
        : { kind: "pass", out: ruleText(profile, rule, "XPASS (held against the record): ") };
  }
}

/** Whether the rule is a test case of this scenario: it judged something, or it did not apply. */
function isTestCase(rule: RunRule): boolean {
  return rule.verdict !== "SKIP" || rule.applies === false;
}

/** A scenario's or a check's own verdict as a testcase outcome (no rule behind it). */
function plainOutcome(
  verdict: Verdict,
  reason: string,
  strict: boolean,
  evidence: readonly string[] = [],
): Outcome {
  const text = [reason, ...evidence].join("\n");
  switch (verdict) {
    case "PASS":
      return { kind: "pass" };
    case "FAIL":
      return { kind: "failure", type: "FAIL", message: reason, text };
    case "ERROR":
    case "MISS":
      return { kind: "error", type: verdict, message: reason, text };
    case "SKIP":
      return { kind: "skipped", message: reason };
    case "XFAIL":
      return { kind: "pass", out: `XFAIL (failed as recorded): ${text}` };
    case "XPASS":
      return strict
        ? { kind: "failure", type: "XPASS", message: `XPASS (--strict): ${reason}`, text }
        : { kind: "pass", out: `XPASS (held against the record): ${text}` };
  }
}

function scenarioCases(s: RunScenario, strict: boolean): { cases: JCase[]; notExercised: string[] } {
  const timeSec = (s.durationMs ?? 0) / 1000;
  const cases: JCase[] = [
    {
      classname: s.name,
      name: "execution",
      timeSec,
      outcome: s.outcome ? plainOutcome(s.outcome.verdict, s.outcome.reason, strict) : { kind: "pass" },
    },
  ];
  const notExercised = new Map<string, string[]>();
  for (const j of s.judgements) {
    if (j.rules.length === 0 && !s.outcome)
      cases.push({
        classname: `${s.name}.${j.profile}`,
        name: "scenario",
        outcome: plainOutcome(j.verdict, "", strict),
      });
    for (const rule of j.rules) {
      if (isTestCase(rule))
        cases.push({
          classname: `${s.name}.${j.profile}`,
          name: `rule ${rule.rule}: ${rule.title}`,
          outcome: ruleOutcome(j.profile, rule, strict),
        });
      else {
        const key = `rule ${rule.rule} (${rule.reason})`;
        notExercised.set(key, [...(notExercised.get(key) ?? []), j.profile]);
      }
    }
  }
  return {
    cases,
    notExercised: [...notExercised].map(([rule, profiles]) => `${rule} under ${profiles.join(", ")}`),
  };
}

/** The property that names the run's device: device.<key> (device.profile, device.external, device.pci). */
function deviceJunitProperty(device: RunDevice): [string, string] {
  const [key, value] = runViews(device).property(device);
  return [`device.${key}`, value];
}

export function junitSuites(run: RunDir): JSuite[] {
  const r = run.record;
  const strict = r.strict === true;
  const device = deviceOf(run);
  const deviceProperty: Array<[string, string]> = device ? [deviceJunitProperty(device)] : [];
  const common: Array<[string, string]> = [
    ["kernel", r.kernel],
    ["kernel.base", kernelBase(run)],
    ...(r.release ? [["kernel.release", r.release] as [string, string]] : []),
    ...(r.driver ? [["driver", r.driver] as [string, string]] : []),
    ...(r.executor ? [["executor", r.executor] as [string, string]] : []),
    ...deviceProperty,
  ];
  const suites: JSuite[] = [];
  const stage = stageChecks(run);
  if (stage.length > 0)
    suites.push({
      name: r.probe ? "device-probes" : "stage",
      // the probe checks' times are not recorded (they are part of the boot's)
      timeSec: 0,
      properties: common,
      cases: stage.map((c) => ({
        classname: r.probe ? "device-probes" : "stage",
        name: c.id,
        outcome: plainOutcome(c.verdict, c.reason, strict, c.evidence),
      })),
    });
  for (const s of scenariosOf(run)) {
    const { cases, notExercised } = scenarioCases(s, strict);
    const rep = repetitionOf(s);
    suites.push({
      name: s.name,
      timeSec: (s.durationMs ?? 0) / 1000,
      properties: [
        ...common,
        ...(s.file ? [["scenario.file", s.file] as [string, string]] : []),
        ...(rep.repetition === undefined
          ? []
          : [
              ["scenario", rep.scenario] as [string, string],
              ["repetition", String(rep.repetition)] as [string, string],
            ]),
        ...(s.covers ? [["scenario.covers", s.covers.join(",")] as [string, string]] : []),
        ["oracle.profiles", s.judgements.map((j) => j.profile).join(",")],
        ...s.judgements.map((j) => [`verdict.${j.profile}`, j.verdict] as [string, string]),
      ],
      cases,
      ...(notExercised.length > 0
        ? {
            out: `rules with nothing to judge in this scenario (not test cases):\n${notExercised.join("\n")}`,
          }
        : {}),
    });
  }
  return suites;
}

function counts(cases: readonly JCase[]) {
  const n = (kind: Outcome["kind"]) => cases.filter((c) => c.outcome.kind === kind).length;
  return { tests: cases.length, failures: n("failure"), errors: n("error"), skipped: n("skipped") };
}

function caseXml(c: JCase): string {
  const time = c.timeSec === undefined ? "" : ` time="${c.timeSec.toFixed(3)}"`;
  const head = `<testcase classname="${xmlAttr(c.classname)}" name="${xmlAttr(c.name)}"${time}`;
  const o = c.outcome;
  switch (o.kind) {
    case "pass":
      return o.out === undefined
        ? `    ${head}/>`
        : `    ${head}>\n      <system-out>${xmlText(o.out)}</system-out>\n    </testcase>`;
    case "failure":
    case "error":
      return `    ${head}>\n      <${o.kind} message="${xmlAttr(o.message)}" type="${xmlAttr(o.type)}">${xmlText(o.text)}</${o.kind}>\n    </testcase>`;
    case "skipped":
      return `    ${head}>\n      <skipped message="${xmlAttr(o.message)}"/>\n    </testcase>`;
  }
}

function suiteXml(s: JSuite, id: number, timestamp: string): string {
  const c = counts(s.cases);
  const props = s.properties
    .map(([k, v]) => `      <property name="${xmlAttr(k)}" value="${xmlAttr(v)}"/>`)
    .join("\n");
  return [
    `  <testsuite name="${xmlAttr(s.name)}" id="${id}" tests="${c.tests}" failures="${c.failures}" errors="${c.errors}" skipped="${c.skipped}" time="${s.timeSec.toFixed(3)}" timestamp="${timestamp}">`,
    `    <properties>\n${props}\n    </properties>`,
    ...s.cases.map(caseXml),
    ...(s.out === undefined ? [] : [`    <system-out>${xmlText(s.out)}</system-out>`]),
    "  </testsuite>",
  ].join("\n");
}

/** A JUnit document of these suites, the counts and time summed into its <testsuites>. */
export function renderJunitSuites(name: string, suites: readonly JSuite[], when: Date): string {
  const c = counts(suites.flatMap((s) => s.cases));
  const time = suites.reduce((t, s) => t + s.timeSec, 0);
  const timestamp = when.toISOString().replace(/\.\d+Z$/, "");
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlAttr(name)}" tests="${c.tests}" failures="${c.failures}" errors="${c.errors}" skipped="${c.skipped}" time="${time.toFixed(3)}">`,
    ...suites.map((s, i) => suiteXml(s, i, timestamp)),
    "</testsuites>",
    "",
  ].join("\n");
}

export function renderJunit(run: RunDir): string {
  const started = new Date(run.record.startedAt ?? Number.NaN);
  const when = Number.isNaN(started.getTime()) ? run.finishedAt : started;
  return renderJunitSuites("erdma-hil", junitSuites(run), when);
}

/** Why an XFAIL rule passes: the scenario broke it on purpose, or a driver bug's record says it fails. */
function xfailCause(rule: RunRule): string {
  if (rule.injectedFault) return "the scenario's injected fault broke it, as intended";
  return rule.knownBug ? `known bug ${rule.knownBug.reference}, failed as recorded` : "failed as recorded";
}
