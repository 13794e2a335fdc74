/**
 * The HTML report's event tables: every record of a scenario's verbs trace, and every hardware
 * event its timeline draws, a row each with all its fields, so nothing the picture shows is only in
 * a tooltip. A row's id is what the timeline's marks and the rule links point at; its data-ev
 * (data-hw) is the index the oracle's problems name. Each table is a <details>: open where a rule
 * did not pass (its events get highlighted there), closed otherwise; the print stylesheet opens
 * them all.
 */
import type { HwTraceEvent } from "../protocol/hw-trace.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import { details } from "./timeline.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

/** The id of verbs trace record `ev`'s row in scenario `scope`'s table. */
export function eventRowId(scope: string, ev: number): string {
  return `${scope}-ev${ev}`;
}

/** The id of hardware event `k`'s row in scenario `scope`'s table. */
export function hwRowId(scope: string, k: number): string {
  return `${scope}-hw${k}`;
}

function table(head: string[], rows: string[]): string {
  return `<table class="events"><thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join("")}</tr></thead><tbody>\n${rows.join("\n")}\n</tbody></table>`;
}

function section(summary: string, body: string, open: boolean, cls: string): string {
  return `<details class="${cls}"${open ? " open" : ""}><summary>${esc(summary)}</summary>\n${body}\n</details>`;
}

/** The verbs trace, a row a record: its index (the #N of the oracle's evidence), time, event, fields. */
export function verbsEventTable(scope: string, records: readonly TraceRecord[], open: boolean): string {
  const t0 = records[0]?.ns ?? 0;
  const rows = records.map((r, i) => {
    const fields = details(r as unknown as Record<string, unknown>, ["seq", "ns", "ev"]);
    return `<tr id="${attr(eventRowId(scope, i))}" data-ev="${i}"><td class="n">#${i}</td><td class="ms">${((r.ns - t0) / 1e6).toFixed(3)}</td><td class="e">${esc(r.ev)}</td><td class="f">${esc(fields)}</td></tr>`;
  });
  return section(
    `the verbs trace: ${records.length} record(s), each with every field`,
    table(["#", "ms", "event", "fields"], rows),
    open,
    "events verbs",
  );
}

/** The hardware events the timeline draws (`shown`: their indexes in the scenario's hardware trace). */
export function hwEventTable(
  scope: string,
  hw: readonly HwTraceEvent[],
  shown: readonly number[],
  open: boolean,
): string {
  if (shown.length === 0) return "";
  const rows = shown.map((k) => {
    const e = hw[k] as HwTraceEvent & Record<string, unknown>;
    return `<tr id="${attr(hwRowId(scope, k))}" data-hw="${k}"><td class="n">hw#${k}</td><td class="ms">${e.t.toFixed(3)}</td><td class="e">${esc(String(e.kind ?? ""))}</td><td class="f">${esc(details(e, ["t", "dev", "kind"]))}</td></tr>`;
  });
  return section(
    `the device's events on the timeline: ${shown.length}, on the device's clock (ms)`,
    table(["#", "ms", "event", "fields"], rows),
    open,
    "events hw",
  );
}
