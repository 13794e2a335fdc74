// hil run --target's pieces that need no target: the URL, what the target says of itself and the
// device chosen from it, the shell archive that carries the runner (unpacked here by sh), the
// cleanup (run here against a directory with a process running from it), and the options a
// target run refuses.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { checkTargetOptions } from "../../harness/cli/target-options.ts";
import { cleanupScript, leftBehind, runnerCommand, shellArchive } from "../../harness/target/deploy.ts";
import { checkTargetReady, chooseTargetDevice, parseTargetFacts } from "../../harness/target/facts.ts";
import { parseTargetUrl, targetLabel } from "../../harness/target/url.ts";
import { thrownMessage } from "../support/unit-errors.ts";

t.test("--target URLs", async (t) => {
  t.same(parseTargetUrl("ssh://root@10.1.2.3"), { user: "root", host: "10.1.2.3", port: 22 });
  t.same(parseTargetUrl("ssh://ci@lab-7.example:2222"), { user: "ci", host: "lab-7.example", port: 2222 });
  t.same(parseTargetUrl("ssh://root@[fe80::1]:22"), { user: "root", host: "fe80::1", port: 22 });
  t.equal(targetLabel({ user: "root", host: "fe80::1", port: 2200 }), "ssh://root@[fe80::1]:2200");
  t.equal(targetLabel({ user: "ci", host: "h", port: 22 }), "ssh://ci@h");
  const bad: [string, RegExp][] = [
    ["root@host", /not a URL/],
    ["http://root@host", /only ssh:\/\/ targets/],
    ["ssh://host", /names no user/],
    ["ssh://root:secret@host", /no password in the URL/],
    ["ssh://root@host/tmp", /nothing after the port/],
  ];
  for (const [url, why] of bad) t.throws(() => parseTargetUrl(url), { message: why, where: "--target" }, url);
  t.notMatch(
    thrownMessage(() => parseTargetUrl("ssh://root:secret@host")),
    /secret/,
    "the password is not repeated in the error",
  );
});

const FACTS = [
  "release=6.12.95",
  "uid=0",
  "printk=7",
  "dev=erdma_0|erdma|0.2.0|eth0",
  "dev=mlx5_0|mlx5_core|22.31.1014|ens1f0",
  "addr=lo|127.0.0.1",
  "addr=eth0|10.0.2.15",
  "addr=ens1f0@parent|192.168.7.2",
  "route=eth0",
].join("\n");

t.test("what the target has, and the device chosen", async (t) => {
  const facts = parseTargetFacts(FACTS);
  t.equal(facts.release, "6.12.95");
  t.equal(facts.root, true);
  t.equal(facts.consoleLevel, "7");
  t.equal(facts.kverbsLoaded, false);
  t.same(facts.missingTools, []);
  t.equal(facts.addresses.get("ens1f0"), "192.168.7.2", "a netdev@parent is its name");
  t.same(chooseTargetDevice(facts, "erdma", undefined), {
    name: "erdma_0",
    netdev: "eth0",
    addr: "10.0.2.15",
    driver: "erdma",
    firmware: "0.2.0",
  });
  t.throws(() => chooseTargetDevice(facts, "erdma", "mlx5_0"), {
    message: /mlx5_0 is driven by mlx5_core, not erdma/,
    where: "--target-device",
  });
  t.throws(() => chooseTargetDevice(facts, "erdma", "erdma_9"), {
    message: /no RDMA device erdma_9/,
    detail: /erdma_0 \(erdma\), mlx5_0 \(mlx5_core\)/,
  });
  t.same(
    parseTargetFacts("release=6.12.95\ndev=erdma_0|||eth0\ndev=siw0|||eth0\ndev=rxe_x|||eth1").devices.map(
      (d) => d.driver,
    ),
    ["erdma", "", ""],
    "a device without a parent is known by its name's prefix (erdma_0); a name the user chose is not",
  );
  const two = parseTargetFacts(`${FACTS}\ndev=erdma_1|erdma||eth0`);
  t.throws(() => chooseTargetDevice(two, "erdma", undefined), { message: /2 erdma devices: pick one/ });
  t.equal(chooseTargetDevice(two, "erdma", "erdma_1").firmware, "");
  const none = parseTargetFacts("release=6.1.0\nuid=0\nroute=eth0\naddr=eth0|10.0.0.5");
  t.throws(() => chooseTargetDevice(none, "erdma", undefined), {
    message: /no erdma RDMA device/,
    detail: /its devices: none/,
  });
  t.same(chooseTargetDevice(none, "siw", undefined), {
    name: "siw0",
    netdev: "eth0",
    addr: "10.0.0.5",
    driver: "siw",
    firmware: "",
  });
  t.throws(() => chooseTargetDevice(none, "siw", "erdma_0"), { message: /drop --target-device/ });
  const noAddr = parseTargetFacts("release=6.1.0\nuid=0\ndev=erdma_0|erdma||eth1");
  t.throws(() => chooseTargetDevice(noAddr, "erdma", undefined), { message: /eth1 has no IPv4 address/ });
  t.throws(() => parseTargetFacts("uid=0\n"), { message: /uname -r/ });
});

t.test("a target hil cannot run on is refused before anything is copied", async (t) => {
  const ok = parseTargetFacts(FACTS);
  t.doesNotThrow(() => checkTargetReady(ok, "ssh://root@h", "6.12.95"));
  t.throws(() => checkTargetReady(ok, "ssh://root@h", "6.12.96"), {
    message: /runs Linux 6\.12\.95, and hil_kverbs is built for 6\.12\.96/,
    where: "--kernel",
  });
  t.throws(() => checkTargetReady(parseTargetFacts(FACTS.replace("uid=0", "uid=1000")), "x", "6.12.95"), {
    message: /needs root/,
  });
  t.throws(() => checkTargetReady(parseTargetFacts(`${FACTS}\nkverbs=loaded`), "x", "6.12.95"), {
    message: /hil_kverbs loaded already/,
  });
  t.throws(
    () => checkTargetReady(parseTargetFacts(`${FACTS}\nmissing=rdma\nmissing=md5sum`), "x", "6.12.95"),
    {
      message: /lacks what the runner uses: rdma, md5sum/,
    },
  );
});

t.test("the shell archive writes every file as it is, under its directory", async (t) => {
  const dir = t.testdir({});
  const files = new Map([
    ["run.sh", "#!/bin/sh\necho 'quoted $HOME `x`'\nHIL_EOF_0\n"],
    ["plan.txt", "001 a\n"],
    ["s/001-a.sh", "cd /x || exit 1\n"],
    ["empty", ""],
  ]);
  execFileSync("sh", ["-s"], { input: shellArchive(dir, files) });
  for (const [path, text] of files) t.equal(readFileSync(join(dir, path), "utf8"), text, path);
  t.throws(() => shellArchive(dir, new Map([["../x", "a\n"]])), /stay under its directory/);
  t.throws(() => shellArchive(dir, new Map([["x", "no newline"]])), /end with a newline/);
  t.equal(
    runnerCommand("/tmp/hil-target.ab", { SIW_NETDEV: "eth0" }),
    "SIW_NETDEV='eth0' sh '/tmp/hil-target.ab/run.sh'",
  );
});

t.test("the cleanup kills what runs from the directory and removes it", async (t) => {
  const dir = join(t.testdir({}), "hil-target.x1");
  mkdirSync(dir);
  const child = spawn("sh", ["-c", "sleep 60", `${dir}/run.sh`], { stdio: "ignore" });
  const gone = new Promise<number | null>((done) => child.on("exit", (_code, sig) => done(sig ? 0 : 1)));
  await new Promise((r) => setTimeout(r, 100));
  const out = execFileSync("sh", ["-s"], { input: cleanupScript({ dir }), encoding: "utf8" });
  t.equal(await gone, 0, "the process running from the directory was killed");
  t.notOk(existsSync(dir), "the directory is gone");
  t.same(leftBehind(out), [], "nothing said to be left");
  t.same(leftBehind("noise\nhil-left the hil_kverbs module (loaded)\nhil-left /tmp/x\n"), [
    "the hil_kverbs module (loaded)",
    "/tmp/x",
  ]);
  t.match(
    cleanupScript({ dir, siwLink: "siw0", consoleLevel: "7" }),
    /rdma link del 'siw0'[\s\S]*dmesg -n 7/,
  );
  t.notMatch(
    cleanupScript({ dir, consoleLevel: "7; reboot" }),
    /reboot/,
    "a level that is not a number is not put back",
  );
});

t.test("options a run on --target refuses", async (t) => {
  const base = { device: true, target: "ssh://root@h" };
  t.doesNotThrow(() => checkTargetOptions(base));
  const refused: [object, RegExp][] = [
    [{ deviceProfile: "erdma-2022" }, /--device-profile does not go with --target/],
    [{ device: false }, /--no-device does not go with --target/],
    [{ deviceSocket: "/tmp/s" }, /--device-socket does not go/],
    [{ devicePci: "0000:03:00.0" }, /--device-pci does not go/],
    [{ mac: "52:54:00:00:00:01" }, /--mac does not go/],
    [{ repeat: 3 }, /--repeat does not go/],
    [{ executor: "user" }, /--executor user does not go/],
  ];
  for (const [extra, why] of refused)
    t.throws(() => checkTargetOptions({ ...base, ...extra }), { message: why });
  t.throws(() => checkTargetOptions({ device: true, identity: "k" }), {
    message: /--identity goes with --target/,
  });
  t.throws(() => checkTargetOptions({ device: true, targetDevice: "erdma_0" }), {
    message: /--target-device goes with --target/,
  });
});
