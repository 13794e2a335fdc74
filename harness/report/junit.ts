/**
 * JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test reporters): one <testsuite> for the
 * probe stage and one per scenario, one <testcase> per oracle profile and rule (classname
 * "<scenario>.<profile>"), <properties> with the kernel, driver, executor and device profile (or
 * external device socket).
 * FAIL is <failure>, ERROR and MISS are <error>, SKIP is <skipped>. JUnit has no expected failure:
 * XFAIL is <skipped> with type="xfail" and the known bug in its message (what pytest's junitxml
 * writes for xfail), XPASS a passing test case whose <system-out> says the known bug was not seen.
 * A repeated run (--repeat n) has a <testsuite> per repetition (`<scenario>#<k>`), its properties
 * naming the scenario and the repetition.
 */

import { deviceOf, kernelBase, type RunDir, repetitionOf, scenariosOf, stageChecks } from "../rundir/read.ts";
import type { Verdict } from "../verdict.ts";
import { xmlAttr, xmlText } from "./xml.ts";

interface JCase {
  classname: string;
  name: string;
  verdict: Verdict;
  reason: string;
  evidence?: readonly string[];
}

interface JSuite {
  name: string;
  timeSec: number;
  properties: Array<[string, string]>;
  cases: JCase[];
}

function caseXml(c: JCase): string {
  const head = `<testcase classname="${xmlAttr(c.classname)}" name="${xmlAttr(c.name)}" time="0">`;
  const body = xmlText([c.reason, ...(c.evidence ?? [])].join("\n"));
  const msg = xmlAttr(c.reason);
  switch (c.verdict) {
    case "PASS":
      return `    ${head}</testcase>`;
    case "FAIL":
      return `    ${head}\n      <failure message="${msg}" type="FAIL">${body}</failure>\n    </testcase>`;
    case "ERROR":
    case "MISS":
      return `    ${head}\n      <error message="${msg}" type="${c.verdict}">${body}</error>\n    </testcase>`;
    case "SKIP":
      return `    ${head}\n      <skipped message="${msg}"/>\n    </testcase>`;
    case "XFAIL":
      return `    ${head}\n      <skipped message="${xmlAttr(`XFAIL (known bug): ${c.reason}`)}" type="xfail">${body}</skipped>\n    </testcase>`;
    case "XPASS":
      return `    ${head}\n      <system-out>${xmlText(`XPASS: known bug not seen: ${c.reason}`)}</system-out>\n    </testcase>`;
  }
}

function counts(cases: readonly JCase[]) {
  const n = (...v: Verdict[]) => cases.filter((c) => v.includes(c.verdict)).length;
  return {
    tests: cases.length,
    failures: n("FAIL"),
    errors: n("ERROR", "MISS"),
    skipped: n("SKIP", "XFAIL"),
  };
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
    "  </testsuite>",
  ].join("\n");
}

export function junitSuites(run: RunDir): JSuite[] {
  const r = run.record;
  const device = deviceOf(run);
  const deviceProperty: Array<[string, string]> = !device
    ? []
    : device.kind === "external"
      ? [["device.external", device.socket]]
      : [["device.profile", device.profile]];
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
      timeSec: 0,
      properties: common,
      cases: stage.map((c) => ({
        classname: r.probe ? "device-probes" : "stage",
        name: c.id,
        verdict: c.verdict,
        reason: c.reason,
        ...(c.evidence ? { evidence: c.evidence } : {}),
      })),
    });
  for (const s of scenariosOf(run)) {
    const cases: JCase[] = [];
    for (const j of s.judgements) {
      if (j.rules.length === 0)
        cases.push({
          classname: `${s.name}.${j.profile}`,
          name: "scenario",
          verdict: j.verdict,
          reason: s.outcome?.reason ?? "",
        });
      for (const rule of j.rules)
        cases.push({
          classname: `${s.name}.${j.profile}`,
          name: `rule ${rule.rule}: ${rule.title}`,
          verdict: rule.verdict,
          reason: `${rule.reason}${rule.knownBug ? ` [${rule.knownBug.reference}]` : ""}`,
          ...(rule.evidence ? { evidence: rule.evidence } : {}),
        });
    }
    if (s.judgements.length === 0 && s.outcome)
      cases.push({
        classname: s.name,
        name: "scenario",
        verdict: s.outcome.verdict,
        reason: s.outcome.reason,
      });
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
        ["oracle.profiles", s.judgements.map((j) => j.profile).join(",")],
        ...s.judgements.map((j) => [`verdict.${j.profile}`, j.verdict] as [string, string]),
      ],
      cases,
    });
  }
  return suites;
}

export function renderJunit(run: RunDir): string {
  const suites = junitSuites(run);
  const all = suites.flatMap((s) => s.cases);
  const c = counts(all);
  const time = suites.reduce((t, s) => t + s.timeSec, 0);
  const timestamp = run.finishedAt.toISOString().replace(/\.\d+Z$/, "");
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="erdma-hil" tests="${c.tests}" failures="${c.failures}" errors="${c.errors}" skipped="${c.skipped}" time="${time.toFixed(3)}">`,
    ...suites.map((s, i) => suiteXml(s, i, timestamp)),
    "</testsuites>",
    "",
  ].join("\n");
}
