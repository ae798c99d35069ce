#!/usr/bin/env bash
# sendmsg passes what the kernel passes: 100 fds in one SCM_RIGHTS message (the kernel
# takes up to 253) and 1024 iovecs reach an allowed unix peer intact, counted by the
# peer outside the sandbox; the supervisor copies them within the message's own bounds
# (the ASan build reports any overflow and aborts). Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

plan 6
start_server unix R "$TMP/w/r.sock" || { echo "Bail out! test server did not start"; exit 1; }
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/R.log"
	out=$(sandbox "$mode" -- "$PY" probe.py rights r.sock 100)
	! grep -q 'AddressSanitizer' "$TMP/err"
	ok $? "$mode: the supervisor copies the control data within bounds" "$(diag "$out")"
	grep -q '^rights sent 6$' <<<"$out" && grep -q '^iovecs sent 1024$' <<<"$out"
	ok $? "$mode: 100 fds and 1024 iovecs are accepted" "$(diag "$out")"
	grep -q '^conn fds 100 bytes 1030$' "$TMP/R.log"
	ok $? "$mode: the peer received the 100 fds and every byte" "$(cat "$TMP/R.log"; diag "$out")"
done
finish
