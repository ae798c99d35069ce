#!/usr/bin/env bash
# A slow name lookup holds up neither the run's end nor the sandbox's other calls.
# Namespaced mode answers DNS itself, looking allowed names up on the host; for a
# wildcard rule the program picks the name, and with it servers that may answer
# slowly (here *.example.com, the query q.example.com). The responder ran in the supervisor's main loop under the lock every network
# call takes: a few queries held up --timeout, the operator's signals and every
# connect, send and bind for as long as the lookups took. A test_hooks build
# (MOAT_TEST_DNS_DELAY) makes each lookup 5 s slower; the sandbox sends 6 queries,
# then makes a connect that is refused and writes a file. Checked from outside: how
# long moat took with --timeout 2 (it still waits for the lookup in progress, at most
# one; before, it served lookup after lookup first), and the file.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
have_mode namespaced || skip_all "no namespaced mode (the only one with a DNS responder)"
MOAT_TEST_DNS_DELAY=1 "$MOAT" run -q -- true 2>&1 | grep -q "test hook" ||
	skip_all "not a test_hooks build (MOAT_TEST_DNS_DELAY)"
plan 3
mkdir "$TMP/ws"
cat > "$TMP/ws/q.py" <<'PYEOF'
import socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(6):
    q = struct.pack(">HHHHHH", i + 1, 0x0100, 1, 0, 0, 0)
    q += b"\x01q\x07example\x03com\x00" + struct.pack(">HH", 1, 1)
    s.sendto(q, ("127.0.0.1", 53))
time.sleep(0.5)  # the responder is looking the first one up now
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    c.connect(("192.0.2.1", 80))  # no rule: refused by the supervisor
except OSError as e:
    open("connected", "w").write(str(e))
time.sleep(60)
PYEOF
start=$(date +%s%N)
out=$(cd "$TMP/ws" && MOAT_TEST_DNS_DELAY=5000 "$MOAT" run -q --mode namespaced --timeout 2 \
	--allow-net "*.example.com:443" -- python3 q.py 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 9000 ]
ok $? "--timeout 2 ends the run in time while lookups are slow (${ms} ms, rc $rc)" "$out"
[ -s "$TMP/ws/connected" ]
ok $? "a connect is answered while lookups are slow ($(cat "$TMP/ws/connected" 2>&1))" "$out"
# control: without the hook the same run also ends by its timeout
out=$(cd "$TMP/ws" && rm -f connected && "$MOAT" run -q --mode namespaced --timeout 2 \
	--allow-net "*.example.com:443" -- python3 q.py 2>&1)
rc2=$?
[ "$rc2" -eq "$rc" ] && [ -s "$TMP/ws/connected" ]
ok $? "control: the same run without the hook ends the same way (rc $rc2)" "$out"
finish
