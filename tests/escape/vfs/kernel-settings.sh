#!/usr/bin/env bash
# The kernel's settings stay out of the sandbox's reach: a read-write /proc (`--bind
# /proc`) keeps them read-only, /sys cannot be mapped read-write, and the /sys below a
# read-write mapping of / stays read-only. Started by
# root, the sandbox's root is the host's uid 0 (ids map one to one), and procfs lets
# uid 0 write most sysctls with no capability at all: kernel.core_pattern names a
# program the host's kernel runs as root on the next crash. The effect is checked on the
# host with a harmless sysctl (fs.lease-break-time), restored if a case ever changes it.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

SYSCTL=/proc/sys/fs/lease-break-time
[ -w "$SYSCTL" ] || skip_all "cannot write $SYSCTL on the host (not root?)"
plan 15
mkdir "$TMP/cwd"
BEFORE=$(cat "$SYSCTL")
restore() { [ "$(cat "$SYSCTL")" = "$BEFORE" ] || echo "$BEFORE" > "$SYSCTL"; }
trap 'restore; _tap_cleanup' EXIT

# The probe writes the sysctl's value plus one, opens core_pattern for appending (never
# writes it) and rewrites its own oom_score_adj, which must stay writable.
PROBE='
v=$(cat '"$SYSCTL"'); echo $((v + 1)) > '"$SYSCTL"' && echo "wrote sysctl"
(exec 3>>/proc/sys/kernel/core_pattern) 2>/dev/null && echo "opened core_pattern"
cat /proc/self/oom_score_adj > /proc/self/oom_score_adj && echo "own oom_score_adj ok"
'
for mode in namespaced unnamespaced; do
	for flags in "" "-v"; do
		name="$mode${flags:+ $flags}"
		if ! have_mode "$mode"; then
			skip "$name: sysctls stay read-only" "no $mode mode"
			skip "$name: the process's own /proc entries stay writable" "no $mode mode"
			continue
		fi
		out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $flags --bind /proc -- \
			sh -c "$PROBE" 2>&1)
		after=$(cat "$SYSCTL")
		restore
		[ "$after" = "$BEFORE" ] && ! echo "$out" | grep -q "opened core_pattern"
		ok $? "$name: sysctls stay read-only under a read-write /proc (host value $after, was $BEFORE)" "$out"
		echo "$out" | grep -q "own oom_score_adj ok"
		ok $? "$name: the process's own /proc entries stay writable" "$out"
	done
done

# Host-wide switches outside /proc/sys that uid 0 writes with no capability:
# dynamic_debug/control turns on the kernel's debug messages, acpi/wakeup the machine's
# wake-up sources. Each is only opened for appending, never written.
for f in /proc/dynamic_debug/control /proc/acpi/wakeup; do
	if [ ! -w "$f" ]; then
		skip "$f stays read-only under a read-write /proc" "no writable $f on this kernel"
		continue
	fi
	out=$(cd "$TMP/cwd" && for mode in namespaced unnamespaced; do
		have_mode "$mode" || continue
		"$MOAT" run -q --mode "$mode" --bind /proc -- \
			sh -c "(exec 3>>$f) 2>/dev/null && echo OPENED $mode"
	done 2>&1)
	! echo "$out" | grep -q OPENED
	ok $? "$f stays read-only under a read-write /proc (both modes)" "$out"
done

# sysfs: /sys/power/state suspends the machine and is guarded by its mode alone. It is
# only opened here, never written.
rm -f "$TMP/cwd/ran"
out=$(cd "$TMP/cwd" && "$MOAT" run -q --bind /sys --bind "$TMP/cwd" -- sh -c ': > ran' 2>&1)
rc=$?
[ "$rc" -eq 125 ] && [ ! -e "$TMP/cwd/ran" ] && echo "$out" | grep -q "/sys can be mapped read-only only"
ok $? "--bind /sys is refused before anything runs (rc $rc): /sys is the host kernel's settings" "$out"
for mode in namespaced unnamespaced; do
	for flags in "" "-v"; do
		if ! have_mode "$mode"; then
			skip "$mode: /sys below a read-write / stays read-only" "no $mode mode"
			continue
		fi
		out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode $mode $flags --profile none --bind / -- \
			sh -c '(exec 3>>/sys/power/state) && echo OPENED' 2>&1)
		! echo "$out" | grep -q OPENED && echo "$out" | grep -q "Read-only file system"
		ok $? "$mode${flags:+ $flags}, --profile none --bind /: /sys below it stays read-only (EROFS)" "$out"
	done
done
finish
