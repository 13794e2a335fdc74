/**
 * The guest-side runner of a LAVA job: a POSIX shell script and one pair of batch scripts per
 * scenario (the same batches the suite sends over SSH, kverbs-driver's groupsScript), installed
 * under /hil-lava in the job's ramdisk. It loads hil_kverbs, runs the scenarios in the plan's
 * order and prints everything `hil judge` needs on the console, each line behind a tag so that
 * other console output is ignored:
 *
 *   HIL-LAVA plan <digest> <count>        HIL-LAVA begin <name>
 *   HIL-LAVA a <line> / HIL-LAVA b <line> the two batches' output (statuses and trace)
 *   HIL-LAVA rc <a-rc> <b-rc>             HIL-LAVA stack <line>, HIL-LAVA state <state>
 *   HIL-LAVA dmesg <line>                 the kernel log the scenario made
 *   HIL-LAVA end <name> <md5 of a> <md5 of b>
 *   HIL-LAVA notrun <name> <why>          HIL-LAVA done
 *
 * The kernel's console level is lowered to 1 so that its messages do not cut the tagged lines;
 * the scenario's kernel log is read with dmesg instead. LAVA's lava-test-case records a result
 * per scenario when it exists (pass: the scenario ran to its end; the verdict is hil judge's).
 */
import { groupsScript, KVERBS_DEBUGFS } from "../executor/kverbs-driver.ts";
import { KVERBS_DEPS, KVERBS_MODULE } from "../image/kverbs-module.ts";
import { type SoftLink, softLinkOf } from "../scenario/drivers.ts";
import type { LavaPlan, PlannedGroup } from "./plan.ts";

export const LAVA_TAG = "HIL-LAVA";
export const LAVA_DIR = "/hil-lava";

function batch(groups: readonly PlannedGroup[], clear: boolean): string {
  const plain = groups.map(({ lines, timeoutMs, stopOnFailure }) => ({
    lines,
    timeoutMs,
    ...(stopOnFailure ? { stopOnFailure } : {}),
  }));
  return `${groupsScript(plain, 0, { clear })}\n`;
}

/**
 * A software driver's device (siw, rxe) on the netdev the device under test reaches its address
 * through (SIW_NETDEV or RXE_NETDEV, default eth0)
 */
function softLinkLines(link: SoftLink): string {
  const netdev = `${link.type.toUpperCase()}_NETDEV`;
  return `[ -e /sys/class/infiniband/${link.device} ] || { modprobe ${link.module} && rdma link add ${link.device} type ${link.type} netdev "\${${netdev}:-eth0}"; } || say ${link.type}-link-failed
`;
}

function runScript(plan: LavaPlan): string {
  const T = LAVA_TAG;
  const softLink = softLinkOf(plan.driver);
  return `#!/bin/sh
# erdma-hil LAVA runner, written by hil lava-job for plan ${plan.digest}.
# Its output is judged by: hil judge <the job's log> --plan ${"<dir>"}/lava-plan.json
dir=$(cd "$(dirname "$0")" && pwd)
say() { echo "${T} $*"; }
result() { command -v lava-test-case >/dev/null 2>&1 && lava-test-case "$1" --result "$2"; return 0; }
tagged() { sed "s/^/${T} $1 /"; }
say plan ${plan.digest} ${plan.scenarios.length}
dmesg -n 1 2>/dev/null
${softLink ? softLinkLines(softLink) : ""}if [ ! -d ${KVERBS_DEBUGFS} ]; then
  for m in ${KVERBS_DEPS.join(" ")}; do modprobe "$m" 2>/dev/null; done
  mod="$dir/${KVERBS_MODULE}.ko"
  [ -f "$mod" ] || mod=/lib/modules/$(uname -r)/extra/${KVERBS_MODULE}.ko
  if ! out=$(insmod "$mod" 2>&1); then
    while read -r id name; do say notrun "$name" "${KVERBS_MODULE} did not load: $out"; done < "$dir/plan.txt"
    result hil-setup fail
    say done
    exit 1
  fi
fi
stuck=
while read -r id name; do
  if [ -n "$stuck" ]; then
    say notrun "$name" "scenario $stuck left the executor stuck before it"
    result "$name" skip
    continue
  fi
  from=$(dmesg | wc -l)
  say begin "$name"
  a=$(sh "$dir/s/$id-a.sh" 2>&1); arc=$?
  printf '%s\\n' "$a" | tagged a
  status=$(printf '%s\\n' "$a" | grep '"last_done"' | tail -n 1)
  b=
  brc=-
  case "$status" in
    *'"idle":false'*) stuck=$name ;;
    *)
      b=$(sh "$dir/s/$id-b.sh" 2>&1); brc=$?
      printf '%s\\n' "$b" | tagged b
      status=$(printf '%s\\n' "$b" | grep '"last_done"' | tail -n 1)
      case "$status" in *'"idle":false'*) stuck=$name ;; esac
      ;;
  esac
  say rc $arc $brc
  if [ -n "$stuck" ]; then
    pid=$(printf '%s\\n' "$status" | sed -n 's/.*"pid":\\([0-9]*\\).*/\\1/p')
    cat "/proc/$pid/stack" 2>/dev/null | tagged stack
    say state "$(sed -n 's/^State:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)"
    echo w > /proc/sysrq-trigger 2>/dev/null
    sleep 1
  fi
  dmesg | tail -n +$((from + 1)) | tagged dmesg
  say end "$name" "$(printf '%s\\n' "$a" | md5sum | cut -d' ' -f1)" "$(printf '%s\\n' "$b" | md5sum | cut -d' ' -f1)"
  if [ -n "$stuck" ] || [ "$arc" != 0 ]; then result "$name" fail; else result "$name" pass; fi
done < "$dir/plan.txt"
say done
`;
}

/** The runner's files, by path relative to /hil-lava. */
export function lavaRunnerFiles(plan: LavaPlan): Map<string, string> {
  const files = new Map<string, string>();
  files.set("run.sh", runScript(plan));
  files.set("plan.txt", plan.scenarios.map((s) => `${s.id} ${s.name}\n`).join(""));
  for (const s of plan.scenarios) {
    files.set(`s/${s.id}-a.sh`, batch(s.batches[0], true));
    files.set(`s/${s.id}-b.sh`, batch(s.batches[1], false));
  }
  return files;
}
