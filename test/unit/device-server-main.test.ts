// The device server's command line (qemu/device-server/main.ts): one device per --socket-path, erdma
// MACs paired with sockets in order, --profile/--trace once or per device; and the process itself
// serving two erdma devices on one fabric, every socket removed on exit and on a failed start.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import t from "tap";
import { parseServerArgs, UsageError } from "../../qemu/device-server/main.ts";
import { serverArgs, startDevicesProcess } from "../../qemu/device-server/process.ts";
import { VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { tempDir } from "../support/temp-dir.ts";

const MAIN = fileURLToPath(new URL("../../qemu/device-server/main.ts", import.meta.url));
const MAC0 = "52:54:00:fa:b0:01";
const MAC1 = "52:54:00:fa:b0:02";

t.test("one device: as before, named erdma", async (t) => {
  const plan = parseServerArgs(["--socket-path", "/r/a.sock", "--device", "erdma", "--mac", MAC0]);
  t.same(plan, {
    kind: "erdma",
    devices: [{ name: "erdma", socketPath: "/r/a.sock", mac: MAC0 }],
    quiet: false,
    exitWithParent: false,
  });
  t.same(parseServerArgs(["--socket-path", "/r/t.sock"])?.devices, [
    { name: "hil-testdev", socketPath: "/r/t.sock" },
  ]);
  t.equal(parseServerArgs(["--help"]), undefined, "--help asks for no devices");
});

t.test(
  "several devices: MACs pair with sockets in order; profile and trace once or per device",
  async (t) => {
    const plan = parseServerArgs([
      "--device",
      "erdma",
      "--socket-path",
      "/r/0.sock",
      "--mac",
      MAC0,
      "--socket-path",
      "/r/1.sock",
      "--mac",
      MAC1,
      "--profile",
      "erdma-2022",
      "--trace",
      "/r/all.jsonl",
      "--dma-timeout-ms",
      "100",
      "--exit-with-parent",
    ]);
    t.same(plan?.devices, [
      { name: "erdma0", socketPath: "/r/0.sock", mac: MAC0, profile: "erdma-2022", trace: "/r/all.jsonl" },
      { name: "erdma1", socketPath: "/r/1.sock", mac: MAC1, profile: "erdma-2022", trace: "/r/all.jsonl" },
    ]);
    t.equal(plan?.dmaTimeoutMs, 100);
    t.equal(plan?.exitWithParent, true);
    const each = parseServerArgs([
      "--device=erdma",
      "--socket-path=/r/0.sock",
      "--socket-path=/r/1.sock",
      `--mac=${MAC0}`,
      `--mac=${MAC1}`,
      "--profile=erdma-2022",
      "--profile=erdma-reflush",
      "--trace=/r/0.jsonl",
      "--trace=-",
    ]);
    t.same(
      each?.devices.map((d) => [d.name, d.mac, d.profile, d.trace]),
      [
        ["erdma0", MAC0, "erdma-2022", "/r/0.jsonl"],
        ["erdma1", MAC1, "erdma-reflush", "-"],
      ],
    );
  },
);

t.test("bad combinations: one UsageError naming the option and the device", async (t) => {
  const two = ["--device", "erdma", "--socket-path", "/r/0.sock", "--socket-path", "/r/1.sock"];
  const cases: [string[], RegExp][] = [
    [[], /--socket-path is required/],
    [[...two], /needs --mac/],
    [[...two, "--mac", MAC0], /1 --mac for 2 --socket-path: erdma needs one --mac per --socket-path/],
    [[...two, "--mac", MAC0, "--mac", MAC1, "--mac", "52:54:00:00:00:03"], /3 --mac for 2 --socket-path/],
    [[...two, "--mac", MAC0, "--mac", "52:54:00:zz:00:01"], /--mac \(device 2, \/r\/1\.sock\): bad MAC/],
    [[...two, "--mac", MAC0, "--mac", MAC0.toUpperCase()], /--mac 52:54:00:fa:b0:01 is given twice/],
    [
      ["--device", "erdma", "--socket-path", "/r/0.sock", "--socket-path", "/r/../r/0.sock"],
      /--socket-path \/r\/0\.sock is given twice/,
    ],
    [
      [
        ...two,
        "--socket-path",
        "/r/2.sock",
        ...["--mac", MAC0, "--mac", MAC1, "--mac", "52:54:00:00:00:03"],
        ...["--profile", "erdma-2022", "--profile", "erdma-reflush"],
      ],
      /2 --profile options for 3 --socket-path options/,
    ],
    [[...two, "--mac", MAC0, "--mac", MAC1, "--trace", "a", "--trace", "b", "--trace", "c"], /3 --trace/],
    [["--socket-path", "/r/0.sock", "--mac", MAC0], /--mac and --profile belong to --device erdma/],
    [
      ["--socket-path", "/r/0.sock", "--device", "e1000"],
      /unknown device e1000 \(known: hil-testdev, erdma\)/,
    ],
    [["--socket-path", "/r/0.sock", "--dma-timeout-ms", "soon"], /bad --dma-timeout-ms soon/],
    [["--socket-path", "/r/0.sock", "--bogus"], /Unknown option '--bogus'/],
    [["--socket-path", "/r/0.sock", "--control", "/r/c.sock"], /--control belongs to --device erdma/],
    [
      [...two, "--mac", MAC0, "--mac", MAC1, "--control", "/r/1.sock"],
      /--control \/r\/1\.sock is also a --socket-path/,
    ],
  ];
  for (const [argv, message] of cases) {
    t.throws(() => parseServerArgs(argv), new UsageError(), argv.join(" "));
    t.throws(() => parseServerArgs(argv), { message }, `${argv.join(" ")} -> ${message}`);
  }
});

t.test("the process: bad pairs exit 2 with the message and the usage, and create nothing", async (t) => {
  const dir = tempDir(t, "hil-vfu-main-");
  const sockets = [join(dir, "0.sock"), join(dir, "1.sock")];
  const socketArgs = sockets.flatMap((s) => ["--socket-path", s]);
  const runMain = (...args: string[]) =>
    execa(process.execPath, ["--import", "tsx", MAIN, "--device", "erdma", ...socketArgs, ...args], {
      reject: false,
    });
  const r = await runMain("--mac", MAC0);
  t.equal(r.exitCode, 2);
  t.match(
    r.stderr,
    /^vfio-user server: 1 --mac for 2 --socket-path: erdma needs one --mac per --socket-path/,
  );
  t.match(r.stderr, /usage: main\.ts --socket-path PATH \[--socket-path PATH \.\.\.\]/);
  t.equal(r.stdout, "");
  t.notOk(sockets.some(existsSync), "no socket made");
  const twoMacs = ["--mac", MAC0, "--mac", MAC1];
  const badProfile = await runMain(...twoMacs, "--profile", "erdma-reflush", "--profile", "no-such-profile");
  t.equal(badProfile.exitCode, 2);
  t.match(badProfile.stderr, /--profile \(device erdma1, .*1\.sock\): .*no-such-profile/);
  t.notOk(sockets.some(existsSync), "no socket made");
});

t.test("serverArgs: the command line the launcher builds", async (t) => {
  t.same(serverArgs({ device: "erdma", devices: [{ socketPath: "/r/a.sock", mac: MAC0 }] }), [
    "--device",
    "erdma",
    "--socket-path",
    "/r/a.sock",
    "--mac",
    MAC0,
    "--exit-with-parent",
  ]);
  const pair = serverArgs({
    device: "erdma",
    devices: [
      { socketPath: "/r/0.sock", mac: MAC0, profile: "erdma-2022", traceFile: "/r/0.jsonl" },
      { socketPath: "/r/1.sock", mac: MAC1, profile: "erdma-2022", traceFile: "/r/1.jsonl" },
    ],
    dmaTimeoutMs: 50,
  });
  t.same(pair, [
    ...["--device", "erdma", "--socket-path", "/r/0.sock", "--socket-path", "/r/1.sock"],
    ...["--mac", MAC0, "--mac", MAC1, "--profile", "erdma-2022"],
    ...["--trace", "/r/0.jsonl", "--trace", "/r/1.jsonl", "--dma-timeout-ms", "50", "--exit-with-parent"],
  ]);
  t.same(
    parseServerArgs(pair)?.devices.map((d) => d.trace),
    ["/r/0.jsonl", "/r/1.jsonl"],
    "main.ts reads it back",
  );
  t.throws(
    () =>
      serverArgs({
        device: "erdma",
        devices: [
          { socketPath: "/r/0.sock", mac: MAC0, profile: "erdma-2022" },
          { socketPath: "/r/1.sock", mac: MAC1 },
        ],
      }),
    { name: "HilError", message: /--profile: give it for every device/ },
  );
  t.throws(
    () =>
      serverArgs({
        devices: [{ socketPath: "/r/0.sock", traceFile: "/r/0.jsonl" }],
        traceFile: "/r/all.jsonl",
      }),
    { message: /pick one/ },
  );
  t.throws(() => serverArgs({ devices: [] }), { message: /at least one device/ });
});

t.test(
  "two erdma devices in one process: both listen, one trace names each, SIGTERM removes both sockets",
  async (t) => {
    const dir = tempDir(t, "hil-vfu-main-");
    const trace = join(dir, "trace.jsonl");
    const server = await startDevicesProcess({
      device: "erdma",
      devices: [
        { socketPath: join(dir, "erdma0.sock"), mac: MAC0 },
        { socketPath: join(dir, "erdma1.sock"), mac: MAC1 },
      ],
      traceFile: trace,
    });
    t.teardown(() => server.stop());
    t.same(server.socketPaths, [join(dir, "erdma0.sock"), join(dir, "erdma1.sock")]);
    t.ok(server.socketPaths.every(existsSync), "both sockets exist");
    for (const sock of server.socketPaths) {
      const c = VfioUserClient.connect(sock);
      await c.negotiate();
      await c.close();
    }
    const ended = await server.stop();
    t.same(ended, { code: 0, signal: null }, "exit 0 on SIGTERM");
    t.notOk(server.socketPaths.some(existsSync), "both sockets removed");
    const lines = readFileSync(trace, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { dev?: string; kind: string; src?: string });
    const connects = lines.filter((l) => l.kind === "connect");
    t.same(
      connects.map((l) => [l.dev, l.src]),
      [
        ["erdma0", "vfio-user"],
        ["erdma1", "vfio-user"],
      ],
      "each device's session in the shared trace, named",
    );
    t.ok(
      lines.every((l) => l.dev === "erdma0" || l.dev === "erdma1"),
      "every line names its device",
    );
  },
);

t.test("a socket that cannot be made: exit 1, the sockets already made are removed", async (t) => {
  const dir = tempDir(t, "hil-vfu-main-");
  const good = join(dir, "erdma0.sock");
  const bad = join(dir, "no-such-dir", "erdma1.sock");
  await t.rejects(
    startDevicesProcess({
      device: "erdma",
      devices: [
        { socketPath: good, mac: MAC0 },
        { socketPath: bad, mac: MAC1 },
      ],
    }),
    { name: "HilError", message: /exited before listening \(1\)/, detail: /cannot listen on .*no-such-dir/ },
  );
  t.notOk(existsSync(good), "the first device's socket was removed");
});

t.test("its parent's pipes gone (the parent was killed): the next log line stops it cleanly", async (t) => {
  const dir = tempDir(t, "hil-vfu-main-");
  const sockets = [join(dir, "erdma0.sock"), join(dir, "erdma1.sock")];
  const child = spawn(
    process.execPath,
    ["--import", "tsx", MAIN, "--device", "erdma", ...sockets.flatMap((s) => ["--socket-path", s])].concat([
      "--mac",
      MAC0,
      "--mac",
      MAC1,
    ]),
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  t.teardown(() => child.kill("SIGKILL"));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (sockets.every((s) => out.includes(`listening ${s}`))) resolve();
    });
  });
  const c = VfioUserClient.connect(sockets[1] ?? "");
  await c.negotiate();
  // what a SIGKILLed parent leaves: nobody reads the server's stdout and stderr any more
  child.stdout.destroy();
  child.stderr.destroy();
  await c.close(); // the server logs the disconnect on stderr: EPIPE
  const code = await Promise.race([exited, sleep(10_000).then(() => "still running")]);
  t.equal(code, 0, "it stopped by itself, cleanly");
  t.notOk(sockets.some(existsSync), "both sockets removed");
});
