#!/usr/bin/env bash
# Invariant 2: notification ids are re-validated after every read of tracee memory,
# before acting. A test_hooks build of moat (scripts/test makes one) can stretch the
# window between reading a mkdir's path and that check; the caller is SIGKILLed inside
# it. If moat acted on its copy without re-validating, the directory would appear on
# the host for a process that no longer exists. Checked from outside, in both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
W="$TMP/work"
mkdir -p "$W"
# A report asks for the change set, which keeps creates with moat: in a plain run a
# mkdir is native (nothing to delay) where moat was started by root.
KEEP="--report $TMP/report.json"
cd "$W" || exit 1

MOAT_TEST_NOTIFY_DELAY=300:mkdir,mkdirat "$MOAT" run -q $KEEP -- "$PY" -c 'import os; os.mkdir("probe")' \
	2>"$TMP/err" || true
grep -q "test hook" "$TMP/err" || skip_all "moat was built without -Dtest_hooks=true"
rmdir probe 2>/dev/null

plan 4
for mode in namespaced unnamespaced; do
	# Control: with the same delay and nobody interrupting, the mkdir does happen.
	MOAT_TEST_NOTIFY_DELAY=300:mkdir,mkdirat "$MOAT" run -q $KEEP --mode "$mode" -- "$PY" -c \
		'import os; os.mkdir(os.getcwd() + "/control")' 2>/dev/null
	[ -d "$W/control" ]
	ok $? "$mode: a delayed mkdir of a live caller is performed (control)"
	rmdir "$W/control" 2>/dev/null

	# The caller dies while the supervisor holds its copy of the path.
	MOAT_TEST_NOTIFY_DELAY=800:mkdir,mkdirat "$MOAT" run -q $KEEP --mode "$mode" -- "$PY" -c '
import os, signal, time
victim = os.getcwd() + "/victim"   # absolute: nothing else of the caller is needed
pid = os.fork()
if pid == 0:
    os.mkdir(victim)     # waits in the supervisor, between its read and the id check
    os._exit(0)
time.sleep(0.3)
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
time.sleep(1.2)          # outlive the supervisor'"'"'s delay, so its decision is made
' 2>/dev/null
	[ ! -e "$W/victim" ]
	ok $? "$mode: nothing is done for a caller that died after its memory was read" \
		"$(ls -la "$W")"
	rmdir "$W/victim" 2>/dev/null
done
finish
