import t from "tap";
import {
  authKeyParam,
  KERNEL_CMDLINE_MAX,
  kernelCommandLine,
  optValue,
  qemuArgv,
  userNetdev,
  vfioUserPciArgs,
} from "../../qemu/launch/cmdline.ts";
import { argsOf, GUEST_KEY, guestSpec } from "../support/unit-guest-spec.ts";

/** The value following `flag` (the n-th occurrence). */
function arg(argv: string[], flag: string, n = 0): string | undefined {
  const positions = argv.flatMap((a, i) => (a === flag ? [i] : []));
  const i = positions[n];
  return i === undefined ? undefined : argv[i + 1];
}

t.test("a TCG guest: q35 on shared memfd RAM, max CPU, serial to a file, QMP, SSH forward", async (t) => {
  const argv = qemuArgv(guestSpec());
  t.equal(arg(argv, "-machine"), "q35,memory-backend=ram0");
  t.equal(arg(argv, "-accel"), "tcg");
  t.equal(arg(argv, "-cpu"), "max,la57=off", "no 5-level paging: the debug kernel's early KASAN report");
  t.equal(arg(argv, "-smp"), "2");
  t.equal(arg(argv, "-m"), "1024M");
  t.equal(arg(argv, "-object"), "memory-backend-memfd,id=ram0,size=1024M,share=on");
  t.equal(arg(argv, "-kernel"), "/k/bzImage");
  t.equal(arg(argv, "-initrd"), "/k/initramfs.cpio.gz");
  t.same(argsOf(argv, "-L"), ["/usr/share/qemu", "/usr/share/seabios"]);
  t.ok(argv.includes("-no-reboot"));
  t.ok(argv.includes("-nodefaults"));
  t.equal(arg(argv, "-display"), "none");
  t.same(argsOf(argv, "-chardev"), [
    "file,id=console,path=/run/x/console.log",
    "socket,id=qmp,path=/run/x/qmp.sock,server=on,wait=off",
  ]);
  t.equal(arg(argv, "-serial"), "chardev:console");
  t.equal(arg(argv, "-mon"), "chardev=qmp,mode=control");
  t.equal(arg(argv, "-netdev"), "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:40022-:22");
  t.equal(arg(argv, "-device"), "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,romfile=");
});

t.test(
  "the guest's user network is isolated: restricted, one forward, from the host's loopback",
  async (t) => {
    const argv = qemuArgv(guestSpec());
    const users = argsOf(argv, "-netdev").filter((n) => n.startsWith("user,"));
    t.equal(users.length, 1, "one user network");
    const opts = (users[0] ?? "").split(",");
    t.ok(opts.includes("restrict=on"), "restrict=on: the guest opens no connection to the host or beyond");
    t.notOk(
      opts.some((o) => o.startsWith("guestfwd=")),
      "no guestfwd: nothing of the host is offered to the guest",
    );
    t.same(
      opts.filter((o) => o.startsWith("hostfwd=")),
      ["hostfwd=tcp:127.0.0.1:40022-:22"],
      "the one way in: the host's 127.0.0.1:<ssh port> to the guest's SSH",
    );
    t.same(userNetdev(2222).split(",").slice(0, 3), ["user", "id=net0", "restrict=on"]);
  },
);

t.test("KVM uses the host CPU", async (t) => {
  const argv = qemuArgv(guestSpec({ accel: "kvm" }));
  t.equal(arg(argv, "-accel"), "kvm");
  t.equal(arg(argv, "-cpu"), "host");
});

t.test(
  "the kernel command line carries console, panic, loglevel, no legacy ptys, the key and extra args last",
  async (t) => {
    const line = kernelCommandLine(guestSpec({ kernelArgs: ["hil.modules=siw", "loglevel=3"] }));
    const words = line.split(" ");
    t.same(words.slice(0, 6), [
      "console=ttyS0,115200",
      "panic=-1",
      "no_timer_check",
      "loglevel=7",
      "unknown_nmi_panic=1",
      "pty.legacy_count=0",
    ]);
    const key = words.find((w) => w.startsWith("hil.authkey="));
    t.ok(key);
    t.equal(Buffer.from(key?.slice("hil.authkey=".length) ?? "", "base64").toString(), `${GUEST_KEY}\n`);
    t.same(words.slice(-2), ["hil.modules=siw", "loglevel=3"]);
    t.notOk(words.includes("hil.probe"));
    t.ok(
      kernelCommandLine(guestSpec({ probe: true }))
        .split(" ")
        .includes("hil.probe"),
    );
    t.equal(arg(qemuArgv(guestSpec()), "-append"), kernelCommandLine(guestSpec()));
  },
);

t.test("an over-long kernel command line is refused", async (t) => {
  t.throws(() => kernelCommandLine(guestSpec({ kernelArgs: ["x".repeat(KERNEL_CMDLINE_MAX)] })), {
    name: "HilError",
    message: /kernel command line is \d+ bytes/,
  });
  t.ok(authKeyParam(GUEST_KEY).length < 200, "an ed25519 key leaves most of the budget");
});

t.test("no network: no netdev, no NIC", async (t) => {
  const argv = qemuArgv(guestSpec({ network: undefined }));
  t.notOk(argv.includes("-netdev"));
  t.notOk(argv.includes("-device"));
});

t.test("extra arguments come last; the vfio-user device is JSON", async (t) => {
  const extra = vfioUserPciArgs("/run/x/erdma0.sock", "erdma0");
  const argv = qemuArgv(guestSpec({ extraArgs: extra }));
  t.same(argv.slice(-2), extra);
  t.same(JSON.parse(extra[1] ?? ""), {
    driver: "vfio-user-pci",
    id: "erdma0",
    socket: { type: "unix", path: "/run/x/erdma0.sock" },
  });
});

t.test("commas in option values are doubled", async (t) => {
  t.equal(optValue("/tmp/a,b"), "/tmp/a,,b");
  const argv = qemuArgv(guestSpec({ consoleLog: "/tmp/a,b/console.log" }));
  t.equal(arg(argv, "-chardev"), "file,id=console,path=/tmp/a,,b/console.log");
});

t.test("bad specs are HilErrors", async (t) => {
  t.throws(() => qemuArgv(guestSpec({ network: { sshPort: 22, mac: "52:54:00:12:34" } })), {
    message: /bad MAC/,
  });
  t.throws(() => qemuArgv(guestSpec({ network: { sshPort: 22, mac: "01:00:5e:00:00:01" } })), {
    message: /multicast/,
  });
  t.throws(() => qemuArgv(guestSpec({ network: { sshPort: 70000, mac: "52:54:00:12:34:56" } })), {
    message: /SSH port/,
  });
  t.throws(() => qemuArgv(guestSpec({ memoryMiB: 64 })), { message: /at least 128/ });
  t.throws(() => qemuArgv(guestSpec({ cpus: 0 })), { message: /CPUs/ });
});

t.test("private guest RAM for device servers that reach memory through DMA messages", async (t) => {
  const shared = qemuArgv(guestSpec());
  const privateRam = qemuArgv(guestSpec({ sharedMemory: false }));
  t.equal(arg(shared, "-object"), "memory-backend-memfd,id=ram0,size=1024M,share=on", "shared by default");
  t.equal(arg(privateRam, "-object"), "memory-backend-ram,id=ram0,size=1024M");
  t.equal(arg(privateRam, "-machine"), "q35,memory-backend=ram0", "the machine uses it either way");
});
