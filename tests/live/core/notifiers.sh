#!/usr/bin/env bash
# Several notifier threads (MOAT_NOTIFIERS=4; the default is one): four sandboxed
# processes open, stat and try a hidden .env at the same time. Every read must see the
# file's content, every .env attempt must fail without the secret, the audit stream must
# hold every decision and verify, and the supervisor must really have run 4 notifiers
# (its thread count, read from /proc while it runs). --strict-hide, so that namespaced
# mode traps (and records) the stats too, and a hidden .env is absent to them.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 10
command -v python3 >/dev/null || skip_all "python3 is needed for the parallel workload"

N=1500 # iterations per process; every 25th also tries .env (a denial's stack costs ms)
P=$((N / 25))
WORKLOAD='
import os, sys
def work():
    good = leaked = 0
    for i in range(N):
        with open("a.txt") as f:
            good += f.read() == "visible\n"
        if i % 25:
            continue
        for probe in (lambda: open(".env").read(), lambda: os.stat(".env")):
            try:
                probe(); leaked += 1
            except FileNotFoundError:
                pass
    print("good=%d leaked=%d" % (good, leaked), flush=True)
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        work(); os._exit(0)
    kids.append(pid)
sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids))
'

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 5); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	make_workspace
	rm -f "$TMP/a.moat"
	(cd "$W" && MOAT_NOTIFIERS=4 "$MOAT" run -q --mode "$mode" --bind "$W" --chdir "$W" \
		--hide '**/.env' --strict-hide --output-in-workspace --audit "$TMP/a.moat" -- python3 -c "N = $N$WORKLOAD" \
		>"$TMP/out" 2>"$TMP/err") &
	sub=$!
	track_pid "$sub"
	# The supervisor's threads while the workload runs: main + 4 notifiers (+ audit writer).
	most=0
	for _ in $(seq 200); do
		# the subshell may have exec'd moat itself
		if [ "$(cat "/proc/$sub/comm" 2>/dev/null)" = moat ]; then sup=$sub
		else sup=$(pgrep -n -P "$sub" -x moat || true); fi
		if [ -n "$sup" ] && [ -d "/proc/$sup/task" ]; then
			n=$(ls "/proc/$sup/task" 2>/dev/null | wc -l)
			[ "$n" -gt "$most" ] && most=$n
		fi
		kill -0 "$sub" 2>/dev/null || break
		sleep 0.02
	done
	wait "$sub"
	rc=$?
	diag="rc=$rc; stdout: $(head -c 600 "$TMP/out"); stderr: $(head -c 600 "$TMP/err")"

	[ "$most" -ge 5 ]
	ok $? "$mode: the supervisor ran 4 notifier threads (saw $most threads)" "$diag"
	good=$(grep -o 'good=[0-9]*' "$TMP/out" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
	[ $rc -eq 0 ] && [ "${good:-0}" -eq $((4 * N)) ]
	ok $? "$mode: all $((4 * N)) concurrent reads saw the file (got ${good:-none})" "$diag"
	leaked=$(grep -o 'leaked=[0-9]*' "$TMP/out" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
	[ "$(grep -c 'leaked=' "$TMP/out")" -eq 4 ] && [ "${leaked:-1}" -eq 0 ] &&
		no_secret "$TMP/out" "$SECRET" && no_secret "$TMP/err" "$SECRET"
	ok $? "$mode: no .env open or stat succeeded in any process" "$diag"
	"$MOAT" audit verify "$TMP/a.moat" >"$TMP/verify" 2>&1
	ok $? "$mode: the audit stream verifies" "$(cat "$TMP/verify")"
	denied=$("$MOAT" audit dump --json --filter 'decision=denied' "$TMP/a.moat" |
		jq -r 'select(.path == ".env") | .syscall' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	[ "$denied" = " $((4 * P)) newfstatat; $((4 * P)) openat;" ]
	ok $? "$mode: the stream records each of the $((8 * P)) .env denials" "got: $denied"
done
finish
