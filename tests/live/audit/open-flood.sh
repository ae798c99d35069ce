#!/usr/bin/env bash
# --audit with native read-only opens: a program that opens files faster than the
# recorder reads their events. The kernel queues every event (FAN_UNLIMITED_QUEUE) in
# memory charged to the supervisor, not the sandbox, and teardown reads them all before
# the run ends: the backlog grows for as long as the program keeps its pace, and the run
# outlives its --timeout by the time the recorder needs to catch up. Distinct files
# (more than the kernel compares when it merges an event into a queued one) so that
# no event merges away. Checked from outside: the wall time of the whole run.
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
plan 3

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
[ "$(id -u)" -eq 0 ] || skip_all "native opens under --audit need moat started by root (fanotify)"

"$PY" -c '
import os
os.mkdir("many")
for i in range(40000):
    open("many/%d" % i, "w").close()
'
cat >flood.py <<'PYEOF'
import os
names = ["many/%d" % i for i in range(40000)]
while True:
    for p in names:
        os.close(os.open(p, os.O_RDONLY))
PYEOF

start=$(date +%s%N)
out=$(timeout 300 "$MOAT" run -q --output-in-workspace --timeout 8 --audit f.moat -- "$PY" flood.py 2>&1)
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
[ $rc -eq 124 ] && "$MOAT" audit dump --json f.moat 2>/dev/null | jq -c 'select(.type=="sys" and .decision=="native") | .resolved' | grep -q '/many/'
ok $? "the flood ran until its --timeout, and its opens are in the stream (rc $rc)" "$out"

[ "$took" -lt 12000 ]
todo $? "the run ends within 4 s of its 8 s --timeout (it took $took ms; load $(cut -d' ' -f1 /proc/loadavg))" \
	"the queue of open events is unbounded and teardown reads all of it: no backpressure on the opener yet"

# The stubs' permission events share the recorder's thread: an open of a hidden file
# waits for its answer (EPERM) while the thread reads a flood of open events. It must
# be answered within a second whatever the flood, not once the flood stops.
echo "moat-secret-$RANDOM" >k.env
cat >starve.py <<'PYEOF'
import os, threading, time
names = ["many/%d" % i for i in range(40000)]
stop = time.time() + 6
def flood():
    while time.time() < stop:
        for p in names:
            os.close(os.open(p, os.O_RDONLY))
t = threading.Thread(target=flood)
t.start()
time.sleep(1.5)
t0 = time.time()
try:
    open("k.env").read()
    print("READ-HIDDEN")
except OSError as e:
    print("DENIED", e.errno, "after %d ms" % ((time.time() - t0) * 1000))
t.join()
PYEOF
out=$(timeout 120 "$MOAT" run -q --output-in-workspace --hide '**/*.env' --audit s.moat -- "$PY" starve.py 2>&1)
ms=$(sed -n 's/^DENIED 1 after \([0-9]*\) ms$/\1/p' <<<"$out")
[ -n "$ms" ] && [ "$ms" -lt 1000 ]
ok $? "a hidden file's open during a flood of opens is refused within a second (${ms:-?} ms; load $(cut -d' ' -f1 /proc/loadavg))" "$out"
finish
