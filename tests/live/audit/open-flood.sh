#!/usr/bin/env bash
# --audit with native read-only opens: a program that opens files faster than the
# recorder reads their events. The kernel queues every event (FAN_UNLIMITED_QUEUE) in
# memory charged to the supervisor, not the sandbox, and teardown reads them all before
# the run ends; past a backlog of STUBWATCH_PACE_HIGH bytes each open waits for the
# recorder (a permission event, stubwatch.c pace()), so the backlog stays bounded and
# the run ends near its --timeout. Distinct files (more than the kernel compares when it
# merges an event into a queued one) so that no event merges away. Checked from outside:
# the wall time of the whole run, and the last files opened are in the stream.
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
plan 5

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
[ "$(id -u)" -eq 0 ] || skip_all "native opens under --audit need moat started by root (fanotify)"

"$PY" -c '
import os
os.mkdir("many")
for i in range(40000):
    open("many/%d" % i, "w").close()
'
# After every 1 000 opens the loop writes how many it made (to a file it opened once):
# at least that many are in the stream, whatever pace the recorder kept.
cat >flood.py <<'PYEOF'
import os
names = ["many/%d" % i for i in range(40000)]
count = os.open("count", os.O_WRONLY | os.O_CREAT, 0o644)
done = 0
while True:
    for i, p in enumerate(names):
        os.close(os.open(p, os.O_RDONLY))
        if i % 1000 == 999:
            done += 1000
            os.pwrite(count, b"%012d" % done, 0)
PYEOF

start=$(date +%s%N)
out=$(timeout 300 "$MOAT" run -q --output-in-workspace --timeout 8 --audit f.moat -- "$PY" flood.py 2>&1)
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
made=$(sed 's/^0*//' count 2>/dev/null)
recorded=$("$MOAT" audit dump --json f.moat 2>/dev/null |
	jq -r 'select(.type=="sys" and .decision=="native") | .resolved' | grep -c '/many/')
[ $rc -eq 124 ] && [ "${made:-0}" -gt 0 ] && [ "$recorded" -ge "$made" ]
ok $? "the flood ran until its --timeout, and each of its opens is in the stream (rc $rc; $made made, $recorded recorded)" "$out"

[ "$took" -lt 12000 ]
ok $? "the run ends within 4 s of its 8 s --timeout (it took $took ms; load $(cut -d' ' -f1 /proc/loadavg))"

# Paced, not sampled: a loop that ends by itself has every one of its opens in the
# stream, the second open of a file as well as the first (an event the kernel merged
# into one still queued would count once).
cat >twice.py <<'PYEOF'
import os
names = ["many/%d" % i for i in range(40000)]
for _ in range(2):
    for p in names:
        os.close(os.open(p, os.O_RDONLY))
print("opened", 2 * len(names))
PYEOF
out=$(timeout 300 "$MOAT" run -q --output-in-workspace --audit t.moat -- "$PY" twice.py 2>&1)
seen=$("$MOAT" audit dump --json t.moat 2>/dev/null |
	jq -r 'select(.type=="sys" and .decision=="native") | .resolved' |
	grep '/many/' | sort | uniq -c | awk '$1 == 2' | wc -l)
[ "$out" = "opened 80000" ] && [ "$seen" -eq 40000 ]
ok $? "each of 40000 files opened twice is in the stream twice ($seen files)" "$out"

# Opens of procfs cannot be paced (the kernel takes no permission mark there): past
# STUBWATCH_BACKLOG_MAX bytes of queued events the run is stopped, said, rather than
# the queue left to grow. A test_hooks build lowers the limit below the pacing mark,
# so that the flood above meets it.
if grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
	start=$(date +%s%N)
	out=$(MOAT_TEST_BACKLOG_MAX=65536 timeout 300 "$MOAT" run -q --output-in-workspace \
		--timeout 60 --audit o.moat -- "$PY" flood.py 2>&1)
	rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$took" -lt 30000 ] &&
		grep -q "opened files faster than the audit stream records them" <<<"$out"
	ok $? "a backlog past its limit stops the run, and moat says why (rc $rc, $took ms)" "$out"
else
	skip "a backlog past its limit stops the run" "a build without test_hooks (MOAT_TEST_BACKLOG_MAX)"
fi

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
