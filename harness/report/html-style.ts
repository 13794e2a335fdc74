/**
 * The HTML report's stylesheet: the page, the verdict colours, the timelines, the event tables,
 * the rule links' banners, and what printing changes (every <details> open, the timelines scaled
 * to the page, colours kept, links plain).
 */
import type { Verdict } from "../verdict.ts";

export const VERDICT_COLOURS: Record<Verdict, string> = {
  PASS: "#8ae234",
  FAIL: "#ef2929",
  ERROR: "#ad7fa8",
  MISS: "#babdb6",
  SKIP: "#eeeeec",
  XFAIL: "#fcaf3e",
  XPASS: "#729fcf",
};

const SCREEN = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
table.verdicts{border-collapse:collapse}table.verdicts td,table.verdicts th{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top}
td.v{font-weight:600;text-align:center}td.why{font-size:12px;max-width:50em}
${Object.entries(VERDICT_COLOURS)
  .map(([v, c]) => `.v-${v}{background:${c}}`)
  .join("")}
.badge{padding:0 4px;font-weight:600}
.meta{color:#555}.summary{font-family:monospace;font-weight:600}
svg.timeline{display:block;margin:.5em 0;border:1px solid #ddd;background:#fff;max-width:100%;height:auto}
svg .lane-label{font-size:12px;fill:#333}svg .mark-label,svg .span-label{font-size:10px;fill:#222}
svg .tick{font-size:10px;fill:#555}svg .hang-label{font-size:11px;font-weight:700;fill:#cc0000}
svg g.mark:hover rect,svg g.mark:hover circle{stroke:#000;stroke-width:1.5}
.legend span{display:inline-block;margin-right:1em;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:24em;font-size:12px}
ul.rules>li{margin:.3em 0}ul.problems{margin:.2em 0;font-size:13px}
a.show{font-weight:600;margin-left:.5em}
.rerun{margin:.5em 0}.rerun pre{margin:.2em 0;max-height:none;white-space:pre-wrap;word-break:break-all}
code.cmd{user-select:all}
.focus{height:0;overflow:hidden;scroll-margin-top:1em}
.focus:target{height:auto;overflow:visible;margin:.5em 0;padding:.4em .6em;background:#ffe14d;border-left:5px solid #000}
details.events{margin:.5em 0}details.events>summary{cursor:pointer}
table.events{border-collapse:collapse;font:12px/1.3 monospace}
table.events th,table.events td{border-bottom:1px solid #e4e4e4;padding:1px 6px;text-align:left;vertical-align:top}
table.events td.n,table.events td.ms{text-align:right;white-space:nowrap}table.events td.f{word-break:break-word}
table.events tr:target>td{background:#cfe3ff}
`;

const PRINT = `
@media print{
body{margin:0;font-size:11px}
*{print-color-adjust:exact;-webkit-print-color-adjust:exact}
details::details-content{content-visibility:visible;display:block}
details>summary{list-style:none;font-weight:600}
pre{max-height:none;overflow:visible;white-space:pre-wrap;overflow-wrap:anywhere}
a{color:inherit;text-decoration:none}
a.show{display:none}
.focus:not(:target){display:none}
svg.timeline{width:100%;height:auto}
tr{break-inside:avoid}
h2{break-after:avoid}
}
`;

export const REPORT_CSS = SCREEN + PRINT;
