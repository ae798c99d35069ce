#!/usr/bin/env bash
# What moat's command line does around the command: a piped or redirected stdin reaches
# it (a terminal does not, unless --stdin); `policy show` prints a policy file that
# --policy and `policy check` read back to the same rules; -v prints a bounded number
# of lines for a program that is denied in a loop, and the totals still count all.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 15
PY=/usr/bin/python3
mkdir "$TMP/cwd"
cd "$TMP/cwd" || exit 1

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(echo 'print(6 * 7)' | timeout 60 "$MOAT" run -q --mode $mode -- $PY - 2>&1)
	[ "$out" = 42 ]
	ok $? "$mode: piped stdin reaches the command (echo ... | moat run -- python3 -)" "$out"

	printf 'line1\nline2\n' >"$TMP/in.txt"
	out=$(timeout 60 "$MOAT" run -q --mode $mode -- wc -l <"$TMP/in.txt" 2>&1)
	[ "$out" = 2 ]
	ok $? "$mode: a redirected file reaches the command" "$out"

	out=$(echo 'print(1)' | timeout 60 "$MOAT" run -q --mode $mode --no-stdin -- $PY - 2>&1)
	[ -z "$out" ]
	ok $? "$mode: --no-stdin gives /dev/null" "$out"

	# a terminal stays the user's: stdin is /dev/null unless --stdin (needs script(1))
	if command -v script >/dev/null; then
		out=$(timeout 60 script -qec "$MOAT run -q --mode $mode -- sh -c 'readlink /proc/self/fd/0'" /dev/null </dev/null 2>&1 | tr -d '\r')
		[ "$out" = /dev/null ]
		ok $? "$mode: a terminal stdin is replaced by /dev/null" "$out"
	else
		skip "$mode: a terminal stdin is replaced by /dev/null" "script(1) is not installed"
	fi
done

# policy show: text that reads back
args=(--bind "$TMP/cwd:/work" --hide '*.secret' --deny ./private --tmpfs '/scratch' --file /etc/motd 'hello
world' --chdir /work --allow-net tcp:example.com:443 --deny-net 10.0.0.0/8 --allow-bind udp:5353)
"$MOAT" policy show "${args[@]}" >"$TMP/p.moat" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && head -1 "$TMP/p.moat" | grep -qx 'moat-policy 1' && ! grep -q '^[[{]' "$TMP/p.moat"
ok $? "policy show prints a policy file, not JSON" "$(head -c 1500 "$TMP/p.moat"; cat "$TMP/err")"

"$MOAT" policy check "$TMP/p.moat" >"$TMP/out" 2>&1
ok $? "policy check accepts it" "$(cat "$TMP/out")"

"$MOAT" policy show --policy "$TMP/p.moat" >"$TMP/p2.moat" 2>"$TMP/err"
diff <(grep -v '^#' "$TMP/p.moat") <(grep -v '^#' "$TMP/p2.moat") >"$TMP/diff"
ok $? "read back with --policy, it shows the same policy" "$(cat "$TMP/diff" "$TMP/err")"

# the rules themselves, as JSON, without what records where each came from
strip() { jq -S 'del(.sha256) | .policy.fs.rules |= map(del(.arg)) | .policy.net |= map_values(map(del(.origin)))'; }
"$MOAT" policy show --json "${args[@]}" | strip >"$TMP/j1"
"$MOAT" policy show --json --policy "$TMP/p.moat" | strip >"$TMP/j2"
diff "$TMP/j1" "$TMP/j2" >"$TMP/diff" && [ -s "$TMP/j1" ]
ok $? "and the same rules as the options it came from" "$(head -c 2000 "$TMP/diff")"

out=$(cd / && timeout 60 "$MOAT" run -q --policy "$TMP/p.moat" -- sh -c 'cat /etc/motd; echo; pwd' 2>/dev/null)
[ "$out" = "$(printf 'hello\nworld\n/work')" ]
ok $? "a run with it has the file content and the working directory" "$out"

# -v in a loop of 100000 denied opens: few lines, and no slower than without -v
loop='
for i in range(100000):
    try: open("/etc/shadow")
    except OSError: pass
'
mode=namespaced; have_mode namespaced || mode=unnamespaced
# -v keeps read-only opens trapped where -q lets them be native (root, namespaced): the
# time to compare is the printing's, so both runs trap them where a test hook can say so
hooks=; grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null && hooks=1
env_same=(env); [ -n "$hooks" ] && env_same+=(MOAT_TEST_NO_FANOTIFY=1)
t0=$(date +%s%N)
timeout 300 "${env_same[@]}" "$MOAT" run -q --mode $mode -- $PY -c "$loop" 2>/dev/null
t1=$(date +%s%N)
timeout 300 "${env_same[@]}" "$MOAT" run -v --mode $mode -- $PY -c "$loop" 2>"$TMP/err" >/dev/null
rc=$?
t2=$(date +%s%N)
quiet_ms=$(( (t1 - t0) / 1000000 )); verbose_ms=$(( (t2 - t1) / 1000000 ))
lines=$(grep -c denied "$TMP/err")
# at most 10 lines and 2 notes per second of the run, and a summary
max=$(( (verbose_ms / 1000 + 2) * 12 + 1 ))
[ $rc -eq 0 ] && [ "$lines" -le "$max" ] && grep -q '100000 denied calls' "$TMP/err"
ok $? "-v over 100000 denied opens prints $lines lines (at most $max) and still counts them all" "$(head -20 "$TMP/err"; tail -3 "$TMP/err")"
if [ -z "$hooks" ] && [ "$(id -u)" -eq 0 ] && [ $mode = namespaced ]; then
	skip "-v costs little time" "without test hooks -q opens natively what -v traps: no like-for-like pair"
else
	[ $rc -eq 0 ] && [ $verbose_ms -le $(( quiet_ms * 3 / 2 + 3000 )) ]
	ok $? "-v costs little time: ${verbose_ms} ms against ${quiet_ms} ms with -q" ""
fi
finish
