#!/usr/bin/env bash
# SCM_CREDENTIALS are checked by the kernel against the sender, which is the supervisor:
# its privileges must not let the sandbox claim another process (host pid 1 here, or its
# parent), nor an id it does not hold, and a pid must not be read in the supervisor's
# pid namespace. A program may claim what the kernel lets it claim natively (its own
# pid; its own ids, or any mapped one with CAP_SETUID / CAP_SETGID), and the receiver
# then reads exactly that, in its own namespaces' view: a peer outside (the test's
# server) sees the program's host pid (its /proc/PID/cmdline is the program's) and the
# host ids it runs as; a receiver inside (a socketpair, as Go's TestSCMCredentials)
# sees the pid fork() gave it for the sender and its own ids. Every check is made by the
# receiver. A forged pid and a forged uid fail with EPERM and reach nobody. Likewise a
# firewall mark (SO_MARK as control data) needs CAP_NET_ADMIN, which the sandbox lacks
# over the host's network: the marked datagram is refused and never reaches the allowed
# server. Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

plan 16
start_server unix C "$TMP/w/c.sock" && start_server udp U ||
	{ echo "Bail out! test servers did not start"; exit 1; }
# Naming the program's pid takes CAP_SYS_ADMIN of the sender, which only a supervisor
# started by root holds (threat-model.md): unprivileged, the genuine send fails (EPERM).
genuine_why=
[ "$(id -u)" = 0 ] || genuine_why="an unprivileged supervisor cannot name the program's pid (EPERM; threat-model.md)"
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6 7 8; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/C.log"
	out=$(sandbox "$mode" -- "$PY" probe.py creds c.sock self)
	if [ -n "$genuine_why" ]; then
		skip "$mode: the peer outside gets the program's own credentials" "$genuine_why"
	else
		grep -q '^creds sent 5$' <<<"$out" &&
			grep -Eq "^creds [0-9]+ $(id -u) $(id -g) .*probe.py creds c.sock self" "$TMP/C.log"
		ok $? "$mode: the peer outside gets the program's own credentials (host pid and ids)" \
			"$(cat "$TMP/C.log"; diag "$out")"
	fi
	for kind in stream dgram; do
		out=$(sandbox "$mode" -- "$PY" probe.py pair $kind)
		if [ -n "$genuine_why" ]; then
			skip "$mode: a $kind receiver inside reads the sender's credentials" "$genuine_why"
		else
			g=$(sed -n "s/^pair $kind got \(.*\) want \(.*\)$/\1|\2/p" <<<"$out")
			grep -q "^pair $kind sender sent 1$" <<<"$out" && [ -n "$g" ] && [ "${g%|*}" = "${g#*|}" ]
			ok $? "$mode: a $kind receiver inside reads the sender's pid and ids, as fork() and its own ids say" \
				"$(diag "$out")"
		fi
		grep -q "^pair $kind forged error 1$" <<<"$out"
		ok $? "$mode: $kind: claiming another process of the sandbox (the parent) fails with EPERM" \
			"$(diag "$out")"
	done
	: >"$TMP/C.log"
	out=$(sandbox "$mode" -- "$PY" probe.py creds c.sock 1)
	grep -q '^creds error 1$' <<<"$out" && ! grep -q '^creds 1 ' "$TMP/C.log"
	ok $? "$mode: claiming pid 1 fails with EPERM and the peer never sees it" "$(cat "$TMP/C.log"; diag "$out")"
	: >"$TMP/C.log"
	out=$(sandbox "$mode" -- "$PY" probe.py forge c.sock)
	# EINVAL when the uid claimed is not mapped in the sender's user namespace at all.
	# (The server's read of the end of the stream carries credentials of no sender: pid 0.)
	grep -Eq '^forge error (1|22)$' <<<"$out" && grep -q '^conn ' "$TMP/C.log" &&
		! grep -Eq '^creds [1-9]' "$TMP/C.log"
	ok $? "$mode: claiming a uid it does not hold, without CAP_SETUID, fails (EPERM) and the peer never sees it" \
		"$(cat "$TMP/C.log"; diag "$out")"
	: >"$TMP/U.log"
	out=$(sandbox "$mode" --allow-net "udp:127.0.0.1:$PORT_U" -- "$PY" probe.py mark "$PORT_U")
	grep -q '^mark error 1$' <<<"$out" && ! grep -q marked "$TMP/U.log" && grep -q plain "$TMP/U.log"
	ok $? "$mode: a datagram with a firewall mark is refused, a plain one sent" "$(cat "$TMP/U.log"; diag "$out")"
done
finish
