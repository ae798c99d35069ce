#!/usr/bin/env bash
# listen() on an unbound TCP socket binds an ephemeral port. Unnamespaced, that is a
# host port: without an allow-bind rule for port 0 the listen must fail and the host
# must not be able to connect to any port the sandbox holds. With allow-bind 0 it works.
# Namespaced, the port is the sandbox's own (its network namespace): listen works and
# the host reaches nothing.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

# host_connect PORT: 0 when the host can connect to 127.0.0.1:PORT
host_connect() {
	"$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$1" 2>/dev/null
}
# run_listen MODE ARGS...: the probe stays 3 s; meanwhile the host tries its port
run_listen() {
	local mode=$1 port
	shift
	(cd "$TMP/w" && timeout 60 "$MOAT" run -v --mode "$mode" "$@" -- "$PY" probe.py listen 3 \
		>"$TMP/out" 2>"$TMP/err") &
	for _ in $(seq 100); do
		grep -q '^listen' "$TMP/out" 2>/dev/null && break
		sleep 0.05
	done
	port=$(awk '/^listen ok/ {print $3}' "$TMP/out")
	CONNECTED=no
	[ -n "$port" ] && host_connect "$port" && CONNECTED=yes
	wait
}

plan 4
if have_mode unnamespaced; then
	run_listen unnamespaced
	[ "$CONNECTED" = no ] && grep -q '^listen error 13' "$TMP/out" && denied "denied listen"
	ok $? "unnamespaced: listen without bind is refused and no host port opens" \
		"connected: $CONNECTED; $(diag "$(cat "$TMP/out")")"
	run_listen unnamespaced --allow-bind 0
	[ "$CONNECTED" = yes ]
	ok $? "unnamespaced: with allow-bind 0 the listen works and the host connects" \
		"$(diag "$(cat "$TMP/out")")"
	port=$(awk '/^listen ok/ {print $3}' "$TMP/out")
	[ -n "$port" ] && ! host_connect "$port"
	ok $? "unnamespaced: the port is closed once the run is over" "port: $port"
else
	for i in 1 2 3; do skip "unnamespaced: check $i" "moat cannot start in unnamespaced mode here"; done
fi
if have_mode namespaced; then
	run_listen namespaced
	grep -q '^listen ok' "$TMP/out" && [ "$CONNECTED" = no ]
	ok $? "namespaced: listen works inside the sandbox's namespace, the host reaches nothing" \
		"connected: $CONNECTED; $(diag "$(cat "$TMP/out")")"
else
	skip "namespaced: listen" "moat cannot start in namespaced mode here"
fi
finish
