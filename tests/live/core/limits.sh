#!/usr/bin/env bash
# Limits for the whole run and the whole tree (issue 2, docs/architecture.md invariant 5):
# --timeout, --pids (a fork bomb), --memory, and the tree dying with the
# command. Every check looks from outside: exit status, elapsed time, the
# run's cgroup counters, processes found by a unique marker in their argv.
. "${MOAT_SRC:?}/tests/lib/tap.sh"
MODES=(namespaced unnamespaced)
plan $((9 * ${#MODES[@]}))

WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1
PY=/usr/bin/python3

now() { echo "${EPOCHREALTIME/./}"; } # microseconds

# Processes whose command line holds MARKER, as "pid args" lines.
survivors() { pgrep -af -- "$1" | grep -v "pgrep" || true; }
# kill_marked MARKER: end what a failing case left behind (found by our marker).
kill_marked() { local p; for p in $(pgrep -f -- "$1"); do kill -9 "$p" 2>/dev/null; done; }

# pids_cgroup PID: the pids-controller directory moat's child, the keeper, runs in
# (cgroup v1 pids hierarchy, else the v2 unified one), or nothing. Only the keeper:
# walking every descendant of a fork bomb takes seconds on a loaded machine, so a
# round that came before the keeper joined the run's cgroup used up the whole run.
pids_cgroup() {
	local p line path v2
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	for p in $(pgrep -P "$1"); do
		line=$(grep -m1 ':pids:' "/proc/$p/cgroup" 2>/dev/null)
		path=${line#*:pids:}
		if [ -n "$line" ] && [ "$path" != / ] && [ -f "/sys/fs/cgroup/pids$path/pids.current" ]; then
			echo "/sys/fs/cgroup/pids$path"; return
		fi
		line=$(grep -m1 '^0::' "/proc/$p/cgroup" 2>/dev/null)
		path=${line#0::}
		if [ -n "$v2" ] && [ -n "$line" ] && [ "$path" != / ] && [ -f "$v2$path/pids.current" ]; then
			echo "$v2$path"; return
		fi
	done
}

for m in "${MODES[@]}"; do
	# --timeout: a setsid'ed grandchild and the command both sleep; moat
	# must return 124 within 4 s and leave neither behind.
	marker="313.$$$RANDOM"
	t0=$(now)
	"$MOAT" run -q --mode "$m" --timeout 2 --report "$TMP/t.json" -- \
		/bin/sh -c "setsid sh -c 'sleep $marker' & sleep $marker" >/dev/null 2>&1
	rc=$?
	ms=$((($(now) - t0) / 1000))
	left=$(survivors "sleep $marker")
	if [ "$rc" -eq 124 ] && [ "$ms" -lt 4000 ]; then pass "--timeout 2 returns 124 in ${ms} ms [$m]"
	else fail "--timeout 2 returns 124 within 4 s [$m]" "exit $rc after $ms ms"; fi
	if [ -z "$left" ]; then pass "--timeout kills the setsid'ed grandchild too: no 'sleep $marker' left [$m]"
	else fail "--timeout kills the whole tree [$m]" "survivors: $left"; kill_marked "sleep $marker"; fi
	got=$(jq -c '[.exit_status, .reason]' "$TMP/t.json" 2>&1)
	if [ "$got" = '[124,"timeout"]' ]; then pass "--report after a timeout: exit_status 124, reason timeout [$m]"
	else fail "--report after a timeout [$m]" "report: $got"; fi

	# --pids 64: a fork bomb. Poll the run's pids cgroup every 100 ms from
	# here, time a `date` each round, and look for leftovers afterwards.
	marker="bomb$$x$RANDOM"
	"$MOAT" run -q --mode "$m" --pids 64 --timeout 8 --report "$TMP/p.json" -- \
		/bin/bash -c ": $marker; bomb(){ bomb|bomb& }; bomb; sleep 30" >/dev/null 2>&1 &
	mp=$!
	track_pid "$mp"
	cg=""; maxp=0; slow=0; worst=0; rounds=0
	while kill -0 "$mp" 2>/dev/null; do
		[ -z "$cg" ] && cg=$(pids_cgroup "$mp")
		if [ -n "$cg" ]; then
			c=$(cat "$cg/pids.current" 2>/dev/null || echo 0)
			[ "$c" -gt "$maxp" ] && maxp=$c
		fi
		t0=$(now); date >/dev/null; d=$((($(now) - t0) / 1000))
		[ "$d" -gt "$worst" ] && worst=$d
		[ "$d" -ge 1000 ] && slow=$((slow + 1))
		rounds=$((rounds + 1))
		sleep 0.1
	done
	wait "$mp"
	rc=$?
	peak=""
	[ -n "$cg" ] && [ -r "$cg/pids.peak" ] && peak=$(cat "$cg/pids.peak" 2>/dev/null)
	[ -n "$peak" ] && [ "$peak" -gt "$maxp" ] && maxp=$peak
	hits=$(jq '.limits.pids_limit_hits' "$TMP/p.json" 2>/dev/null)
	if [ "$rc" -eq 124 ]; then pass "fork bomb under --pids 64 ends by the timeout: 124 [$m]"
	else fail "fork bomb under --pids 64 ends by the timeout [$m]" "exit $rc"; fi
	if [ -z "$cg" ]; then
		# The run's cgroup is gone once moat has returned; if it never
		# showed up, the limit was not observable (say so in the report).
		fail "fork bomb never holds more than 64 processes [$m]" "no pids cgroup found for moat pid $mp (report: $(jq -c .limits "$TMP/p.json" 2>&1))"
	elif [ "$maxp" -gt 64 ]; then
		fail "fork bomb never holds more than 64 processes [$m]" "saw $maxp in $cg"
	elif [ "$maxp" -lt 32 ]; then
		fail "fork bomb never holds more than 64 processes [$m]" "only $maxp processes seen in $cg: the bomb did not run, the check would mean nothing"
	else
		pass "fork bomb never holds more than 64 processes: max $maxp${peak:+ (pids.peak $peak)}, ${hits:-?} fork refusals [$m]"
	fi
	if [ "$rounds" -ge 3 ] && [ "$slow" -eq 0 ]; then pass "host responsive during the bomb: $rounds dates, slowest ${worst} ms [$m]"
	else fail "host responsive during the bomb [$m]" "$slow of $rounds dates took 1 s or more (slowest $worst ms)"; fi
	left=$(survivors "$marker")
	if [ -z "$left" ]; then pass "nothing of the fork bomb left behind [$m]"
	else fail "nothing of the fork bomb left behind [$m]" "$(wc -l <<<"$left") survivors: $(head -3 <<<"$left")"; kill_marked "$marker"; fi

	# --memory 64M: 512 MiB in one allocation is killed, exit 137.
	"$MOAT" run -q --mode "$m" --memory 64M --report "$TMP/m.json" -- \
		"$PY" -c 'x = bytearray(512 << 20)' >/dev/null 2>&1
	rc=$?
	got=$(jq -c '[.exit_status, .reason]' "$TMP/m.json" 2>&1)
	if [ "$rc" -eq 137 ] && [ "$got" = '[137,"memory"]' ]; then pass "--memory 64M kills a 512 MiB allocation: 137, reason memory [$m]"
	else fail "--memory 64M kills a 512 MiB allocation [$m]" "exit $rc, report: $got"; fi

	# The tree dies with the command: a double-forked, setsid'ed orphan is
	# gone as soon as moat has returned.
	marker="317.$$$RANDOM"
	"$MOAT" run -q --mode "$m" -- /bin/sh -c "(setsid sleep $marker &) ; exit 0" >/dev/null 2>&1
	rc=$?
	left=$(survivors "sleep $marker")
	if [ "$rc" -eq 0 ] && [ -z "$left" ]; then pass "double-forked setsid orphan dies when the command exits [$m]"
	else fail "double-forked setsid orphan dies when the command exits [$m]" "exit $rc, survivors: ${left:-none}"; kill_marked "sleep $marker"; fi
done
finish
