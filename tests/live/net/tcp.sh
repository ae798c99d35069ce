#!/usr/bin/env bash
# Issue 4 acceptance, TCP: an echo server on the host's loopback is reachable under
# --allow-net 127.0.0.1:PORT (non-blocking and blocking connects, by address and by
# the exact name localhost); every other loopback port, a rule naming a name that does
# not resolve, and a wildcard rule reach nothing: the second server's accept count,
# read from outside, stays 0.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

plan 16
start_server tcp A && start_server tcp B || { echo "Bail out! test servers did not start"; exit 1; }

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6 7 8; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(sandbox "$mode" --allow-net "127.0.0.1:$PORT_A" -- "$PY" client.py tcp 127.0.0.1 "$PORT_A")
	echo "$out" | grep -q '^echo ok'
	ok $? "$mode: echo through --allow-net 127.0.0.1:$PORT_A (non-blocking connect)" "$(diag "$out")"

	out=$(sandbox "$mode" --allow-net "127.0.0.1:$PORT_A" -- "$PY" client.py tcp 127.0.0.1 "$PORT_A" block)
	echo "$out" | grep -q '^echo ok'
	ok $? "$mode: echo with a blocking connect" "$(diag "$out")"

	out=$(sandbox "$mode" --allow-net "127.0.0.1:$PORT_A" -- "$PY" client.py tcp 127.0.0.1 "$PORT_B" block)
	echo "$out" | grep -q '^error 111' &&
		denied "denied connect 127.0.0.1:$PORT_B (no rule allows this destination)"
	ok $? "$mode: another loopback port is refused with a denial line" "$(diag "$out")"
	[ "$(accepts B)" = 0 ]
	ok $? "$mode: the other server accepted nothing" "accepts: $(accepts B)"

	out=$(sandbox "$mode" --allow-net "localhost:$PORT_A" -- "$PY" client.py tcp localhost "$PORT_A")
	echo "$out" | grep -q '^echo ok'
	ok $? "$mode: --allow-net localhost:$PORT_A works through the name" "$(diag "$out")"

	out=$(sandbox "$mode" --allow-net "example.invalid:$PORT_B" -- "$PY" client.py tcp 127.0.0.1 "$PORT_B")
	echo "$out" | grep -q '^error' && [ "$(accepts B)" = 0 ]
	ok $? "$mode: --allow-net example.invalid:$PORT_B does not open 127.0.0.1" "$(diag "$out")"

	out=$(sandbox "$mode" --allow-net '*:*' -- "$PY" client.py tcp 127.0.0.1 "$PORT_B")
	echo "$out" | grep -q '^error 13' && [ "$(accepts B)" = 0 ]
	ok $? "$mode: a wildcard rule does not reach loopback" "$(diag "$out")"

	out=$(sandbox "$mode" --allow-net "localhost:$PORT_A" -- "$PY" client.py tcp 0.0.0.0 "$PORT_B")
	echo "$out" | grep -q '^error' && [ "$(accepts B)" = 0 ]
	ok $? "$mode: 0.0.0.0 (this host) is decided as loopback" "$(diag "$out")"
done
finish
