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
