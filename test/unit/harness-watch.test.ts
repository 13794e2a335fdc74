// What counts as the harness dying under a scenario: the device server's exit of any kind, QEMU
// killed or failing; not QEMU ending with status 0 (a guest panic under panic=-1, -no-reboot),
// which is the guest's and judged from its console. The watch notices a death from the exit.
import t from "tap";
import { harnessDeath, watchHarness } from "../../harness/suite/harness-watch.ts";

type Exit = { code: number | null; signal: NodeJS.Signals | null };

function guest(over: { qemu?: { exitCode?: number; signal?: string }; server?: Exit; noDevice?: boolean }) {
  let server = over.server;
  let qemu = over.qemu;
  return {
    pid: 4242,
    get qemuExit() {
      return qemu as never;
    },
    device: over.noDevice
      ? undefined
      : ({
          pid: 777,
          get exit() {
            return server;
          },
        } as never),
    kill(which: "server" | "qemu") {
      if (which === "server") server = { code: null, signal: "SIGKILL" };
      else qemu = { signal: "SIGKILL" };
    },
  };
}

t.test("a live guest and server: no death", async (t) => {
  t.equal(harnessDeath(guest({})), undefined);
  t.equal(harnessDeath(guest({ noDevice: true })), undefined, "siw: no device server to watch");
});

t.test("the device server's exit, killed or not, names it", async (t) => {
  t.equal(
    harnessDeath(guest({ server: { code: null, signal: "SIGKILL" } })),
    "the device server (pid 777) was killed by SIGKILL while the scenario ran: a harness fault, not the driver's",
  );
  t.match(
    harnessDeath(guest({ server: { code: 1, signal: null } })),
    /^the device server \(pid 777\) exited with status 1 /,
  );
  t.match(
    harnessDeath(guest({ server: { code: 1, signal: null }, qemu: { exitCode: 1 } })),
    /^the device server/,
    "the server is named first: QEMU failing after it is the consequence",
  );
});

t.test("QEMU killed or failing is the harness's; QEMU's status 0 is the guest's", async (t) => {
  t.equal(
    harnessDeath(guest({ qemu: { signal: "SIGKILL" } })),
    "QEMU (pid 4242) was killed by SIGKILL while the scenario ran: a harness fault, not the driver's",
  );
  t.match(harnessDeath(guest({ qemu: { exitCode: 1 } })), /^QEMU \(pid 4242\) exited with status 1 /);
  t.equal(harnessDeath(guest({ qemu: { exitCode: 0 } })), undefined, "a guest that panicked or powered off");
});

t.test("the watch resolves once a process dies, and stops polling when told", async (t) => {
  const g = guest({});
  const watch = watchHarness(g);
  let why: string | undefined;
  void watch.died.then((w) => {
    why = w;
  });
  await new Promise((r) => setTimeout(r, 300));
  t.equal(why, undefined, "nothing died yet");
  g.kill("server");
  await watch.died;
  t.match(why, /^the device server \(pid 777\) was killed by SIGKILL/);
  watch.stop();

  const idle = watchHarness(guest({}));
  idle.stop();
  const settled = await Promise.race([
    idle.died.then(() => "died"),
    new Promise((r) => setTimeout(() => r("pending"), 500)),
  ]);
  t.equal(settled, "pending", "a stopped watch says nothing");
});

t.test("a process stopped (SIGSTOP) for long enough is frozen: the watch names it", async (t) => {
  for (const [who, pid, name] of [
    ["qemu", 4242, "QEMU"],
    ["server", 777, "the device server"],
  ] as const) {
    const states = new Map<number, string>();
    const watch = watchHarness(guest({}), { stateOf: (p) => states.get(p) ?? "S", stoppedForMs: 600 });
    let why: string | undefined;
    void watch.died.then((w) => {
      why = w;
    });
    states.set(pid, "T");
    await new Promise((r) => setTimeout(r, 300));
    states.set(pid, "S");
    await new Promise((r) => setTimeout(r, 500));
    t.equal(why, undefined, `${who}: a stop shorter than the limit, then running again, is no fault`);
    const stoppedAt = Date.now();
    states.set(pid, "T");
    const reason = await watch.died;
    const tookMs = Date.now() - stoppedAt;
    t.match(
      reason,
      new RegExp(
        `^${name} \\(pid ${pid}\\) was stopped \\(SIGSTOP or a tracer\\) for \\d+\\.\\d s while the scenario ran: a harness fault, not the driver's$`,
      ),
    );
    t.ok(tookMs >= 600 && tookMs < 1500, `${who}: noticed ${tookMs} ms after it stopped`);
    watch.stop();
  }
  const traced = watchHarness(guest({}), { stateOf: () => "t", stoppedForMs: 0 });
  t.match(await traced.died, /^the device server \(pid 777\) was stopped/, "a tracer's stop (t) counts too");
  traced.stop();
});

t.test(
  "procState reads this process's state from /proc",
  { skip: process.platform !== "linux" },
  async (t) => {
    const { procState } = await import("../../harness/suite/harness-watch.ts");
    t.match(procState(process.pid), /^[RS]$/);
    t.equal(procState(2 ** 22 + 1), undefined, "no such process");
  },
);
