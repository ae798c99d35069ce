#!/usr/bin/env bash
# Issue 4 acceptance, names: a test DNS server on the host's loopback logs every
# question it sees. A sandboxed resolver asking for a name the policy does not allow
# gets NXDOMAIN (namespaced: from the supervisor's responder at the sandbox's
# 127.0.0.1:53) and the host server never sees the question - not through the
# resolver, not by sending to the server directly. Allowed names are answered.
# Unnamespaced mode has no responder (see interposer/core/sock.c): there queries to a server
# no rule names are denied, and the run says what it cannot give.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

plan 12
# Port 53 when we may bind it (so "127.0.0.1:53" on the host is our logging server);
# any port otherwise, which the direct-send checks still use.
# A second server on any port takes the direct sends.
if start_server dns D 53 2>/dev/null; then on53=1; else on53=0; start_server dns D || {
	echo "Bail out! test DNS server did not start"; exit 1; }; fi
start_server dns E || { echo "Bail out! test DNS server did not start"; exit 1; }
never_seen() { ! grep -q "$1" "$TMP/D.log" "$TMP/E.log"; }
NAME=secret-not-allowed.moat-test.example

mode=namespaced
if have_mode $mode; then
	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py dns "$NAME")
	echo "$out" | grep -q '^rcode 3 answers 0'
	ok $? "$mode: a query for a name not allowed gets NXDOMAIN" "$(diag "$out")"

	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py resolve "$NAME")
	echo "$out" | grep -q '^gaierror'
	ok $? "$mode: getaddrinfo of a name not allowed fails" "$(diag "$out")"

	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py dns localhost)
	echo "$out" | grep -q '^rcode 0 answers [1-9]'
	ok $? "$mode: a query for an allowed name is answered" "$(diag "$out")"

	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py dns "$NAME" 127.0.0.1 "$PORT_E")
	echo "$out" | grep -q '^error' && denied "denied sendto 127.0.0.1:$PORT_E"
	ok $? "$mode: a query sent straight to the host's server is denied" "$(diag "$out")"

	out=$(sandbox $mode --allow-net '*:*' -- cat /etc/resolv.conf)
	[ "$(echo "$out" | grep '^nameserver')" = "nameserver 127.0.0.1" ]
	ok $? "$mode: the sandbox's resolv.conf names only its own responder" "$(diag "$out")"
else
	for i in 1 2 3 4 5; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
fi

mode=unnamespaced
if have_mode $mode; then
	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py dns "$NAME" 127.0.0.1 "$PORT_E")
	echo "$out" | grep -q '^error' && denied "denied sendto 127.0.0.1:$PORT_E"
	ok $? "$mode: a query to a nameserver no rule names is denied" "$(diag "$out")"

	out=$(sandbox $mode --allow-net localhost:80 -- "$PY" client.py resolve "$NAME")
	echo "$out" | grep -q '^gaierror' && never_seen "$NAME"
	ok $? "$mode: getaddrinfo of a name not allowed fails without reaching a nameserver" "$(diag "$out")"

	out=$(sandbox $mode --report "$TMP/report.json" --allow-net localhost:80 -- true)
	grep -q 'no DNS of its own' "$TMP/report.json"
	ok $? "$mode: the report says what the mode cannot give" "$(cat "$TMP/report.json")"

	out=$(sandbox $mode --allow-net "localhost:80" -- "$PY" client.py resolve localhost)
	echo "$out" | grep -q '^resolved 127.0.0.1'
	ok $? "$mode: the exact name of a rule resolves (through /etc/hosts)" "$(diag "$out")"
else
	for i in 1 2 3 4; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
fi

never_seen "$NAME"
ok $? "the host's DNS servers never saw the name that is not allowed" "$(cat "$TMP/D.log" "$TMP/E.log")"
[ ! -s "$TMP/D.log" ] && [ ! -s "$TMP/E.log" ]
ok $? "the host's DNS servers saw no question at all" "$(cat "$TMP/D.log" "$TMP/E.log")"
if [ $on53 = 1 ] && have_mode namespaced; then
	out=$(sandbox namespaced -- "$PY" client.py dns "$NAME" 127.0.0.1 53)
	echo "$out" | grep -q '^rcode 3' && [ ! -s "$TMP/D.log" ]
	ok $? "namespaced: 127.0.0.1:53 is the sandbox's responder, not the host's server" "$(diag "$out")"
else
	skip "namespaced: 127.0.0.1:53 is the sandbox's responder" "cannot bind the host's port 53 here"
fi
finish
