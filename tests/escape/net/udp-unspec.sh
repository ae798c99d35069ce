#!/usr/bin/env bash
# A send on an internet socket reads its address as an internet destination: UDP over
# IPv4 takes sin_family = AF_UNSPEC for AF_INET. sendto, sendmsg and sendmmsg with
# AF_UNSPEC to a server no rule allows must deliver nothing (its log, read from outside,
# stays empty), in both modes. Namespaced, the socket first sends to the one allowed
# UDP destination, so that it is the host-side socket moat installed.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

plan 6
start_server udp U && start_server udp V || { echo "Bail out! test servers did not start"; exit 1; }
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/U.log"
	out=$(sandbox "$mode" --allow-net "udp:127.0.0.1:$PORT_U" -- "$PY" probe.py unspec "$PORT_U" "$PORT_V")
	[ ! -s "$TMP/V.log" ]
	ok $? "$mode: AF_UNSPEC sends delivered nothing to the denied server" "$(cat "$TMP/V.log"; diag "$out")"
	[ "$(grep -c ' error ' <<<"$out")" = 3 ]
	ok $? "$mode: sendto, sendmsg and sendmmsg with AF_UNSPEC fail" "$(diag "$out")"
	grep -q '^allowed$' "$TMP/U.log"
	ok $? "$mode: the allowed server still got its datagram" "$(cat "$TMP/U.log"; diag "$out")"
done
finish
