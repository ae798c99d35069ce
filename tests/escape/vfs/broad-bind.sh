#!/usr/bin/env bash
# A broad bind (--profile none --ro-bind /) covers /proc and /dev, but /proc must still
# be the sandbox's own procfs (self is the caller, never the supervisor; only the
# sandbox's pids) and /dev must hold only the devices the policy names (plus the usual
# harmless ones: /dev/null still works). Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 12
mkdir "$TMP/cwd"
# In the supervisor's environment only: the sandbox's is scrubbed.
export MOAT_TEST_SECRET="supervisor-secret-$RANDOM$RANDOM"
run() { (cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" --profile none --ro-bind / -- "$@" 2>&1); }

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6; do skip "$mode: broad bind check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(run sh -c 'tr "\0" "\n" </proc/self/environ; echo END')
	echo "$out" | grep -q '^END$' && ! echo "$out" | grep -qF "$MOAT_TEST_SECRET"
	ok $? "$mode: /proc/self/environ is the caller's, not the supervisor's" "$out"

	out=$(run cat /proc/self/maps)
	echo "$out" | grep -q '/cat$' && ! echo "$out" | grep -q 'moat'
	ok $? "$mode: /proc/self/maps is the caller's (cat), not moat's" "$(echo "$out" | head -3)"

	out=$(run ls /proc)
	pids=$(echo "$out" | grep -E '^[0-9]+$' | tr '\n' ' ')
	n=$(echo "$out" | grep -cE '^[0-9]+$')
	[ "$n" -ge 1 ] && [ "$n" -le 6 ] && ! echo " $pids" | grep -q ' 1 '
	ok $? "$mode: /proc lists only the sandbox's pids ($pids)" "$(echo "$out" | head -5)"

	out=$(run sh -c 'readlink /proc/self/exe; ls /proc/self/fd | wc -l')
	! echo "$out" | grep -q moat
	ok $? "$mode: /proc/self names the caller ($(echo $out))" "$out"

	if [ -c /dev/userfaultfd ]; then
		out=$(run sh -c '(exec 3</dev/userfaultfd && echo OPENED); echo END' 2>&1)
		echo "$out" | grep -q END && ! echo "$out" | grep -q OPENED
		ok $? "$mode: /dev/userfaultfd does not open through a bind of /" "$out"
	else
		skip "$mode: /dev/userfaultfd does not open through a bind of /" "no /dev/userfaultfd on this host"
	fi

	out=$(run sh -c 'echo x >/dev/null && head -c 4 /dev/zero | wc -c && ls /dev | grep -c "^sda\|^vda\|^mem$\|^kmsg$"')
	[ "$(echo "$out" | tr '\n' ' ')" = "4 0 " ]
	ok $? "$mode: /dev/null and /dev/zero work, disks, mem and kmsg are not listed" "$out"
done
finish
