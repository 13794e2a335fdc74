import { readFileSync } from "node:fs";
import t from "tap";
import { type GuestSession, runSmokeChecks, type SmokeContext } from "../../harness/probe/checks.ts";
import { renderVerdictTable, summaryLine } from "../../harness/report/table.ts";
import { exitCodeFor } from "../../harness/verdict.ts";
import { profileReflush } from "../../qemu/erdma/index.ts";

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

t.test(
  "an external device must probe and bind; its attributes are not compared, it has no trace",
  async (t) => {
    const fixture = (name: string) =>
      readFileSync(new URL(`../fixtures/erdma/${name}`, import.meta.url), "utf8");
    const sock = "/run/cosim/erdma.sock";
    const ctx: SmokeContext = { release: "6.12.95", device: { external: sock, mac: "52:54:00:12:34:56" } };
    const probed = {
      ...healthy,
      dmesg: { exitCode: 0, stdout: "[    1.0] clean\n" },
      "rdma link": { exitCode: 0, stdout: fixture("rdma-link-6.12.txt") },
      "cat /sys/class/net/eth0/address": { exitCode: 0, stdout: "52:54:00:12:34:56\n" },
      // whatever an RTL model reports: nothing to compare it with
      "ibv_devinfo -v": {
        exitCode: 0,
        stdout: fixture("ibv_devinfo-v-6.12.txt").replace(/fw_ver:\s+\S+/, "fw_ver:\t\t\t\t9.9.9"),
      },
      "hil-verbs-lifecycle": { exitCode: 0, stdout: fixture("lifecycle-6.12.txt") },
    };
    const results = await runSmokeChecks(fakeGuest(probed), ctx);
    const byId = Object.fromEntries(results.map((r) => [r.id, r]));
    t.equal(byId["erdma-probe"]?.verdict, "PASS", byId["erdma-probe"]?.reason ?? "");
    t.equal(
      byId["erdma-probe"]?.reason,
      `erdma_0 bound to eth0 (52:54:00:12:34:56); ibv_devinfo lists erdma_0; external device at ${sock}: attributes not checked`,
    );
    t.equal(byId["verbs-lifecycle"]?.verdict, "PASS");
    t.match(byId["verbs-lifecycle"]?.reason, `external device at ${sock}: no hardware trace to compare`);
    t.equal(exitCodeFor(results), 0);

    // the same output judged against a profile fails on the attribute the external device differs in
    const emulated = await runSmokeChecks(fakeGuest(probed), {
      release: "6.12.95",
      device: { profileName: "erdma-reflush", profile: profileReflush, mac: "52:54:00:12:34:56" },
    });
    t.match(emulated.find((r) => r.id === "erdma-probe")?.reason, /fw_ver: got 9\.9\.9/);

    // no erdma function at all: said so, the PCI functions the guest has as evidence
    const absent = {
      ...probed,
      "rdma link": { exitCode: 0, stdout: "" },
      "ibv_devinfo -v": { exitCode: 0, stdout: "No IB devices found\n" },
      "cd /sys/bus/pci/devices": {
        exitCode: 0,
        stdout: "0000:00:00.0 0x8086:0x1237\n0000:00:03.0 0x1af4:0x1000\n",
      },
    };
    const none = (await runSmokeChecks(fakeGuest(absent), ctx)).find((r) => r.id === "erdma-probe");
    t.equal(none?.verdict, "FAIL");
    t.match(none?.evidence, [
      /rdma link shows no erdma device/,
      `the external device at ${sock} presents no erdma function (PCI 1ded:107f)`,
    ]);
    t.ok(
      none?.evidence?.includes("pci: 0000:00:03.0 0x1af4:0x1000"),
      "the guest's PCI functions are evidence",
    );
    // the function is there but the driver bound nothing: not blamed on the function
    const unbound = (
      await runSmokeChecks(
        fakeGuest({
          ...absent,
          "cd /sys/bus/pci/devices": { exitCode: 0, stdout: "0000:00:04.0 0x1ded:0x107f\n" },
        }),
        ctx,
      )
    ).find((r) => r.id === "erdma-probe");
    t.equal(unbound?.verdict, "FAIL");
    t.notOk(
      unbound?.evidence?.some((l) => l.includes("presents no erdma function")),
      "the erdma function is present",
    );
  },
);
