#!/bin/sh
# One step of a kernel upper-layer protocol workload, run in the guest by the harness
# (harness/executor/ulp.ts) under the step's watchdog:
#
#   hil-ulp.sh <nvme-rdma|rnbd> <target-up|connect|io|disconnect|target-down> <addr> <port> <name> [kib]
#
# nvme-rdma: NVMe over Fabrics on RDMA: nvmet-rdma exports null_blk through configfs
# (drivers/nvme/target/configfs.c), nvme-rdma connects through /dev/nvme-fabrics
# (drivers/nvme/host/fabrics.c); <name> is the subsystem's NQN.
# rnbd: the RDMA Network Block Device over RTRS: rnbd_server (its listen port a module parameter)
# exports null_blk, rnbd_client maps it through /sys/devices/virtual/rnbd-client/ctl/map_device
# (drivers/block/rnbd/rnbd-clt-sysfs.c); <name> is the RTRS session's name, <addr> an IPv6 address
# (rtrs-srv listens on the IPv6 wildcard). The step scripts print "hil-ulp <key>=<value>" lines the
# harness reads and exits 0 when the step did what it meant; otherwise non-zero, the reason on
# stderr. io exits 5 when the block layer reported an I/O error (dd failed): an error reported,
# which is not a loss. Exit 3: the guest cannot run the workload at all (a module or configfs
# missing: the kernel lacks --config ulp), which says nothing of the driver.
set -u
workload=$1 action=$2 addr=$3 port=$4 nqn=$5 kib=${6:-0}
state=/tmp/hil-ulp
cfg=/sys/kernel/config/nvmet
mkdir -p "$state"
echo $$ >"$state/step.pid"

fail() {
	echo "$*" >&2
	exit 1
}
unavailable() {
	echo "$*" >&2
	exit 3
}
say() { echo "hil-ulp $*"; }

# the controller (nvme<N>) of subsystem $nqn
controller() {
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$nqn" ] && {
			basename "$c"
			return 0
		}
	done
	return 1
}

nvme_target_up() {
	grep -q " /sys/kernel/config " /proc/mounts || mount -t configfs none /sys/kernel/config ||
		unavailable "cannot mount configfs on /sys/kernel/config (CONFIG_CONFIGFS_FS)"
	[ -b /dev/nullb0 ] || modprobe null_blk nr_devices=1 memory_backed=1 gb=1 ||
		unavailable "modprobe null_blk failed (CONFIG_BLK_DEV_NULL_BLK)"
	[ -b /dev/nullb0 ] || unavailable "null_blk made no /dev/nullb0"
	modprobe nvmet-rdma || unavailable "modprobe nvmet-rdma failed (CONFIG_NVME_TARGET_RDMA)"
	sub=$cfg/subsystems/$nqn
	mkdir "$sub" || fail "cannot make subsystem $nqn"
	echo 1 >"$sub/attr_allow_any_host" || fail "attr_allow_any_host"
	mkdir "$sub/namespaces/1" || fail "cannot make namespace 1"
	echo -n /dev/nullb0 >"$sub/namespaces/1/device_path" || fail "device_path"
	echo 1 >"$sub/namespaces/1/enable" || fail "cannot enable namespace 1 on /dev/nullb0"
	p=$cfg/ports/$port
	mkdir "$p" || fail "cannot make port $port"
	echo rdma >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" && echo "$addr" >"$p/addr_traddr" &&
		echo "$port" >"$p/addr_trsvcid" || fail "cannot set port $port to rdma $addr:$port"
	ln -s "$sub" "$p/subsystems/$nqn" || fail "cannot enable port $port (rdma $addr:$port): see the kernel log"
	say "target=$nqn port=rdma:$addr:$port namespace=/dev/nullb0"
}

nvme_connect() {
	modprobe nvme-rdma || unavailable "modprobe nvme-rdma failed (CONFIG_NVME_RDMA)"
	exec 3<>/dev/nvme-fabrics || unavailable "cannot open /dev/nvme-fabrics"
	echo "transport=rdma,traddr=$addr,trsvcid=$port,nqn=$nqn,nr_io_queues=1,reconnect_delay=1,ctrl_loss_tmo=5" >&3 ||
		fail "connect to $nqn at rdma $addr:$port failed: see the kernel log"
	read -r reply <&3
	exec 3>&-
	say "connected=$reply"
	dev=$(wait_block namespace_device "connected ($reply) but no namespace block device of $nqn") || exit 1
	say "device=$dev"
}

# the namespace block device of subsystem $nqn
namespace_device() {
	c=$(controller) && echo "/dev/${c}n1"
}

# prints the block device $1 names once there is one (10 s at most), else fails saying $2 (in a
# command substitution: the caller exits on its status)
wait_block() {
	i=0
	while :; do
		dev=$($1) && [ -b "$dev" ] && break
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$2 appeared in 10 s"
		sleep 0.1
	done
	echo "$dev"
}

# the kernel's last lines from RTRS and RNBD, on one line (why a step failed)
rtrs_log() {
	dmesg | grep -E 'rtrs|rnbd' | tail -n 3 | tr '\n' ' '
}

# fails with exit 3 when the module is not there at all, else with the kernel's reason
load_module() {
	modprobe "$1" ${2:-} && return 0
	find "/lib/modules/$(uname -r)" -name "$(echo "$1" | tr _ -).ko*" -o -name "$1.ko*" | grep -q . ||
		unavailable "modprobe $1 failed: no such module (CONFIG_BLK_DEV_RNBD, CONFIG_INFINIBAND_RTRS)"
	fail "modprobe $1${2:+ $2} failed: $(rtrs_log)"
}

# the rnbd block device's /dev path
rnbd_dev_path() {
	d=$(rnbd_device) && echo "/dev/$d"
}

# the rnbd block device of session $nqn
rnbd_device() {
	for d in /sys/block/rnbd*; do
		[ -e "$d/rnbd/session" ] && [ "$(cat "$d/rnbd/session")" = "$nqn" ] && {
			basename "$d"
			return 0
		}
	done
	return 1
}

rnbd_target_up() {
	[ -b /dev/nullb0 ] || modprobe null_blk nr_devices=1 memory_backed=1 gb=1 ||
		unavailable "modprobe null_blk failed (CONFIG_BLK_DEV_NULL_BLK)"
	[ -b /dev/nullb0 ] || unavailable "null_blk made no /dev/nullb0"
	seen=$(dmesg | wc -l)
	load_module rnbd_server "port_nr=$port"
	# rtrs-srv listens from its ib_client's add (rtrs_srv_add_one): a listen that fails there is
	# logged, and the module stays loaded with no listener
	failed=$(dmesg | tail -n +$((seen + 1)) | grep -E 'rtrs_server.*(Listening on RDMA connection failed|Failed to initialize RDMA connection)|cma_listen_on_dev, error' | tr '\n' ' ')
	[ -z "$failed" ] || fail "rnbd_server loaded but RTRS cannot listen on port $port: $failed"
	say "target=rnbd port=rtrs:[::]:$port device=/dev/nullb0"
}

rnbd_connect() {
	load_module rnbd_client
	echo "dest_port=$port sessname=$nqn path=ip:$addr device_path=/dev/nullb0" \
		>/sys/devices/virtual/rnbd-client/ctl/map_device 2>"$state/map.err" ||
		fail "map_device of /dev/nullb0 at ip:$addr port $port failed ($(tr '\n' ' ' <"$state/map.err")): $(rtrs_log)"
	dev=$(wait_block rnbd_dev_path "mapped, but no rnbd block device of session $nqn") || exit 1
	say "connected=$nqn device=$dev"
}

rnbd_disconnect() {
	d=$(rnbd_device) || fail "no rnbd device of session $nqn: not connected"
	echo normal >"/sys/block/$d/rnbd/unmap_device" || fail "unmap_device of $d failed: $(rtrs_log)"
	rmmod rnbd_client && rmmod rtrs_client ||
		fail "rnbd_client or rtrs_client cannot be unloaded after the unmap (still in use)"
	say "disconnected=$d"
}

rnbd_target_down() {
	rmmod rnbd_server && rmmod rtrs_server ||
		fail "rnbd_server or rtrs_server cannot be unloaded after the client went (still in use)"
	say "target-down=rnbd"
}

# dd failed: an I/O error the block layer reported (exit 5), or dd itself broken (exit 1)
io_error() {
	why=$(tr '\n' ' ' <"$state/dd.err")
	case "$why" in
	*"I/O error"* | *"Input/output error"*)
		say "$1-error=$why"
		exit 5
		;;
	esac
	fail "dd could not $1 $dev: $why"
}

# the workload's block device
block_device() {
	case "$workload" in
	nvme-rdma) namespace_device || fail "no controller of $nqn: not connected" ;;
	rnbd) rnbd_dev_path || fail "no rnbd device of session $nqn: not connected" ;;
	esac
}

# writes $kib KiB of random data to the block device and reads it back, both with O_DIRECT
io() {
	dev=$(block_device) || exit 1
	[ -b "$dev" ] || fail "$dev is not a block device"
	count=$((kib / 4))
	dd if=/dev/urandom of="$state/written" bs=4096 count=$count 2>/dev/null || fail "cannot make $kib KiB of data"
	say "written-sha256=$(sha256sum <"$state/written" | cut -d' ' -f1) bytes=$((count * 4096)) device=$dev"
	dd if="$state/written" of="$dev" bs=4096 count=$count oflag=direct 2>"$state/dd.err" || io_error write
	dd if="$dev" of="$state/read" bs=4096 count=$count iflag=direct 2>"$state/dd.err" || io_error read
	say "read-sha256=$(sha256sum <"$state/read" | cut -d' ' -f1) bytes=$(wc -c <"$state/read")"
	first=$(cmp "$state/written" "$state/read" 2>&1 | head -n 1)
	[ -z "$first" ] || say "differ=$first"
	rm -f "$state/written" "$state/read" "$state/dd.err"
}

nvme_disconnect() {
	c=$(controller) || fail "no controller of $nqn: not connected"
	echo 1 >"/sys/class/nvme/$c/delete_controller" || fail "delete_controller of $c failed"
	rmmod nvme_rdma || fail "nvme_rdma cannot be unloaded after the disconnect (still in use)"
	say "disconnected=$c"
}

nvme_target_down() {
	sub=$cfg/subsystems/$nqn
	p=$cfg/ports/$port
	rm -f "$p/subsystems/$nqn" && rmdir "$p" || fail "cannot remove port $port"
	echo 0 >"$sub/namespaces/1/enable" && rmdir "$sub/namespaces/1" && rmdir "$sub" ||
		fail "cannot remove subsystem $nqn"
	rmmod nvmet_rdma || fail "nvmet_rdma cannot be unloaded after the target's teardown (still in use)"
	say "target-down=$nqn"
}

case "$workload:$action" in
nvme-rdma:target-up) nvme_target_up ;;
nvme-rdma:connect) nvme_connect ;;
nvme-rdma:io) io ;;
nvme-rdma:disconnect) nvme_disconnect ;;
nvme-rdma:target-down) nvme_target_down ;;
rnbd:target-up) rnbd_target_up ;;
rnbd:connect) rnbd_connect ;;
rnbd:io) io ;;
rnbd:disconnect) rnbd_disconnect ;;
rnbd:target-down) rnbd_target_down ;;
*) fail "hil-ulp.sh: no step $action of workload $workload" ;;
esac
