#!/usr/bin/env bash
# Invariant 1 (no TOCTOU) for connect and MSG_FASTOPEN: tests/escape/net/toctou-connect.c
# flips the sockaddr between an allowed and a denied loopback port while looping
# connects; the denied server, counting from outside, must never accept - in either
# mode. Both outcomes must occur (the race is real): some connects reach the allowed
# server, some are denied.
# The same for unix stream sockets, flipping the path between an allowed socket and a
# hidden one: namespaced mode with no network rule continues an allowed unix connect
# after its check (sock.c, continue_unix), so the kernel reads the path again; the
# hidden socket, covered by its stub in the sandbox's view, must never accept.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
: "${TOCTOU_CONNECT:?TOCTOU_CONNECT must point at the fixture (meson sets it)}"

N=${TOCTOU_ITERATIONS:-3000}
plan 12
start_server tcp A && start_server tcp B && start_server unix U "$TMP/w/a.sock" &&
	start_server unix H "$TMP/w/h.sock" || { echo "Bail out! test servers did not start"; exit 1; }
cp "$TOCTOU_CONNECT" "$TMP/w/toctou-connect"

for mode in namespaced unnamespaced; do
	for how in connect fastopen; do
		if ! have_mode "$mode"; then
			skip "$mode: $N racing ${how}s never reach the denied server" "moat cannot start in $mode mode here"
			skip "$mode: both outcomes of the $how race occur" "moat cannot start in $mode mode here"
			continue
		fi
		before=$(accepts A)
		# No -v here: thousands of denial lines would only hide the result.
		out=$(cd "$TMP/w" && timeout 120 "$MOAT" run -q --mode "$mode" --allow-net "127.0.0.1:$PORT_A" -- \
			./toctou-connect "$PORT_A" "$PORT_B" "$N" "$how" 2>"$TMP/err")
		rc=$?
		[ $rc -eq 0 ] && [ "$(accepts B)" = 0 ]
		ok $? "$mode: $N racing ${how}s never reach the denied server ($out)" "rc=$rc accepts B: $(accepts B)"
		c=$(echo "$out" | sed -n 's/.*connected=\([0-9]*\).*/\1/p')
		r=$(echo "$out" | sed -n 's/.*refused=\([0-9]*\).*/\1/p')
		[ "${c:-0}" -gt 0 ] && [ "${r:-0}" -gt 0 ] && [ "$(accepts A)" -gt "$before" ]
		ok $? "$mode: both outcomes of the $how race occur" "$(diag "$out")"
	done
	if ! have_mode "$mode"; then
		skip "$mode: $N racing unix connects never reach the hidden socket" "moat cannot start in $mode mode here"
		skip "$mode: both outcomes of the unix race occur" "moat cannot start in $mode mode here"
		continue
	fi
	hbefore=$(grep -c conn "$TMP/H.log")
	ubefore=$(grep -c conn "$TMP/U.log")
	out=$(cd "$TMP/w" && timeout 120 "$MOAT" run -q --mode "$mode" --hide "$TMP/w/h.sock" -- \
		./toctou-connect unix a.sock h.sock "$N" 2>"$TMP/err")
	rc=$?
	sleep 0.3
	[ $rc -eq 0 ] && [ "$(grep -c conn "$TMP/H.log")" = "$hbefore" ]
	ok $? "$mode: $N racing unix connects never reach the hidden socket ($out)" \
		"rc=$rc hidden accepts: $(($(grep -c conn "$TMP/H.log") - hbefore)) $(cat "$TMP/err")"
	c=$(echo "$out" | sed -n 's/.*connected=\([0-9]*\).*/\1/p')
	r=$(echo "$out" | sed -n 's/.*refused=\([0-9]*\).*/\1/p')
	[ "${c:-0}" -gt 0 ] && [ "${r:-0}" -gt 0 ] && [ "$(grep -c conn "$TMP/U.log")" -gt "$ubefore" ]
	ok $? "$mode: both outcomes of the unix race occur" "$(diag "$out")"
done
finish
