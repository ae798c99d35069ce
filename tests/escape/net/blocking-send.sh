#!/usr/bin/env bash
# A socket call that waits for its peer never holds up the supervisor, which answers
# every notified call of the sandbox. One thread blocks sending on a unix stream or
# datagram socket whose peer does not read, or connecting to a listener whose backlog
# is full; meanwhile another thread's stat() calls must be answered at once. Once the
# peer reads, the blocked call completes with its real result. Checked from outside by
# the run's duration (an unfixed supervisor hangs until --timeout). Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

kinds="stream dgram backlog"
plan 12
for mode in namespaced unnamespaced; do
	for kind in $kinds; do
		if ! have_mode "$mode"; then
			for i in 1 2; do skip "$mode $kind: check $i" "moat cannot start in $mode mode here"; done
			continue
		fi
		rm -f "$TMP/w/backlog.sock"
		t0=$(date +%s)
		out=$(sandbox "$mode" --timeout 25 -- "$PY" probe.py block "$kind")
		took=$(($(date +%s) - t0))
		max=$(awk '/^blocked True stats 200/ {sub("max_ms ", "", $0); print $NF}' <<<"$out")
		[ "$took" -lt 20 ] && [ -n "$max" ] && [ "$max" -lt 1000 ]
		ok $? "$mode $kind: stat is answered while a call waits for its peer (${took}s, max ${max:-?} ms)" \
			"$(diag "$out")"
		grep -q '^unblocked [0-9]' <<<"$out"
		ok $? "$mode $kind: the waiting call completes once the peer reads" "$(diag "$out")"
	done
done
finish
