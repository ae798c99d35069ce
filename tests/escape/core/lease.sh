#!/usr/bin/env bash
# A file the sandbox may only read does not stall the host's writers. A lease
# (fcntl F_SETLEASE) needs only ownership of the file, not an fd open for writing: a
# sandbox started by root owns /etc, and any sandbox owns its user's files. While a
# read lease is held, every open of the file for writing on the host waits until the
# holder lets go, or for lease-break-time (45 s by default) when it ignores the SIGIO
# that asks it to. The sandbox takes a read lease on a file of a read-only mapping and
# ignores SIGIO; checked from outside: how long the host takes to open it for writing.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
plan 2
mkdir -p "$TMP/ro" "$TMP/cwd"
echo data > "$TMP/ro/f"
cat > "$TMP/ro/lease.py" <<'PYEOF'
import fcntl, signal, sys, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
f = open(sys.argv[1], "rb")
try:
    fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    print("LEASE held", flush=True)
except OSError as e:
    print("LEASE refused:", e, flush=True)
time.sleep(6)
PYEOF
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: a host writer opens the file in time" "no $mode mode"
		continue
	fi
	(cd "$TMP/cwd" && exec "$MOAT" run -q --mode "$mode" --ro-bind "$TMP/ro" -- \
		"$PY" "$TMP/ro/lease.py" "$TMP/ro/f" > "$TMP/out.$mode" 2>&1) &
	pid=$!
	track_pid "$pid"
	for _ in $(seq 50); do [ -s "$TMP/out.$mode" ] && break; sleep 0.1; done
	start=$(date +%s%N)
	timeout 10 "$PY" -c "open('$TMP/ro/f', 'ab').close()"
	rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	wait "$pid"
	[ "$rc" -eq 0 ] && [ "$ms" -lt 3000 ]
	ok $? "$mode: a host writer opens the file in time (${ms} ms, rc $rc)" "$(cat "$TMP/out.$mode")"
done
finish
