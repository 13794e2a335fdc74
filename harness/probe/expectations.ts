/**
 * What a guest with the emulated erdma device should show, and how to read it: `rdma link`,
 * `ibv_devinfo -v`, dmesg, the guest tool hil-verbs-lifecycle's report, and the hardware trace
 * (its events as protocol/hw-trace.ts reads them).
 * The expectations follow from the device profile through the driver's own arithmetic
 * (erdma_main.c erdma_dev_attrs_init, erdma_verbs.c erdma_query_device); every check returns the
 * problems it found (empty: as expected), so a verdict can quote them.
 */
import { parseConsole } from "../console/parse.ts";
import { withoutSlowBootWaits } from "../console/slow-boot.ts";
import { type ErdmaTraceEventOf, eventsOf, type HwTraceEvent } from "../protocol/hw-trace.ts";

/** The subset of a profile the expectations need (ErdmaProfile satisfies it). */
export interface ProfileFacts {
  protocol: "iwarp" | "rocev2";
  fwVersion: number;
  msixVectors: number;
  caps: {
    maxCqeLog2: number;
    maxRecvWrLog2: number;
    maxMrSizeLog2: number;
    maxMwLog2: number;
    qblock: number;
    atomic: boolean;
  };
}

// ---------------------------------------------------------------------------- rdma link

export interface RdmaLink {
  device: string;
  port: number;
  state: string;
  physicalState: string;
  netdev: string | undefined;
}

/** `rdma link` lines: "link erdma_0/1 state ACTIVE physical_state LINK_UP netdev eth0". */
export function parseRdmaLink(text: string): RdmaLink[] {
  const links: RdmaLink[] = [];
  for (const line of text.split("\n")) {
    const m = /^link (\S+)\/(\d+)\s+state (\S+)\s+physical_state (\S+)(?:\s+netdev (\S+))?/.exec(line.trim());
    if (m) {
      links.push({
        device: m[1] ?? "",
        port: Number(m[2]),
        state: m[3] ?? "",
        physicalState: m[4] ?? "",
        netdev: m[5],
      });
    }
  }
  return links;
}

// ---------------------------------------------------------------------------- ibv_devinfo -v

export interface DevinfoDevice {
  hcaId: string;
  /** device attributes by name, values as printed */
  attrs: Record<string, string>;
  /** per port (index 0 is port 1) */
  ports: Record<string, string>[];
}

/** `ibv_devinfo [-v]` output: one entry per hca_id. Flag lists under an attribute are ignored. */
export function parseIbvDevinfo(text: string): DevinfoDevice[] {
  const devices: DevinfoDevice[] = [];
  let dev: DevinfoDevice | undefined;
  let port: Record<string, string> | undefined;
  for (const raw of text.split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_ ]*?):\s*(.*?)\s*$/.exec(raw);
    if (!m) continue;
    const key = m[1] as string;
    const value = m[2] as string;
    if (key === "hca_id") {
      dev = { hcaId: value, attrs: {}, ports: [] };
      port = undefined;
      devices.push(dev);
    } else if (dev && key === "port") {
      port = {};
      dev.ports.push(port);
    } else if (dev) {
      (port ?? dev.attrs)[key] = value;
    }
  }
  return devices;
}

/** The node GUID the driver derives from the NIC's MAC (addrconf_addr_eui48), as ibv_devinfo prints it. */
export function nodeGuidOf(mac: string): string {
  const b = mac.split(":").map((x) => Number.parseInt(x, 16));
  const eui = [(b[0] ?? 0) ^ 2, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]].map((x) =>
    (x ?? 0).toString(16).padStart(2, "0"),
  );
  return [0, 2, 4, 6].map((i) => `${eui[i]}${eui[i + 1]}`).join(":");
}

/** "6.12.95" -> [6, 12] */
function majorMinor(release: string): [number, number] {
  const m = /^(\d+)\.(\d+)/.exec(release);
  return [Number(m?.[1] ?? 0), Number(m?.[2] ?? 0)];
}

/**
 * The device attributes `ibv_devinfo -v` should print for a profile: what QUERY_DEVICE and
 * QUERY_FW_INFO report, through erdma_dev_attrs_init and erdma_query_device.
 */
export function expectedDevinfo(
  profile: ProfileFacts,
  opts: { mac: string; kernelRelease: string },
): Record<string, string> {
  const c = profile.caps;
  const [major, minor] = majorMinor(opts.kernelRelease);
  // Linux 6.1 has no ERDMA_DEV_CAP_FLAGS_ATOMIC; 6.12 and 7.2 report IB_ATOMIC_GLOB for it.
  const atomicKnown = major > 6 || (major === 6 && minor > 1);
  const fw = profile.fwVersion >>> 0;
  return {
    transport: profile.protocol === "iwarp" ? "iWARP (1)" : "InfiniBand (0)",
    // rdma-core's erdma provider prints (fw >> 32).(fw >> 16).(fw & 0xffff) of a 32-bit value
    fw_ver: `0.${fw >>> 16}.${fw & 0xffff}`,
    node_guid: nodeGuidOf(opts.mac),
    vendor_id: "0x1ded",
    vendor_part_id: String(0x107f),
    hw_ver: "0x1",
    phys_port_cnt: "1",
    max_mr_size: `0x${(2n ** BigInt(c.maxMrSizeLog2)).toString(16)}`,
    max_qp: String(1024 * c.qblock - 1),
    max_qp_wr: String(Math.min(8192, 2 ** c.maxRecvWrLog2)),
    max_cq: String(2048 * c.qblock - 1),
    max_cqe: String(2 ** c.maxCqeLog2),
    max_mr: String(2048 * c.qblock),
    max_pd: String(128 * 1024),
    max_mw: String(2 ** c.maxMwLog2),
    max_qp_rd_atom: "128",
    max_qp_init_rd_atom: "128",
    atomic_cap: c.atomic && atomicKnown ? "ATOMIC_GLOB (2)" : "ATOMIC_NONE (0)",
  };
}

/** Differences between what ibv_devinfo printed and what the profile implies ("name: got x, want y"). */
export function compareDevinfo(dev: DevinfoDevice, expected: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const [k, want] of Object.entries(expected)) {
    const got = dev.attrs[k];
    if (got !== want) problems.push(`${k}: got ${got ?? "(absent)"}, want ${want}`);
  }
  const port = dev.ports[0];
  if (!port) problems.push("no port 1");
  else {
    if (port.state !== "PORT_ACTIVE (4)")
      problems.push(`port 1 state: got ${port.state}, want PORT_ACTIVE (4)`);
    if (port.link_layer !== "Ethernet")
      problems.push(`port 1 link_layer: got ${port.link_layer}, want Ethernet`);
  }
  const vectors = Number(dev.attrs.num_comp_vectors);
  if (!(vectors >= 1)) problems.push(`num_comp_vectors: got ${dev.attrs.num_comp_vectors}, want >= 1`);
  return problems;
}

// ---------------------------------------------------------------------------- dmesg

/**
 * Lines that name erdma without being its complaints: the kernel's command line (hil.modules=...,erdma
 * beside panic=-1), and the module loader's notices on an unsigned or out-of-tree module, which a
 * kernel that signs its modules prints for an erdma built out of tree (debian-image:6.12): Linux
 * 6.12 kernel/module/main.c module_augment_kernel_taints, "loading out-of-tree module taints
 * kernel." and "module verification failed: signature and/or required key missing - tainting kernel".
 */
const NOT_ERDMA_COMPLAINTS =
  /[Cc]ommand line: |: loading out-of-tree module taints kernel\.|: module verification failed: signature and\/or required key missing/;

/** erdma's own complaints and any WARN/BUG/oops in dmesg output. */
export function dmesgProblems(dmesg: string): string[] {
  const problems = dmesg
    .split("\n")
    .filter((l) => /erdma/i.test(l) && /fail|error|timed? ?out|unable|cannot|invalid|-\d{1,3}\b/i.test(l))
    .filter((l) => !NOT_ERDMA_COMPLAINTS.test(l))
    .map((l) => l.trim());
  for (const e of withoutSlowBootWaits(parseConsole(dmesg)).events) problems.push(`${e.kind}: ${e.text}`);
  return problems;
}

// ---------------------------------------------------------------------------- the lifecycle tool

/** The guest tool (guest/tools/verbs-lifecycle.c) and how to run it. */
export const LIFECYCLE_TOOL = "hil-verbs-lifecycle";

export interface LifecycleStep {
  ok: boolean;
  step: string;
  fields: Record<string, string>;
  /** the reason, for a FAIL line */
  reason?: string;
}

/** "ok <step> k=v ..." and "FAIL <step>: <reason>" lines. */
export function parseLifecycle(stdout: string): LifecycleStep[] {
  const steps: LifecycleStep[] = [];
  for (const line of stdout.split("\n")) {
    const fail = /^FAIL (\S+): (.*)$/.exec(line);
    if (fail) {
      steps.push({ ok: false, step: fail[1] ?? "", fields: {}, reason: fail[2] ?? "" });
      continue;
    }
    const ok = /^ok (\S+)(.*)$/.exec(line);
    if (!ok) continue;
    const fields: Record<string, string> = {};
    for (const kv of (ok[2] ?? "").trim().split(/\s+/)) {
      const i = kv.indexOf("=");
      if (i > 0) fields[kv.slice(0, i)] = kv.slice(i + 1);
    }
    steps.push({ ok: true, step: ok[1] ?? "", fields });
  }
  return steps;
}

type CmdLine = ErdmaTraceEventOf<"cmd">;

/** The object commands of one lifecycle round, in order, as the trace should show them. */
const LIFECYCLE_COMMANDS = new Set([
  "REG_MR",
  "DEREG_MR",
  "CREATE_CQ",
  "DESTROY_CQ",
  "CREATE_QP",
  "MODIFY_QP",
  "DESTROY_QP",
]);

export interface LifecycleMatch {
  problems: string[];
  /** the commands found, e.g. "REG_MR stag=0x100 rights=local_read,local_write" */
  commands: string[];
}

function hexKey(v: string | undefined): string {
  return v === undefined ? "?" : `0x${Number.parseInt(v, 16).toString(16)}`;
}

/**
 * Matches one round of the tool's report against the trace's commands (and the CQ doorbell that
 * armed the send CQ). `events` should start where the round started.
 */
export function matchLifecycle(
  steps: readonly LifecycleStep[],
  events: readonly HwTraceEvent[],
): LifecycleMatch {
  const problems: string[] = [];
  const failedSteps = steps.filter((s) => !s.ok);
  for (const s of failedSteps) problems.push(`the tool failed at ${s.step}: ${s.reason}`);
  const cmds = eventsOf(events, "cmd");
  const relevant = cmds.filter((c) => LIFECYCLE_COMMANDS.has(c.name));
  const commands = relevant.map(describeCmd);
  for (const c of cmds) {
    if (c.status !== 0) problems.push(`${c.name} failed in the device: ${c.statusName} (${c.reason ?? ""})`);
  }
  const find = (step: string, name?: string) =>
    steps.find((s) => s.ok && s.step === step && (name === undefined || s.fields.name === name));
  const mrA = find("reg_mr", "a");
  const mrB = find("reg_mr", "b");
  const qp = find("create_qp");
  if (!mrA || !mrB || !qp) {
    problems.push("the tool's report lacks reg_mr a/b or create_qp");
    return { problems, commands };
  }
  const qpn = Number(qp.fields.qpn);
  const stagA = hexKey(mrA.fields.lkey);
  const stagB = hexKey(mrB.fields.lkey);
  const cqCreates = relevant.filter((c) => c.name === "CREATE_CQ");
  const [sendCqn, recvCqn] = cqCreates.map((c) => Number(c.detail?.cqn));
  const want: Array<{ name: string; check: (c: CmdLine) => string | undefined }> = [
    { name: "REG_MR", check: mrCheck(stagA, ["local_read", "local_write", "remote_read", "remote_write"]) },
    { name: "REG_MR", check: mrCheck(stagB, ["local_read", "local_write"]) },
    { name: "CREATE_CQ", check: (c) => (Number(c.detail?.depth) >= 64 ? undefined : "depth < 64") },
    { name: "CREATE_CQ", check: (c) => (Number(c.detail?.depth) >= 128 ? undefined : "depth < 128") },
    {
      name: "CREATE_QP",
      check: (c) =>
        Number(c.detail?.qpn) !== qpn
          ? `qpn ${c.detail?.qpn}, the tool says ${qpn}`
          : c.detail?.sqCqn !== sendCqn || c.detail?.rqCqn !== recvCqn
            ? `CQs ${c.detail?.sqCqn}/${c.detail?.rqCqn}, created ${sendCqn}/${recvCqn}`
            : undefined,
    },
    {
      name: "MODIFY_QP",
      check: (c) =>
        Number(c.detail?.qpn) === qpn && c.detail?.to === "ERROR" ? undefined : `not qpn ${qpn} to ERROR`,
    },
    { name: "DESTROY_QP", check: (c) => (Number(c.detail?.qpn) === qpn ? undefined : `not qpn ${qpn}`) },
    { name: "DESTROY_CQ", check: (c) => (c.detail?.cqn === recvCqn ? undefined : `not cqn ${recvCqn}`) },
    { name: "DESTROY_CQ", check: (c) => (c.detail?.cqn === sendCqn ? undefined : `not cqn ${sendCqn}`) },
    { name: "DEREG_MR", check: (c) => (c.detail?.stag === stagB ? undefined : `not stag ${stagB}`) },
    { name: "DEREG_MR", check: (c) => (c.detail?.stag === stagA ? undefined : `not stag ${stagA}`) },
  ];
  if (relevant.length !== want.length) {
    problems.push(
      `the trace has ${relevant.length} object commands, want ${want.length}: ${relevant.map((c) => c.name).join(" ")}`,
    );
  }
  want.forEach((w, i) => {
    const c = relevant[i];
    if (!c) return;
    if (c.name !== w.name) problems.push(`command ${i + 1}: ${c.name}, want ${w.name}`);
    else {
      const p = w.check(c);
      if (p) problems.push(`command ${i + 1} ${c.name}: ${p}`);
    }
  });
  // ibv_req_notify_cq on the send CQ: an armed CQ doorbell for it between its creation and the QP's
  const armed = eventsOf(events, "doorbell").some(
    (e) => e.db === "cq" && e.id === sendCqn && (BigInt(e.value) & (1n << 31n)) !== 0n,
  );
  if (!armed) problems.push(`no CQ doorbell arming CQ ${sendCqn} (ibv_req_notify_cq)`);
  return { problems, commands };
}

function mrCheck(stag: string, rights: string[]) {
  return (c: CmdLine) => {
    if (c.detail?.stag !== stag) return `stag ${String(c.detail?.stag)}, the tool says ${stag}`;
    const got = (c.detail?.rights as string[] | undefined) ?? [];
    return got.join(",") === rights.join(",")
      ? undefined
      : `rights ${got.join(",")}, want ${rights.join(",")}`;
  };
}

function describeCmd(c: CmdLine): string {
  const d = c.detail ?? {};
  const parts = [c.name];
  for (const k of ["qpn", "cqn", "stag", "to", "sqCqn", "rqCqn", "depth"]) {
    if (d[k] !== undefined) parts.push(`${k}=${String(d[k])}`);
  }
  if (Array.isArray(d.rights)) parts.push(`rights=${(d.rights as string[]).join(",")}`);
  if (c.status !== 0) parts.push(`status=${c.statusName}`);
  return parts.join(" ");
}
