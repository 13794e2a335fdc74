// RDMA traffic between two guests, each with its own emulated erdma, the two devices joined by the
// fabric: the MPA exchange goes over the guests' TCP on the wire between them, then the model pairs
// the QPs by their mirrored connection tuples and moves payloads between the two guest memories.
// rping verifies its data; ib_send_bw/ib_write_bw/ib_read_bw run with rdma_cm; both hardware traces
// show the work on their own device and no model error.
import { join } from "node:path";
import t, { type Test } from "tap";
import { PERFTEST_PORT, RPING_PORT, startServer } from "../../harness/bench/guest-listen.ts";
import { MPA_REPLY_RACE, MPA_REPLY_TIMEOUT } from "../../harness/bench/mpa-reply-race.ts";
import { type BootedPair, bootPair, prepareGuest } from "../../harness/boot.ts";
import { eventsOf, readHwTrace } from "../../harness/protocol/hw-trace.ts";

t.setTimeout(20 * 60 * 1000);

/**
 * Runs a client/server exchange again when its connect lost erdma's MPA reply race (a driver bug
 * that a loaded host meets about once in 60 connections, mpa-reply-race.ts): the data path is what
 * this file tests. Any other failure, and a third loss in a row, is returned as it is.
 */
async function retryingLostMpaReply<R extends { c: { exitCode: number | null; stderr: string } }>(
  t: Test,
  what: string,
  once: () => Promise<R>,
): Promise<R> {
  let r = await once();
  for (let attempt = 2; attempt <= 3 && r.c.exitCode !== 0 && MPA_REPLY_TIMEOUT.test(r.c.stderr); attempt++) {
    t.comment(`${what}: ${MPA_REPLY_RACE}; attempt ${attempt}`);
    r = await once();
  }
  return r;
}

function perftestAvg(out: string): number | undefined {
  const m = /^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$/m.exec(out);
  return m ? Number(m[4]) : undefined;
}

t.test("two guests, two devices, one fabric (debian:6.12)", async (t) => {
  const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
  const dir = t.testdir({});
  const traces = [join(dir, "hw0.jsonl"), join(dir, "hw1.jsonl")] as const;
  let pair: BootedPair | undefined;
  t.teardown(async () => {
    await pair?.dispose();
  });
  pair = await bootPair(prepared, {
    memoryMiB: 512,
    devices: [{ traceFile: traces[0] }, { traceFile: traces[1] }],
  });
  const [server, client] = pair.guests;
  const serverIp = pair.fabricIps[0];

  await t.test("rping across the fabric verifies its data", async (t) => {
    const once = async () => {
      const up = await server.exec(
        startServer(`rping -s -a ${serverIp} -v -C 10`, RPING_PORT, "/tmp/rping-s.log"),
      );
      t.equal(up.exitCode, 0, `the rping server listens\n${up.stderr}`);
      const c = await client.exec(`timeout 60 rping -c -a ${serverIp} -v -C 10`, { timeoutMs: 90_000 });
      const s = await server.exec("sleep 1; killall -q rping; cat /tmp/rping-s.log");
      return { c, s };
    };
    const { c, s } = await retryingLostMpaReply(t, "rping", once);
    t.equal(c.exitCode, 0, `rping client exits 0\n${c.stderr}`);
    t.equal(c.stdout.split("\n").filter((l) => l.startsWith("ping data: rdma-ping-")).length, 10, "10 pings");
    t.equal(s.stdout.split("\n").filter((l) => l.startsWith("server ping data: rdma-ping-")).length, 10);
  });

  for (const tool of ["ib_send_bw", "ib_write_bw", "ib_read_bw"]) {
    await t.test(`${tool} across the fabric`, async (t) => {
      const args = "-R -d erdma_0 -n 200 -s 8192";
      const once = async () => {
        const up = await server.exec(startServer(`${tool} ${args}`, PERFTEST_PORT, `/tmp/${tool}.log`));
        t.equal(up.exitCode, 0, `the ${tool} server listens\n${up.stderr}`);
        const c = await client.exec(`timeout 120 ${tool} ${args} ${serverIp}`, { timeoutMs: 150_000 });
        // a server left listening would take the next tool's client
        const s = await server.exec(`sleep 1; killall -q ${tool}; cat /tmp/${tool}.log`);
        return { c, s };
      };
      const { c, s } = await retryingLostMpaReply(t, tool, once);
      t.equal(c.exitCode, 0, `${tool} exits 0\n${c.stderr}\nits server:\n${s.stdout}`);
      t.ok((perftestAvg(c.stdout) ?? 0) > 0, `average ${perftestAvg(c.stdout)} MB/s`);
    });
  }

  await pair.dispose();
  pair = undefined;
  for (const [i, file] of traces.entries()) {
    const hw = readHwTrace(file);
    t.ok(
      hw.every((e) => e.dev === `erdma${i}`),
      `trace ${i} holds only erdma${i}'s events`,
    );
    const ops = new Set(
      eventsOf(hw, "wqe")
        .filter((e) => e.status === 0)
        .map((e) => e.op),
    );
    t.ok(ops.has(i === 0 ? "RECEIVE" : "SEND"), `erdma${i} did its side of the SENDs`);
    t.same(
      hw.filter((e) => e.kind === "internal-error" || e.kind === "dma-fault"),
      [],
      `erdma${i}: no model error or DMA fault`,
    );
  }
  const peers = eventsOf(readHwTrace(traces[1]), "wqe").filter((e) => e.op === "SEND" && e.status === 0);
  t.ok(peers.length > 0, "the client's SENDs completed on its own device");
  const received = eventsOf(readHwTrace(traces[0]), "wqe").filter(
    (e) => e.op === "RECEIVE" && e.peer === "erdma1",
  );
  t.ok(received.length > 0, "and landed in RQEs of the server's device, from erdma1");
});
