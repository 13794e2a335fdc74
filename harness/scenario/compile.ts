/**
 * A scenario as hil_kverbs command lines (guest/kverbs/README.md): the setup connects the QP under
 * test to a peer over rdma_cm on the guest's own address, then each step becomes one or more
 * commands with its own watchdog. Steps an executor cannot carry out are marked, not dropped.
 */

import { commandLine, type PollContext } from "../protocol/commands.ts";
import {
  countOn,
  type DriverName,
  type ExecutorKind,
  type ExpectedRc,
  type FaultStep,
  MAX_FANOUT_PAIRS,
  type PostSide,
  type Scenario,
  type Step,
  type StepKind,
  sleepMsOf,
  type UlpAction,
} from "./schema.ts";

/** The verbs object names the compiled commands use. */
export const NAMES = {
  pd: "pd",
  qp: "qp",
  peer: "peer",
  listener: "lsn",
  sharedCq: "cq",
  sendCq: "scq",
  recvCq: "rcq",
  peerCq: "pcq",
} as const;

/** The verbs objects of fanout pair i: a connecting QP and the QP its listener accepts, a CQ each. */
export function fanoutNames(i: number): {
  qp: string;
  peer: string;
  cq: string;
  peerCq: string;
  listener: string;
} {
  return { qp: `f${i}`, peer: `fp${i}`, cq: `fcq${i}`, peerCq: `fpcq${i}`, listener: `fl${i}` };
}

/**
 * The rdma_cm port of fanout pair i of the scenario whose pair listens on `port`: apart from the
 * scenario ports (7600 up) and from the fanout ports of the run's other scenarios.
 */
export function fanoutPort(port: number, i: number): number {
  return FANOUT_PORT_BASE + ((port * MAX_FANOUT_PAIRS + i) % FANOUT_PORTS);
}
const FANOUT_PORT_BASE = 20_000;
const FANOUT_PORTS = 40_000;

export interface CompileOptions {
  /** the guest address the RDMA device is bound to */
  addr: string;
  /** the rdma_cm port of this scenario's connection */
  port: number;
  /** the executor the lines are for (default kernel): the user executor polls every CQ directly */
  executor?: ExecutorKind;
  /** the driver, for post steps with a count per driver (default: the scenario's first) */
  driver?: DriverName;
}

/** Why a step cannot run: the executor lacks it, or it needs a device model's fault API. */
export interface Unsupported {
  needs: "executor" | "device-model";
  reason: string;
}

export interface CompiledStep {
  index: number;
  /** the step's line in the scenario file */
  line: number;
  kind: StepKind;
  commands: string[];
  /** the watchdog: the commands must finish within this */
  timeoutMs: number;
  unsupported?: Unsupported;
  /** a device fault the suite arms through the device's control channel (no executor commands) */
  fault?: FaultStep;
  /** a ULP workload's step (guest/ulp/hil-ulp.sh; no executor commands) */
  ulp?: UlpAction;
  /** the WRs the step posts (to find which event a fault on a later WR is) */
  posts?: StepPosts;
  /**
   * a sleep until the device is idle, at most ms: where the suite can ask the device, it waits
   * itself instead of sending the step's commands (the whole sleep, for where it cannot)
   */
  untilDeviceIdle?: { ms: number };
  /** what the step's command may return (expect.rc); absent: 0, unless rules judge it (posts, drains) */
  expect?: ExpectedRc;
}

export interface StepPosts {
  /** the verbs object name of the QP (NAMES.qp or NAMES.peer) */
  qp: string;
  queue: "sq" | "rq";
  wrId: number;
  count: number;
  /** the send WRs' signaling as posted (receives: all) */
  signal: "all" | "none" | "last" | number;
}

export interface CompiledScenario {
  scenario: Scenario;
  /** where the scenario's connection listens (the rdma_cm port; a ULP target's port) */
  endpoint: { addr: string; port: number };
  setup: string[];
  setupTimeoutMs: number;
  steps: CompiledStep[];
  /** the CQs of the pair, for settling and teardown */
  cqs: string[];
}

const SETUP_TIMEOUT_MS = 30_000;
/** the setup's watchdog grows by this for each fanout pair (two CQs, a listener, a connection) */
const SETUP_MS_PER_FANOUT_PAIR = 3_000;
/** how long past its own wait a poll or sleep step may take before the watchdog calls it stuck */
const WAIT_MARGIN_MS = 5_000;
const FIRST_WR_ID = {
  qp: { sq: 1000, rq: 2000 },
  peer: { sq: 3000, rq: 4000 },
  fanout: { sq: 5000, rq: 6000 },
} as const;

export function stepKind(step: Step): StepKind {
  for (const k of [
    "post_send",
    "post_recv",
    "modify",
    "drain",
    "poll",
    "query",
    "destroy",
    "sleep",
    "fault",
    "ulp",
  ] as const)
    if (k in step) return k;
  throw new Error("a step of no known kind");
}

function cqNames(s: Scenario): { send: string; recv: string } {
  return s.qp.cq === "shared"
    ? { send: NAMES.sharedCq, recv: NAMES.sharedCq }
    : { send: NAMES.sendCq, recv: NAMES.recvCq };
}

/** The peer's CQs: its own pcq, or the QP's (peer.cq: qp). */
function peerCqNames(s: Scenario): { send: string; recv: string } {
  return s.peer.cq === "qp" ? cqNames(s) : { send: NAMES.peerCq, recv: NAMES.peerCq };
}

function setupCommands(s: Scenario, opts: CompileOptions): string[] {
  const cq = cqNames(s);
  const pollOf = (poll: PollContext) => (opts.executor === "user" ? undefined : poll);
  const lines = [
    commandLine("device", { addr: opts.addr }),
    commandLine("pd", { name: NAMES.pd, rkey: "global" }),
  ];
  const peerCq = peerCqNames(s);
  const peerless = s.qp.connect !== "established";
  for (const name of new Set([cq.send, cq.recv]))
    lines.push(commandLine("cq", { name, depth: s.qp.cq_depth, poll: pollOf(s.qp.poll) }));
  if (s.peer.cq === "own" && !peerless)
    lines.push(
      commandLine("cq", {
        name: NAMES.peerCq,
        depth: Math.max(256, s.peer.sq + s.peer.rq),
        poll: pollOf(s.peer.poll),
      }),
    );
  if (!peerless)
    lines.push(
      commandLine("listen", {
        name: NAMES.listener,
        addr: opts.addr,
        port: opts.port,
        qp: NAMES.peer,
        pd: NAMES.pd,
        scq: peerCq.send,
        rcq: peerCq.recv,
        sq: s.peer.sq,
        rq: s.peer.rq,
        buf: s.qp.buf,
      }),
    );
  lines.push(
    commandLine("connect", {
      name: NAMES.qp,
      addr: opts.addr,
      port: opts.port,
      pd: NAMES.pd,
      scq: cq.send,
      rcq: cq.recv,
      sq: s.qp.sq,
      rq: s.qp.rq,
      buf: s.qp.buf,
      inline: s.qp.inline || undefined,
      sig: s.qp.sig_all ? "all" : "req",
      stop: s.qp.connect === "never" ? "route" : s.qp.connect === "refused" ? "refused" : undefined,
    }),
  );
  return [...lines, ...fanoutSetup(s, opts)];
}

function fanoutSetup(s: Scenario, opts: CompileOptions): string[] {
  const f = s.fanout;
  if (!f) return [];
  const poll = opts.executor === "user" ? undefined : f.poll;
  return Array.from({ length: f.pairs }, (_, i) => {
    const n = fanoutNames(i);
    const port = fanoutPort(opts.port, i);
    const queues = { sq: f.sq, rq: f.rq, buf: s.qp.buf };
    return [
      commandLine("cq", { name: n.cq, depth: f.sq + f.rq, poll }),
      commandLine("cq", { name: n.peerCq, depth: f.sq + f.rq, poll }),
      commandLine("listen", {
        name: n.listener,
        addr: opts.addr,
        port,
        qp: n.peer,
        pd: NAMES.pd,
        scq: n.peerCq,
        rcq: n.peerCq,
        ...queues,
      }),
      commandLine("connect", {
        name: n.qp,
        addr: opts.addr,
        port,
        pd: NAMES.pd,
        scq: n.cq,
        rcq: n.cq,
        ...queues,
        sig: "req",
      }),
    ];
  }).flat();
}

/**
 * The QPs a post step posts on: the pair's one, or one per fanout pair (sends from each pair's
 * connecting QP, receives on the QP that accepted it, where those sends arrive).
 */
function postTargets(s: Scenario, on: PostSide, queue: "sq" | "rq"): string[] {
  if (on !== "fanout") return [NAMES[on]];
  return Array.from({ length: s.fanout?.pairs ?? 0 }, (_, i) =>
    queue === "sq" ? fanoutNames(i).qp : fanoutNames(i).peer,
  );
}

/** Hands out wr_ids: each queue of each side counts up from its own base, after any explicit one. */
class WrIds {
  private readonly next = new Map<string, number>();

  take(side: PostSide, queue: "sq" | "rq", explicit: number | undefined, count: number): number {
    const key = `${side}/${queue}`;
    const first = explicit ?? this.next.get(key) ?? FIRST_WR_ID[side][queue];
    this.next.set(key, first + count);
    return first;
  }
}

function compileStep(
  s: Scenario,
  step: Step,
  ids: WrIds,
  driver: DriverName,
): {
  commands: string[];
  waitMs?: number;
  unsupported?: Unsupported;
  fault?: FaultStep;
  posts?: StepPosts;
  ulp?: UlpAction;
  untilDeviceIdle?: boolean;
} {
  const cq = cqNames(s);
  if ("post_send" in step) {
    const p = { ...step.post_send, count: countOn(step.post_send.count, driver) };
    const wrId = ids.take(p.on, "sq", p.wr_id, p.count);
    return {
      ...(p.on === "fanout"
        ? {}
        : {
            posts: {
              qp: NAMES[p.on],
              queue: "sq" as const,
              wrId,
              count: p.count,
              signal: s.qp.sig_all && p.on === "qp" ? "all" : p.signal,
            },
          }),
      commands: postTargets(s, p.on, "sq").map((qp) =>
        commandLine("post_send", {
          qp,
          wr_id: wrId,
          op: p.op,
          count: p.count,
          batch: p.batch,
          len: p.len,
          signal: p.signal,
          inline: p.inline ? 1 : undefined,
          bad: p.bad,
        }),
      ),
    };
  }
  if ("post_recv" in step) {
    const p = { ...step.post_recv, count: countOn(step.post_recv.count, driver) };
    const wrId = ids.take(p.on, "rq", p.wr_id, p.count);
    return {
      ...(p.on === "fanout"
        ? {}
        : { posts: { qp: NAMES[p.on], queue: "rq" as const, wrId, count: p.count, signal: "all" as const } }),
      commands: postTargets(s, p.on, "rq").map((qp) =>
        commandLine("post_recv", { qp, wr_id: wrId, count: p.count, batch: p.batch, len: p.len, bad: p.bad }),
      ),
    };
  }
  if ("modify" in step)
    return { commands: [commandLine("modify", { qp: NAMES[step.modify.on], state: step.modify.state })] };
  if ("drain" in step)
    return { commands: [commandLine("drain", { qp: NAMES[step.drain.on], which: step.drain.which })] };
  if ("query" in step) return { commands: [commandLine("query", { qp: NAMES[step.query.on] })] };
  if ("destroy" in step) return { commands: [commandLine("destroy", { qp: NAMES[step.destroy.on] })] };
  if ("poll" in step) {
    const name = step.poll.cq === "peer" ? peerCqNames(s).recv : cq[step.poll.cq];
    return {
      commands: [
        commandLine("poll", { cq: name, min: countOn(step.poll.min, driver), timeout: step.poll.wait_ms }),
      ],
      waitMs: step.poll.wait_ms,
    };
  }
  if ("sleep" in step) {
    const ms = sleepMsOf(step.sleep);
    return {
      commands: [commandLine("sleep", { ms })],
      waitMs: ms,
      ...(typeof step.sleep === "object" ? { untilDeviceIdle: true } : {}),
    };
  }
  if ("ulp" in step) return { commands: [], ulp: step.ulp };
  return { commands: [], fault: step.fault };
}

export function compileScenario(s: Scenario, opts: CompileOptions): CompiledScenario {
  const ids = new WrIds();
  const steps = s.steps.map((step, index): CompiledStep => {
    const c = compileStep(s, step, ids, opts.driver ?? (s.drivers[0] as DriverName));
    // a step's own timeout_ms is taken as written; the scenario's default leaves room for waits
    const timeoutMs =
      step.timeout_ms ??
      (c.waitMs === undefined ? s.timeout_ms : Math.max(s.timeout_ms, c.waitMs + WAIT_MARGIN_MS));
    return {
      index,
      line: s.stepLines[index] ?? 0,
      kind: stepKind(step),
      commands: c.commands,
      timeoutMs,
      ...(c.unsupported ? { unsupported: c.unsupported } : {}),
      ...(c.fault ? { fault: c.fault } : {}),
      ...(c.ulp !== undefined ? { ulp: c.ulp } : {}),
      ...(c.posts ? { posts: c.posts } : {}),
      ...(c.untilDeviceIdle ? { untilDeviceIdle: { ms: c.waitMs ?? 0 } } : {}),
      ...("expect" in step && step.expect ? { expect: step.expect.rc } : {}),
    };
  });
  const cq = cqNames(s);
  return {
    scenario: s,
    endpoint: { addr: opts.addr, port: opts.port },
    setup: setupCommands(s, opts),
    setupTimeoutMs: SETUP_TIMEOUT_MS + (s.fanout?.pairs ?? 0) * SETUP_MS_PER_FANOUT_PAIR,
    steps,
    cqs: [
      ...new Set([
        cq.send,
        cq.recv,
        ...(s.qp.connect === "established" ? [peerCqNames(s).send, peerCqNames(s).recv] : []),
      ]),
      ...Array.from({ length: s.fanout?.pairs ?? 0 }, (_, i) => [
        fanoutNames(i).cq,
        fanoutNames(i).peerCq,
      ]).flat(),
    ],
  };
}

/**
 * The scenario as run where no device fault can be armed (siw, a device of your own, a real one):
 * its optional fault steps, the controls that make its premise certain on the device model, do
 * nothing; the premise is then checked as it happened.
 */
export function withoutOptionalFaults(c: CompiledScenario): CompiledScenario {
  if (!c.steps.some((s) => s.fault?.optional)) return c;
  return {
    ...c,
    steps: c.steps.map((s) => {
      if (!s.fault?.optional) return s;
      const { fault: _left, ...rest } = s;
      return rest;
    }),
  };
}
