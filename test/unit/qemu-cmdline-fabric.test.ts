// A guest's fabric NIC on QEMU's command line: a second virtio-net behind a dgram netdev over unix
// sockets, after the SSH NIC; init told which NIC it is and its address; bad specs refused.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import {
  type FabricNic,
  fabricNicArgs,
  type GuestSpec,
  kernelCommandLine,
  qemuArgv,
} from "../../qemu/launch/cmdline.ts";
import { createFabricNetwork, FABRIC_IPS, FABRIC_MACS } from "../../qemu/launch/fabric-net.ts";
import { createRunDir, sweepStaleRunDirs } from "../../qemu/launch/rundir.ts";
import { argsOf, guestSpec } from "../support/unit-guest-spec.ts";

const NIC: FabricNic = {
  mac: "52:54:00:FA:B0:01",
  ipCidr: "10.99.0.1/24",
  link: { localPath: "/run/f/guest0.sock", remotePath: "/run/f/guest1.sock" },
};

t.test("the fabric NIC comes after the SSH NIC, on a dgram netdev, with its MAC in lower case", async (t) => {
  const argv = qemuArgv(guestSpec({ fabric: NIC, extraArgs: ["-device", "vfio-user-pci"] }));
  t.same(argsOf(argv, "-netdev"), [
    "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:40022-:22",
    "dgram,id=fabric0,local.type=unix,local.path=/run/f/guest0.sock,remote.type=unix,remote.path=/run/f/guest1.sock",
  ]);
  t.same(argsOf(argv, "-device"), [
    "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,romfile=",
    "virtio-net-pci,netdev=fabric0,mac=52:54:00:fa:b0:01,romfile=",
    "vfio-user-pci",
  ]);
  t.same(argv.slice(-2), ["-device", "vfio-user-pci"], "extra arguments still come last");
});

t.test("init learns which NIC is on the fabric and its address", async (t) => {
  const words = kernelCommandLine(guestSpec({ fabric: NIC, kernelArgs: ["hil.hostname=x"] })).split(" ");
  t.ok(words.includes("hil.fabric_mac=52:54:00:fa:b0:01"));
  t.ok(words.includes("hil.fabric_ip=10.99.0.1/24"));
  t.equal(words.at(-1), "hil.hostname=x", "caller's arguments stay last (they win)");
});

t.test("no fabric: the command line is what it always was", async (t) => {
  const argv = qemuArgv(guestSpec());
  t.equal(argsOf(argv, "-netdev").length, 1);
  t.equal(argsOf(argv, "-device").length, 1);
  t.notMatch(kernelCommandLine(guestSpec()), /hil\.fabric/);
});

t.test("commas in socket paths are doubled", async (t) => {
  const args = fabricNicArgs({ ...NIC, link: { localPath: "/a,b/0.sock", remotePath: "/a,b/1.sock" } });
  t.equal(
    args[1],
    "dgram,id=fabric0,local.type=unix,local.path=/a,,b/0.sock,remote.type=unix,remote.path=/a,,b/1.sock",
  );
});

t.test("bad fabric specs are HilErrors naming what is wrong", async (t) => {
  const bad = (fabric: Partial<FabricNic>, over: Partial<GuestSpec> = {}) =>
    qemuArgv(guestSpec({ fabric: { ...NIC, ...fabric }, ...over }));
  t.throws(() => bad({ mac: "52:54:00:fa:b0" }), { name: "HilError", message: /bad fabric NIC MAC address/ });
  t.throws(() => bad({ mac: "01:00:5e:00:00:01" }), { message: /fabric NIC MAC address .* multicast/ });
  t.throws(() => bad({ mac: "52:54:00:12:34:56" }), { message: /both have the MAC 52:54:00:12:34:56/ });
  t.throws(() => bad({}, { network: undefined }), { message: /needs the SSH NIC too/ });
  for (const ipCidr of ["10.99.0.1", "10.99.0.256/24", "10.99.0.1/31", "10.99.0.1/0", "fe80::1/64"])
    t.throws(() => bad({ ipCidr }), { message: /bad fabric address/ }, ipCidr);
  t.throws(() => bad({ link: { localPath: "/s", remotePath: "/s" } }), {
    message: /two different socket paths/,
  });
  t.throws(() => bad({ link: { localPath: `/${"x".repeat(120)}`, remotePath: "/s" } }), {
    message: /longer than 107 bytes/,
  });
});

t.test("the fabric network: two ends of one wire in a run dir, removed on dispose", async (t) => {
  const net = await createFabricNetwork();
  t.teardown(() => net.dispose());
  t.ok(existsSync(net.dir));
  const [a, b] = net.links;
  t.equal(a.remotePath, b.localPath, "guest 0 sends to where guest 1 listens");
  t.equal(b.remotePath, a.localPath, "and back");
  t.ok(a.localPath.startsWith(`${net.dir}/`));
  t.equal(FABRIC_MACS.length, 2);
  t.equal(FABRIC_IPS.length, 2);
  await net.dispose();
  await net.dispose();
  t.notOk(existsSync(net.dir), "removed");
});

t.test("two guests booting side by side: one's sweep never removes the other's fresh run dir", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "hil-rundir-race-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  // what a sweep could meet while another boot writes its owner file: an empty one
  const halfWritten = join(root, "hil-guest-half");
  mkdirSync(halfWritten);
  writeFileSync(join(halfWritten, "owner.pid"), "");
  t.same(sweepStaleRunDirs("hil-guest-", root), [], "an unreadable owner counts as a fresh, unowned dir");
  // and the owner file is never half-written: both made at once, each sweeping before
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = root;
  try {
    const made = await Promise.all(
      Array.from({ length: 20 }, async () => {
        sweepStaleRunDirs("hil-guest-", root);
        const dir = await createRunDir("hil-guest-");
        sweepStaleRunDirs("hil-guest-", root);
        return dir;
      }),
    );
    t.ok(made.every(existsSync), "every run dir survived the others' sweeps");
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
});
