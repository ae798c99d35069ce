#!/usr/bin/env bash
# A mapping above /proc (--ro-bind /) holds the host's procfs. /proc/self must still be
# the calling program, as the sandbox numbers it, and never the supervisor: the
# supervisor reading /proc/self on the sandbox's behalf would hand over its own status,
# its environment (the host's, which the sandbox is not given) and its memory.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 6
mkdir "$TMP/cwd"; cd "$TMP/cwd" || exit 1
SECRET="moat-env-secret-$RANDOM$RANDOM"
sleep 300 & host_pid=$!; track_pid $host_pid
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(MOAT_TEST_SECRET=$SECRET timeout 60 "$MOAT" run -q --mode $mode --profile none --ro-bind / -- \
		sh -c 'grep "^Name:" /proc/self/status; tr "\0" "\n" </proc/self/environ; cat /proc/self/cmdline | tr "\0" " "; echo' 2>&1)
	grep -qx "Name:	grep" <<<"$out" && ! grep -q "moat" <<<"$(head -1 <<<"$out")"
	ok $? "$mode: --ro-bind /: /proc/self/status is the calling program's" "$out"
	no_secret <(echo "$out") "$SECRET" && [ "$(tail -1 <<<"$out")" = "cat /proc/self/cmdline " ]
	ok $? "$mode: --ro-bind /: /proc/self/environ and cmdline are the sandbox's, not the supervisor's" "$out"
	out=$(timeout 60 "$MOAT" run -q --mode $mode --profile none --ro-bind / -- \
		sh -c "ls /proc | grep -x $host_pid; cat /proc/$host_pid/cmdline; echo end" 2>/dev/null)
	[ "$out" = end ]
	ok $? "$mode: --ro-bind /: a host process ($host_pid) is not in /proc" "$out"
done
finish
