import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { buildKernel } from "../../harness/kernel/build.ts";
import { gatherVersions } from "../../harness/versions.ts";
import { expectNothingLeft, hil, isolate, REPO_ROOT } from "../support/cli.ts";

t.setTimeout(60 * 60_000);

t.test(
  "hil boot --kernel debian:6.12 -- cat /proc/version prints the kernel built here, without legacy ptys",
  async (t) => {
    const before = isolate();
    const kernel = await buildKernel({ base: "debian:6.12", configs: [] });
    const utsVersion = /UTS_VERSION "([^"]+)"/.exec(
      readFileSync(join(kernel.buildDir, "include/generated/utsversion.h"), "utf8"),
    )?.[1];
    const r = await hil(
      [
        "boot",
        "--kernel",
        "debian:6.12",
        "--",
        "cat /proc/version; echo legacy ptys: $(ls /dev | grep -c '^pty[p-za-e]'); [ -c /dev/ptmx ] && echo ptmx",
      ],
      before.env,
    );
    t.equal(r.exitCode, 0, r.stderr);
    t.match(r.stdout, new RegExp(`^Linux version ${kernel.release.replace(/\./g, "\\.")} `));
    t.match(r.stdout, /^legacy ptys: 0$/m, "pty.legacy_count=0: no BSD pty devices registered at boot");
    t.match(r.stdout, /^ptmx$/m, "Unix 98 ptys remain, which SSH sessions use");
    t.ok(
      utsVersion && r.stdout.includes(utsVersion),
      `the build's own timestamp (${utsVersion}) is in /proc/version`,
    );
    t.match(r.stderr, /\[boot\] debian:6\.12: guest up/, "progress on stderr");
    expectNothingLeft(t, before);
  },
);

t.test("the guest command's exit code and streams come back", async (t) => {
  const r = await hil(["boot", "--", "echo out; echo err >&2; exit 7"]);
  t.equal(r.exitCode, 7);
  t.equal(r.stdout, "out\n");
  t.match(r.stderr, /^err$/m);
});

t.test("a series reaches the guest: its printk line is in dmesg", async (t) => {
  const r = await hil([
    "boot",
    "--kernel",
    "debian:6.12",
    "--series",
    "fixtures/series/hello-printk.mbox",
    "--",
    "dmesg",
  ]);
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, /erdma-hil: hello from a patched kernel/);
});

t.test("hil run (the main job): the device probes, then the drain suite; a run directory", async (t) => {
  const dir = t.testdir({});
  const before = isolate();
  const r = await hil(["run", "--scenario", "drain-qp-idle", "--run-dir", dir], before.env);
  t.equal(r.exitCode, 0, r.stdout + r.stderr);
  t.match(
    r.stdout,
    /^the device probes: kernel-release PASS, erdma-module PASS, rdma-core PASS, erdma-probe PASS, verbs-lifecycle PASS, console-clean PASS$/m,
  );
  t.match(
    r.stdout,
    /^drain-qp-idle\s+PASS\s+PASS\s+PASS/m,
    "the scenario is judged under ib, iwarp-rdmac and linux",
  );
  t.match(r.stdout, /^hil: 9 passed, 0 failed$/m);
  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
  t.same(
    record.probe.map((x: { id: string; verdict: string }) => `${x.id} ${x.verdict}`),
    [
      "kernel-release PASS",
      "erdma-module PASS",
      "rdma-core PASS",
      "erdma-probe PASS",
      "verbs-lifecycle PASS",
      "console-clean PASS",
    ],
  );
  t.same(record.device, { profile: "erdma-reflush", trace: "hw-trace.jsonl" });
  // the versions that produced the run, as `hil --version` says it would use them
  const predicted = await gatherVersions();
  const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version as string;
  t.equal(predicted.hil.split("+")[0], packageJson, "package.json's version, then the code it is at");
  t.match(predicted.hil, /\+(g[0-9a-f]{12}(\.dirty)?|src\.[0-9a-f]{16})$/);
  t.same(record.versions, {
    hil: predicted.hil,
    qemu: predicted.qemu.version,
    kernel: {
      spec: "debian:6.12",
      release: predicted.kernel.release,
      debianVersion: predicted.kernel.version,
    },
    rdmaCore: predicted.rdmaCore.version,
  });
  t.match(record.versions?.kernel?.release, /^6\.12\.\d+/);
  t.equal(
    record.probe.find((x: { id: string }) => x.id === "kernel-release")?.reason,
    `uname -r = ${record.versions?.kernel?.release}`,
    "the release recorded is the one the guest booted",
  );
  t.match(record.versions?.rdmaCore, /^\d+\.\d+-\d+$/, "rdma-core's Debian version");
  t.match(readFileSync(join(dir, "console.log"), "utf8"), /HIL-GUEST-READY/);
  const trace = readFileSync(join(dir, "hw-trace.jsonl"), "utf8");
  t.match(trace, /"kind":"cmd","opcode":1,"submod":0,"name":"CREATE_QP"/, "the hardware trace is kept");
  t.match(
    readFileSync(join(dir, "traces", "drain-qp-idle.jsonl"), "utf8"),
    /"ev":"drain_ret"/,
    "the verbs trace",
  );
  t.match(
    readFileSync(join(dir, "traces", "drain-qp-idle.hw.jsonl"), "utf8"),
    /"kind":"cmd"/,
    "its hardware slice",
  );
  expectNothingLeft(t, before);
});

t.test("hil run --no-device: the device checks are skipped, not failed", async (t) => {
  const dir = t.testdir({});
  const before = isolate();
  const r = await hil(["run", "--no-device", "--run-dir", dir], before.env);
  t.equal(r.exitCode, 0, r.stdout + r.stderr);
  t.match(r.stdout, /^erdma-probe\s+SKIP\s+no emulated erdma device/m);
  t.match(r.stdout, /^hil: 4 passed, 0 failed, 2 skip$/m);
  t.notOk(existsSync(join(dir, "hw-trace.jsonl")), "no trace without a device");
  expectNothingLeft(t, before);
});

t.test("hil boot attaches the device; --trace keeps its hardware trace", async (t) => {
  const dir = t.testdir({});
  const before = isolate();
  const trace = join(dir, "hw.jsonl");
  const r = await hil(["boot", "--trace", trace, "--", "hil-verbs-lifecycle && rdma link"], before.env);
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, /^ok close_device$/m);
  t.match(r.stdout, /^link erdma_0\/1 state ACTIVE physical_state LINK_UP netdev eth0/m);
  t.match(r.stderr, /\[device\] erdma \(erdma-reflush\)/, "progress names the device and profile");
  const lines = readFileSync(trace, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const names = lines.filter((e) => e.kind === "cmd").map((e) => e.name);
  t.ok(
    names.includes("QUERY_DEVICE") && names.includes("CREATE_QP") && names.includes("DEREG_MR"),
    names.join(" "),
  );
  t.ok(
    lines.some((e) => e.kind === "reg-read" && e.name === "VERSION"),
    "register accesses",
  );
  t.ok(
    lines.some((e) => e.kind === "irq" && e.delivered),
    "interrupts",
  );
  t.ok(
    lines.some((e) => e.kind === "state" && e.object === "qp"),
    "state changes",
  );
  expectNothingLeft(t, before);
});

t.test("a boot that fails stops the device server too: nothing left", async (t) => {
  const before = isolate();
  const r = await hil(["boot", "--boot-timeout", "1", "--", "true"], before.env);
  t.equal(r.exitCode, 2, r.stderr);
  t.match(r.stderr, /\[device\] erdma \(erdma-reflush\): server pid \d+/, "the device server had started");
  t.match(r.stderr, /hil: error: the guest never reached SSH within 1 s/);
  expectNothingLeft(t, before);
});

t.test("hil boot --no-device: no RDMA device in the guest", async (t) => {
  const before = isolate();
  const r = await hil(["boot", "--no-device", "--", "ls /sys/class/infiniband | wc -l"], before.env);
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(r.stdout.trim(), "0");
  t.notMatch(r.stderr, /\[device\]/);
  expectNothingLeft(t, before);
});

t.test("bad input: an unknown or invalid profile is one clear error naming file and field", async (t) => {
  const before = isolate();
  const unknown = await hil(["boot", "--device-profile", "no-such-profile", "--", "true"], before.env);
  t.equal(unknown.exitCode, 2);
  t.match(
    unknown.stderr,
    /^hil: error: .*fixtures\/profiles\/no-such-profile\.json: no such device profile/m,
  );
  t.match(unknown.stderr, /erdma-reflush/, "the known profiles are listed");
  const dir = t.testdir({
    "broken.json": JSON.stringify({ name: "broken", extends: "erdma-reflush", caps: { maxCqeLog2: 99 } }),
  });
  const bad = await hil(
    ["run", "--device-profile", join(dir, "broken.json"), "--run-dir", join(dir, "run")],
    before.env,
  );
  t.equal(bad.exitCode, 2);
  t.match(bad.stderr, /broken\.json: invalid device profile\ncaps\.maxCqeLog2: /);
  t.notMatch(bad.stderr, /at .*\.ts:\d+/, "no stack trace");
  const both = await hil(["boot", "--no-device", "--device-profile", "erdma-2022", "--", "true"], before.env);
  t.equal(both.exitCode, 2);
  t.match(both.stderr, /--device-profile and --no-device contradict/);
  // the old spelling: the same option, with one notice naming the new one
  const old = await hil(["boot", "--profile", "no-such-profile", "--", "true"], before.env);
  t.equal(old.exitCode, 2);
  t.match(old.stderr, /^hil: notice: --profile is now --device-profile \(the old spelling still works\)\n/);
  t.match(old.stderr, /^hil: error: .*no-such-profile\.json: no such device profile/m);
  t.equal(old.stderr.match(/notice/g)?.length, 1, "one notice");
  expectNothingLeft(t, before);
});

t.test("bad input: an unknown kernel base is one clear error, exit 2, nothing left", async (t) => {
  const before = isolate();
  const r = await hil(["boot", "--kernel", "debian:9.9", "--", "true"], before.env);
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /^hil: error: .*debian:9\.9/m);
  t.notMatch(r.stderr, /at .*\.ts:\d+/, "no stack trace");
  expectNothingLeft(t, before);
});

t.test("bad input: a QEMU without vfio-user-pci named by HIL_QEMU", async (t) => {
  const dir = t.testdir({
    "qemu-system-x86_64": "#!/bin/sh\necho 'QEMU emulator version 7.2.0'\necho 'name \"virtio-net-pci\"'\n",
  });
  const fake = join(dir, "qemu-system-x86_64");
  const { chmodSync } = await import("node:fs");
  chmodSync(fake, 0o755);
  const r = await hil(["boot", "--", "true"], { HIL_QEMU: fake });
  t.equal(r.exitCode, 2);
  t.match(r.stderr, new RegExp(`hil: error: HIL_QEMU=${fake} cannot be used: .*vfio-user-pci`));
});

t.test("every command has --help", async (t) => {
  for (const args of [
    ["--help"],
    ["setup", "--help"],
    ["kernel", "build", "--help"],
    ["boot", "--help"],
    ["run", "--help"],
  ]) {
    const r = await hil(args);
    t.equal(r.exitCode, 0, args.join(" "));
    t.match(r.stdout, /Usage: hil/, args.join(" "));
  }
});

t.test("a guest kernel panic under hil boot's command is printed, not a bare 255", async (t) => {
  const iso = isolate();
  const r = await hil(["boot", "--", "echo c > /proc/sysrq-trigger"], iso.env);
  t.equal(r.exitCode, 1, "the kernel failed: exit 1");
  t.match(
    r.stderr,
    /hil: error: the guest kernel panicked while the command ran: Kernel panic - not syncing: sysrq triggered crash/,
  );
  t.match(r.stderr, /sysrq_handle_crash/, "with the panic's stack");
  expectNothingLeft(t, iso);
});
