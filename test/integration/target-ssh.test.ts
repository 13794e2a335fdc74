// hil run --target ssh://... against a guest hil booted, acting as the remote machine: once with the
// emulated erdma, once with soft-iWARP. Its verdicts equal a local hil run of the same kernel and
// scenarios (a fault scenario is a SKIP on a target: no control channel), verdicts.json records
// the target, and the target is left as it was found. Then the connection is dropped mid-run (the
// SSH server's session process killed on the target): the scenarios it cut off are ERRORs that say
// so, and nothing of the run is left on either side.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { type BootedGuest, bootPrepared, prepareGuest } from "../../harness/boot.ts";
import { generateSshKeyPair } from "../../qemu/launch/ssh.ts";
import { hil } from "../support/cli.ts";
import { cellVerdicts, loadVerdicts, RUNNER_FAULTY, RUNNER_SCENARIOS } from "../support/verdicts.ts";

t.setTimeout(60 * 60 * 1000);

const SCENARIOS = RUNNER_SCENARIOS;
const FAULTY = RUNNER_FAULTY;
const read = loadVerdicts;

/** What a run on the target could leave there: its directory, the module, its processes, the siw link. */
const LEFTOVERS = [
  "ls -d /tmp/hil-targe[t].* 2>/dev/null",
  "[ -d /sys/module/hil_kverbs ] && echo module",
  `for p in /proc/[0-9]*; do grep -q /tmp/hil-targe[t] $p/cmdline 2>/dev/null && echo process \${p#/proc/}; done`,
  "rdma link show 2>/dev/null | grep -o 'link siw0[^ ]*'",
  "true",
].join("; ");

async function targetArgs(guest: BootedGuest): Promise<string[]> {
  return [
    "--target",
    `ssh://root@127.0.0.1:${guest.sshPort}`,
    "--identity",
    join(guest.workDir, "id_ed25519"),
  ];
}

async function runLocally(t: Test, driver: "erdma" | "siw", dir: string): Promise<void> {
  const local = await hil(["run", ...commonArgs(driver), "--run-dir", join(dir, "local")]);
  t.equal(local.exitCode, 0, `local hil run: ${local.stderr.slice(-2000)}`);
}

const commonArgs = (driver: "erdma" | "siw") => [
  "--scenario",
  SCENARIOS.join(","),
  ...(driver === "siw" ? ["--driver", "siw"] : []),
];

/** hil run --target on the guest, compared with the local run in dir/local. */
async function compareWithLocal(
  t: Test,
  opts: { driver: "erdma" | "siw"; dir: string; guest: BootedGuest },
): Promise<void> {
  const common = commonArgs(opts.driver);
  const level = (await opts.guest.exec("cut -f1 /proc/sys/kernel/printk")).stdout.trim();
  const remote = await hil([
    "run",
    ...common,
    ...(await targetArgs(opts.guest)),
    "--run-dir",
    join(opts.dir, "remote"),
  ]);
  t.equal(remote.exitCode, 0, `hil run --target: ${remote.stderr.slice(-3000)}`);
  t.match(remote.stderr, /\[target\] drain-qp-idle \(\d\/5\)/, "progress names each scenario as it starts");
  const want = cellVerdicts(join(opts.dir, "local"));
  const record = read(join(opts.dir, "remote"));
  const got = cellVerdicts(join(opts.dir, "remote"));
  t.equal(got.size, want.size, "the same cells");
  for (const [cell, verdict] of want) {
    if (cell.startsWith(FAULTY))
      t.equal(got.get(cell), "SKIP", `${cell}: a fault scenario is a SKIP on a target`);
    else t.equal(got.get(cell), verdict, `${cell}: as the local run judged it`);
  }
  t.ok(
    [...want.values()].some((v) => v === "PASS"),
    "the local run passed scenarios to compare with",
  );
  const faulty = record.scenarios.find((s) => s.name === FAULTY);
  if (opts.driver === "erdma")
    t.match(faulty?.outcome?.reason, /device is real: there is no control channel/);
  t.match(record.target, {
    url: `ssh://root@127.0.0.1:${opts.guest.sshPort}`,
    release: /^6\.12\./,
    device: opts.driver === "siw" ? "siw0" : "erdma_0",
    driver: opts.driver,
    addr: "10.0.2.15",
    hostKey: /^SHA256:/,
  });
  t.notOk(record.target?.left, "the cleanup left nothing");
  const left = (await opts.guest.exec(LEFTOVERS)).stdout.trim();
  t.equal(left, "", `nothing of the run is left on the target: ${left}`);
  t.equal(
    (await opts.guest.exec("cut -f1 /proc/sys/kernel/printk")).stdout.trim(),
    level,
    "the console level is put back",
  );
}

t.test("hil run --target on a guest with the emulated erdma, and a connection dropped mid-run", async (t) => {
  const dir = t.testdir({});
  await runLocally(t, "erdma", dir);
  const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
  const guest = await bootPrepared(prepared, { device: { profile: "erdma-reflush" } });
  t.teardown(() => guest.dispose());
  await compareWithLocal(t, { driver: "erdma", dir, guest });

  t.test("the connection dropped while a scenario runs", async (t) => {
    // once the second scenario's first batch runs, the SSH server process of the runner's session dies
    const killer = guest.exec(
      [
        "i=0; while ! grep -qs 00[2]-a.sh /proc/[0-9]*/cmdline; do i=$((i+1)); [ $i -gt 1200 ] && exit 9; sleep 0.05; done",
        `for p in /proc/[0-9]*; do grep -q hil-targe[t] $p/cmdline 2>/dev/null && grep -q run[.]s[h] $p/cmdline && { r=\${p#/proc/}; break; }; done`,
        'while [ -n "$r" ] && [ "$(cat /proc/$r/comm)" != dropbear ]; do r=$(sed -n "s/^PPid:\\s*//p" /proc/$r/status); done',
        'kill -9 "$r" && echo "killed $r"',
      ].join("\n"),
      { timeoutMs: 120_000 },
    );
    const run = await hil([
      "run",
      "--scenario",
      SCENARIOS.join(","),
      ...(await targetArgs(guest)),
      "--run-dir",
      join(dir, "dropped"),
    ]);
    const killed = await killer;
    t.match(killed.stdout, /killed \d+/, `the runner's session was killed: ${killed.stderr}`);
    t.equal(run.exitCode, 3, `an interrupted run cannot be judged whole: ${run.stderr.slice(-2000)}`);
    t.match(run.stderr, /reconnecting to .* to clean up/);
    const record = read(join(dir, "dropped"));
    const errors = record.scenarios.filter((s) => s.judgements.some((j) => j.verdict === "ERROR"));
    t.ok(errors.length >= 1, "the scenarios the drop cut off are ERRORs");
    for (const s of errors)
      t.match(s.outcome?.reason, /SSH connection to ssh:\/\/root@127\.0\.0\.1:\d+ was lost/, s.name);
    const local = cellVerdicts(join(dir, "local"));
    for (const [cell, verdict] of cellVerdicts(join(dir, "dropped")))
      if (verdict !== "ERROR" && !cell.startsWith(FAULTY))
        t.equal(verdict, local.get(cell), `${cell}: judged as locally`);
    t.notOk(record.target?.left, "the cleanup left nothing");
    const left = (await guest.exec(LEFTOVERS)).stdout.trim();
    t.equal(left, "", `nothing of the run is left on the target: ${left}`);
  });
});

t.test("hil run --target --driver siw on a guest without a device", async (t) => {
  const dir = t.testdir({});
  await runLocally(t, "siw", dir);
  const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
  const guest = await bootPrepared(prepared, { device: false });
  t.teardown(() => guest.dispose());
  await compareWithLocal(t, { driver: "siw", dir, guest });
});

t.test("a target hil cannot log in to is one clear error, and no run directory is left", async (t) => {
  const dir = t.testdir({});
  const noKey = await hil(["run", "--target", "ssh://root@127.0.0.1:1", "--identity", join(dir, "nokey")]);
  t.equal(noKey.exitCode, 2);
  t.match(noKey.stderr, /--identity: .*nokey does not exist/);
  const key = join(dir, "key");
  writeFileSync(key, generateSshKeyPair("hil-test").privateKey, { mode: 0o600 });
  const closed = await hil([
    "run",
    "--target",
    "ssh://root@127.0.0.1:9",
    "--identity",
    key,
    "--run-dir",
    join(dir, "r"),
  ]);
  t.equal(closed.exitCode, 2, closed.stderr);
  t.match(closed.stderr, /cannot log in to ssh:\/\/root@127\.0\.0\.1:9: .*ECONNREFUSED/);
  t.notOk(existsSync(join(dir, "r")), "the run directory it did not fill is not left");
});
