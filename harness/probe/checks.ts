import { existsSync, statSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { CommandResult } from "../../qemu/launch/types.ts";
import { parseConsole } from "../console/parse.ts";
import { slowBootNote, withoutSlowBootWaits } from "../console/slow-boot.ts";
import { eventsOf, type HwTraceEvent, readHwTrace } from "../protocol/hw-trace.ts";
import type { CheckResult } from "../verdict.ts";
import {
  compareDevinfo,
  dmesgProblems,
  expectedDevinfo,
  LIFECYCLE_TOOL,
  matchLifecycle,
  type ProfileFacts,
  parseIbvDevinfo,
  parseLifecycle,
  parseRdmaLink,
} from "./expectations.ts";

/** What the smoke checks need of a running guest. */
export interface GuestSession {
  exec(command: string, opts?: { timeoutMs?: number }): Promise<CommandResult>;
  consoleLog(): Promise<string> | string;
}

/** The emulated erdma device: its profile says which attributes the guest must see. */
export interface EmulatedSmokeDevice {
  /** the profile's name and the facts the expectations need */
  profileName: string;
  profile: ProfileFacts;
  /** the guest NIC's MAC, which the device reports */
  mac: string;
  /** the hardware trace the device server writes, if it keeps one */
  traceFile?: string;
}

/** An external vfio-user device server (--device-socket): no profile, no hardware trace. */
export interface ExternalSmokeDevice {
  /** its socket */
  external: string;
  /** the guest NIC's MAC, which the device must report */
  mac: string;
}

export interface SmokeContext {
  release: string;
  /** the erdma device, when one is attached */
  device?: EmulatedSmokeDevice | ExternalSmokeDevice;
}

/** the erdma function's PCI IDs (erdma_hw.h) */
const ERDMA_PCI_ID = "1ded:107f";

interface SmokeCheck {
  id: string;
  title: string;
  run(guest: GuestSession, ctx: SmokeContext): Promise<Omit<CheckResult, "id" | "title">>;
}

function outputLines(r: CommandResult): string[] {
  return `${r.stdout}${r.stderr}`
    .split("\n")
    .filter((l) => l.trim().length > 0)
    .slice(-10);
}

/**
 * The checks `hil run` makes until the drain suite exists: the guest runs the kernel built here,
 * the erdma driver loads, rdma-core's tools run, the emulated device probes and binds to the NIC
 * with the attributes its profile implies, verbs objects are created and destroyed with the
 * matching commands in the hardware trace, and the console shows no WARN/BUG/oops. Without a
 * device (--no-device) its two checks are SKIPs. An external device (--device-socket) must probe
 * and bind the same way, but has no profile to compare its attributes with and no trace.
 */
export const SMOKE_CHECKS: readonly SmokeCheck[] = [
  {
    id: "kernel-release",
    title: "the guest runs the kernel built for this run",
    async run(guest, ctx) {
      const r = await guest.exec("uname -r");
      const release = r.stdout.trim();
      if (r.exitCode === 0 && release === ctx.release)
        return { verdict: "PASS", reason: `uname -r = ${release}` };
      return {
        verdict: "FAIL",
        reason: `expected ${ctx.release}, guest says ${release || "nothing"}`,
        evidence: outputLines(r),
      };
    },
  },
  {
    id: "erdma-module",
    title: "the upstream erdma driver loads",
    async run(guest) {
      const r = await guest.exec(
        "modprobe erdma && test -d /sys/module/erdma && cat /sys/module/erdma/refcnt",
      );
      if (r.exitCode === 0)
        return { verdict: "PASS", reason: "/sys/module/erdma present after modprobe erdma" };
      return {
        verdict: "FAIL",
        reason: `modprobe erdma failed (exit ${r.exitCode})`,
        evidence: outputLines(r),
      };
    },
  },
  {
    id: "rdma-core",
    title: "rdma-core's verbs tools run in the guest",
    async run(guest) {
      const r = await guest.exec("ibv_devinfo -l && rdma link show");
      if (r.exitCode === 0)
        return { verdict: "PASS", reason: `ibv_devinfo -l: ${r.stdout.split("\n")[0]?.trim()}` };
      return {
        verdict: "FAIL",
        reason: `ibv_devinfo -l / rdma link failed (exit ${r.exitCode})`,
        evidence: outputLines(r),
      };
    },
  },
  {
    id: "erdma-probe",
    title: "the erdma device probes, binds to the guest NIC and lists the attributes the model reports",
    async run(guest, ctx) {
      const dev = ctx.device;
      if (!dev) return { verdict: "SKIP", reason: "no emulated erdma device attached (--no-device)" };
      const problems: string[] = [];
      const evidence: string[] = [];
      const dmesg = await guest.exec("dmesg");
      for (const p of dmesgProblems(dmesg.stdout)) problems.push(`dmesg: ${p}`);
      const linkOut = await guest.exec("rdma link show");
      const links = parseRdmaLink(linkOut.stdout).filter((l) => l.device.startsWith("erdma"));
      evidence.push(...outputLines(linkOut).map((l) => `rdma link: ${l}`));
      const link = links[0];
      const external = "external" in dev ? dev.external : undefined;
      if (!link) {
        problems.push("rdma link shows no erdma device");
        if (external) {
          // what an external device failed at: presenting the function, or the driver binding it
          const pci = await guest.exec(
            'cd /sys/bus/pci/devices && for d in *; do echo "$d $(cat $d/vendor):$(cat $d/device)"; done',
          );
          const functions = pci.stdout.split("\n").filter((l) => l.trim());
          const ids = functions.map((l) => l.split(" ")[1]?.replace(/0x/g, "") ?? "");
          if (!ids.includes(ERDMA_PCI_ID))
            problems.push(
              `the external device at ${external} presents no erdma function (PCI ${ERDMA_PCI_ID})`,
            );
          evidence.push(...functions.map((l) => `pci: ${l}`));
        }
      } else {
        if (link.state !== "ACTIVE") problems.push(`${link.device} state ${link.state}, want ACTIVE`);
        if (!link.netdev)
          problems.push(
            `${link.device} is bound to no netdev${external ? ` (does the external device report the guest NIC's MAC ${dev.mac}?)` : ""}`,
          );
        else {
          const addr = await guest.exec(`cat /sys/class/net/${link.netdev}/address`);
          const mac = addr.stdout.trim().toLowerCase();
          if (mac !== dev.mac.toLowerCase())
            problems.push(`${link.device} is bound to ${link.netdev} (${mac}), not the NIC with ${dev.mac}`);
        }
      }
      const info = await guest.exec("ibv_devinfo -v");
      const devices = parseIbvDevinfo(info.stdout).filter((d) => d.hcaId.startsWith("erdma"));
      const hca = devices[0];
      if (info.exitCode !== 0 || !hca) {
        problems.push(`ibv_devinfo -v lists no erdma device (exit ${info.exitCode})`);
        evidence.push(...outputLines(info).map((l) => `ibv_devinfo: ${l}`));
      } else if (!("external" in dev)) {
        const want = expectedDevinfo(dev.profile, { mac: dev.mac, kernelRelease: ctx.release });
        for (const p of compareDevinfo(hca, want)) problems.push(`ibv_devinfo ${hca.hcaId}: ${p}`);
      }
      if (problems.length > 0)
        return { verdict: "FAIL", reason: problems[0] ?? "", evidence: [...problems, ...evidence] };
      const bound = `${link?.device} bound to ${link?.netdev} (${dev.mac})`;
      if ("external" in dev)
        return {
          verdict: "PASS",
          reason: `${bound}; ibv_devinfo lists ${hca?.hcaId}; external device at ${dev.external}: attributes not checked`,
        };
      return { verdict: "PASS", reason: `${bound}; ibv_devinfo matches profile ${dev.profileName}` };
    },
  },
  {
    id: "verbs-lifecycle",
    title: "PDs, MRs, CQs and a QP are created and destroyed from userspace; the trace shows the commands",
    async run(guest, ctx) {
      const dev = ctx.device;
      if (!dev) return { verdict: "SKIP", reason: "no emulated erdma device attached (--no-device)" };
      const traceFile = "external" in dev ? undefined : dev.traceFile;
      const from = traceFile && existsSync(traceFile) ? statSync(traceFile).size : 0;
      const r = await guest.exec(LIFECYCLE_TOOL, { timeoutMs: 60_000 });
      const steps = parseLifecycle(r.stdout);
      const failed = steps.find((s) => !s.ok);
      if (r.exitCode !== 0 || failed || steps.length === 0) {
        return {
          verdict: "FAIL",
          reason: failed
            ? `${LIFECYCLE_TOOL} failed at ${failed.step}: ${failed.reason}`
            : `${LIFECYCLE_TOOL} exited with ${r.exitCode}`,
          evidence: outputLines(r),
        };
      }
      if ("external" in dev)
        return {
          verdict: "PASS",
          reason: `${steps.length} steps passed (external device at ${dev.external}: no hardware trace to compare)`,
        };
      if (!traceFile)
        return {
          verdict: "PASS",
          reason: `${steps.length} steps passed (no hardware trace kept to compare)`,
        };
      const events = await traceAfter(traceFile, from);
      const match = matchLifecycle(steps, events);
      if (match.problems.length > 0) {
        return {
          verdict: "FAIL",
          reason: `the hardware trace disagrees: ${match.problems[0]}`,
          evidence: [...match.problems, ...match.commands.map((c) => `trace: ${c}`)],
        };
      }
      return {
        verdict: "PASS",
        reason: `${steps.length} steps passed; the trace shows ${match.commands.length} matching commands`,
        evidence: match.commands.map((c) => `trace: ${c}`),
      };
    },
  },
  {
    id: "console-clean",
    title: "no WARN, BUG, oops, panic or hung task on the console",
    async run(guest) {
      const { events, slowBootWaits } = withoutSlowBootWaits(parseConsole(await guest.consoleLog()));
      if (events.length === 0)
        return { verdict: "PASS", reason: `no kernel warnings on the console${slowBootNote(slowBootWaits)}` };
      return {
        verdict: "FAIL",
        reason: `${events.length} kernel warning(s), first: ${events[0]?.text}`,
        evidence: events.flatMap((e) => [`console:${e.line}: ${e.text}`, ...e.trace.slice(0, 12)]),
      };
    },
  },
];

/**
 * The trace from byte `from` on, once the device server has written the round's last command
 * (it writes asynchronously; give it a moment).
 */
async function traceAfter(file: string, from: number): Promise<HwTraceEvent[]> {
  let events: HwTraceEvent[] = [];
  for (let i = 0; i < 30; i++) {
    events = readHwTrace(file, { from, lenient: true });
    if (eventsOf(events, "cmd").filter((e) => e.name === "DEREG_MR").length >= 2) break;
    await sleep(100);
  }
  return events;
}

export async function runSmokeChecks(guest: GuestSession, ctx: SmokeContext): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of SMOKE_CHECKS) {
    try {
      results.push({ id: check.id, title: check.title, ...(await check.run(guest, ctx)) });
    } catch (err) {
      results.push({
        id: check.id,
        title: check.title,
        verdict: "ERROR",
        reason: `the check could not run: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
  }
  return results;
}
