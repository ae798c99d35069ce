#!/usr/bin/env bash
# A unix socket the policy refuses is refused with the rule's errno (deny: EACCES,
# hide: ENOENT, a bind on a read-only mapping: EROFS), never a 0 that leaves the program
# believing it is connected, sent or bound; the denial line names that errno; the peer,
# outside, sees no connection and no socket file appears. A socket on a
# read-only mapping can be connected, as the kernel allows on a read-only mount
# (connect needs no writable mount). Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"
mkdir -p "$TMP/w/ro"

plan 14
start_server unix D "$TMP/w/d.sock" && start_server unix O "$TMP/w/ro/o.sock" ||
	{ echo "Bail out! test servers did not start"; exit 1; }
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6 7; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/D.log"
	: >"$TMP/O.log"
	rm -f "$TMP/audit"
	out=$(sandbox "$mode" --deny "$TMP/w/d.sock" --output-in-workspace --audit "$TMP/audit" -- "$PY" probe.py connect d.sock)
	grep -q '^connect error 13$' <<<"$out" &&
		"$MOAT" audit dump "$TMP/audit" | grep -q 'connect(.*unix:d.sock) = -EACCES denied'
	ok $? "$mode: connect to a denied socket fails with EACCES, and the audit says so" \
		"$(diag "$out"; "$MOAT" audit dump "$TMP/audit" | grep connect)"
	denied 'denied connect unix:d.sock' && grep -q 'denied connect unix:d.sock.*: EACCES' "$TMP/err"
	ok $? "$mode: the denial is reported with its errno" "$(diag "$out")"
	out=$(sandbox "$mode" --hide "$TMP/w/d.sock" -- "$PY" probe.py connect d.sock)
	grep -q '^connect error 2$' <<<"$out"
	ok $? "$mode: connect to a hidden socket fails with ENOENT" "$(diag "$out")"
	sleep 0.2
	[ ! -s "$TMP/D.log" ]
	ok $? "$mode: the refused peer saw no connection" "$(cat "$TMP/D.log")"
	out=$(sandbox "$mode" --deny "$TMP/w/d.sock" -- "$PY" probe.py dgram d.sock)
	grep -q '^sendto error 13$' <<<"$out" && grep -q 'denied sendto unix:d.sock.*: EACCES' "$TMP/err"
	ok $? "$mode: a datagram to a denied socket fails with EACCES" "$(diag "$out")"
	out=$(sandbox "$mode" --ro-bind "$TMP/w/ro" -- "$PY" probe.py bind ro/b.sock)
	grep -q '^bind error 30$' <<<"$out" && [ ! -e "$TMP/w/ro/b.sock" ]
	ok $? "$mode: bind on a read-only mapping fails with EROFS and creates nothing" "$(diag "$out")"
	out=$(sandbox "$mode" --ro-bind "$TMP/w/ro" -- "$PY" probe.py connect ro/o.sock)
	for _ in $(seq 40); do [ -s "$TMP/O.log" ] && break; sleep 0.05; done
	grep -q '^connect ok$' <<<"$out" && grep -q 'bytes 5$' "$TMP/O.log"
	ok $? "$mode: a socket on a read-only mapping is connected and reached" "$(cat "$TMP/O.log"; diag "$out")"
done
finish
