import t from "tap";
import { renderVerdictTable, summaryLine } from "../../harness/report/table.ts";
import { type GuestSession, runSmokeChecks } from "../../harness/run/smoke.ts";
import { exitCodeFor } from "../../harness/verdict.ts";

function fakeGuest(
  answers: Record<string, { exitCode: number; stdout?: string }>,
  consoleText = "",
): GuestSession {
  return {
    async exec(cmd) {
      const hit = Object.entries(answers).find(([prefix]) => cmd.startsWith(prefix));
      if (!hit) throw new Error(`unexpected command ${cmd}`);
      return { exitCode: hit[1].exitCode, stdout: hit[1].stdout ?? "", stderr: "" };
    },
    consoleLog: () => consoleText,
  };
}

const healthy = {
  "uname -r": { exitCode: 0, stdout: "6.12.95\n" },
  "modprobe erdma": { exitCode: 0, stdout: "0\n" },
  "ibv_devinfo -l": { exitCode: 0, stdout: "0 HCAs found:\n" },
};

t.test("a healthy guest passes every smoke check and exits 0", async (t) => {
  // no emulated device in the context (--no-device): its two checks are skipped, not failed
  const results = await runSmokeChecks(fakeGuest(healthy), { release: "6.12.95" });
  t.same(
    results.map((r) => r.verdict),
    ["PASS", "PASS", "PASS", "SKIP", "SKIP", "PASS"],
  );
  t.equal(exitCodeFor(results), 0);
  t.equal(summaryLine(results), "hil: 4 passed, 0 failed, 2 skip");
});

t.test("a wrong kernel and a WARN on the console fail, with evidence", async (t) => {
  const results = await runSmokeChecks(
    fakeGuest(
      { ...healthy, "uname -r": { exitCode: 0, stdout: "6.1.0-13-amd64\n" } },
      "[ 1.0] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2\n",
    ),
    { release: "6.12.95" },
  );
  const byId = Object.fromEntries(results.map((r) => [r.id, r]));
  t.equal(byId["kernel-release"]?.verdict, "FAIL");
  t.match(byId["kernel-release"]?.reason, /expected 6\.12\.95, guest says 6\.1\.0-13-amd64/);
  t.equal(byId["console-clean"]?.verdict, "FAIL");
  t.match(byId["console-clean"]?.evidence?.[0], /^console:1: WARNING: CPU: 0/);
  t.equal(exitCodeFor(results), 1);
});

t.test("a check that cannot run is an ERROR, and ERROR outranks FAIL in the exit code", async (t) => {
  const guest = fakeGuest({ "uname -r": { exitCode: 0, stdout: "x\n" } });
  const results = await runSmokeChecks(guest, { release: "6.12.95" });
  t.equal(results.find((r) => r.id === "erdma-module")?.verdict, "ERROR");
  t.equal(exitCodeFor(results), 3);
  t.match(renderVerdictTable(results), /erdma-module\s+ERROR\s+the check could not run: unexpected command/);
});
