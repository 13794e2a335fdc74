// The fault campaign's table (test/faults/table.ts): a row per case in markdown, an exit as a
// shell reports it, leftovers never looked at told apart from none, a failed case marked.
import t from "tap";
import { exitText, renderTable } from "../faults/table.ts";

t.test("an exit as a shell reports it", async (t) => {
  t.equal(exitText({ code: 3, signal: null }), "3");
  t.equal(exitText({ code: null, signal: "SIGTERM" }), "SIGTERM (143)");
  t.equal(exitText({ code: null, signal: "SIGINT" }), "SIGINT (130)");
  t.equal(exitText({ code: null, signal: "SIGKILL" }), "SIGKILL (137)");
  t.equal(exitText({ code: null, signal: "SIGHUP" }), "SIGHUP");
});

t.test("the table: one row per case, cells escaped, the count of cases that held", async (t) => {
  const text = renderTable([
    {
      file: "process-killed",
      case: "SIGKILL of QEMU",
      verdict: "linux ERROR: QEMU | killed",
      exit: "3",
      ms: 1234,
      leftovers: [],
      ok: true,
    },
    { file: "hil-killed", case: "SIGKILL of hil", verdict: "-", exit: "-", leftovers: ["a", "b"], ok: false },
    { case: "never looked", verdict: "-", exit: "-", ok: false },
  ]);
  t.equal(
    text,
    [
      "| case | verdict | exit | time to verdict | leftovers | assertions |",
      "|---|---|---|---|---|---|",
      "| process-killed: SIGKILL of QEMU | linux ERROR: QEMU \\| killed | 3 | 1.2 s | none | held |",
      "| hil-killed: SIGKILL of hil | - | - | - | a, b | FAILED |",
      "| never looked | - | - | - | not looked at | FAILED |",
      "",
      "3 fault case(s), 1 held, 2 failed",
      "",
    ].join("\n"),
  );
});
