#!/usr/bin/env bash
# The supervisor grows its fd table before it starts a thread: grown later, with the
# threads sharing it, the kernel waits for an RCU grace period before it frees the old
# table, in whichever call took the fd past the size (12-15 ms on the project's VM;
# bench/RESULTS.md, "The fd table grown before the threads"). Checked from outside:
# the supervisor's FDSize while it runs, in both modes, and under a soft limit lower than
# the size it wants (it takes what the limit allows, and runs).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 3

# fdsize ARGS...: the FDSize of `moat run ARGS -- <wait>` (its supervisor, by pid), then
# its exit status, as "FDSIZE RC"
fdsize() {
	local W pid size rc
	W=$(mktemp -d "$TMP/w.XXXXXX")
	(cd "$W" && exec "$MOAT" run -q "$@" -- sh -c 'touch ready; for i in $(seq 100); do [ -e go ] && exit 0; sleep 0.05; done; exit 1') &
	pid=$!
	track_pid "$pid"
	if ! wait_for "$W/ready"; then
		echo "- none"
		return
	fi
	size=$(awk '/^FDSize:/ {print $2}' /proc/"$pid"/status)
	touch "$W/go"
	wait "$pid"
	rc=$?
	echo "$size $rc"
}

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: the supervisor's fd table holds 1024 fds from the start" "the $mode mode cannot start here"
		continue
	fi
	read -r size rc <<<"$(fdsize --mode "$mode")"
	[ "$rc" = 0 ] && [ "${size:-0}" -ge 1024 ] 2>/dev/null
	ok $? "$mode: the supervisor's fd table holds 1024 fds from the start" "FDSize=$size rc=$rc"
done

# A soft limit of 200: the table grows to what the limit allows, and the run goes on.
read -r size rc <<<"$(ulimit -S -n 200 && fdsize)"
[ "$rc" = 0 ] && [ "${size:-0}" -ge 128 ] 2>/dev/null
ok $? "under a soft limit of 200 fds: a table as large as it allows, and the run goes on" "FDSize=$size rc=$rc"
finish
