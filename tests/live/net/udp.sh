#!/usr/bin/env bash
# Issue 4 acceptance, UDP: sendto to a denied address delivers no datagram (the
# listening socket's log, read from outside, stays empty); to an allowed one it does,
# and the answer comes back to the same socket (namespaced: the host-side socket moat
# installed at the program's fd).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

plan 8
start_server udp U && start_server udp V || { echo "Bail out! test servers did not start"; exit 1; }

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/U.log"
	out=$(sandbox "$mode" --allow-net "udp:127.0.0.1:$PORT_U" -- "$PY" client.py udp "$PORT_U" "$PORT_V" "$PORT_U")
	[ "$(grep -c "^sent $PORT_U ack" <<<"$out")" = 2 ]
	ok $? "$mode: datagrams to the allowed port are sent and answered" "$(diag "$out")"
	[ "$(grep -c "dgram-$PORT_U" "$TMP/U.log")" = 2 ]
	ok $? "$mode: the allowed server received both" "$(cat "$TMP/U.log")"
	grep -q "^error $PORT_V" <<<"$out" && denied "denied sendto 127.0.0.1:$PORT_V"
	ok $? "$mode: the denied sendto fails with a denial line" "$(diag "$out")"
	[ ! -s "$TMP/V.log" ]
	ok $? "$mode: the denied server received nothing" "$(cat "$TMP/V.log")"
done
finish
