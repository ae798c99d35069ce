#!/usr/bin/env bash
# The whole tree dies even when the supervisor cannot open a file at the end of the
# run. The sandbox used to get there by lowering RLIMIT_NOFILE of the supervisor and
# the keeper to 0 (prlimit64 on their pids): the kill of the cgroup, which opened
# cgroup.kill, and the /proc walks both failed, and a setsid'ed orphan outlived moat.
# Each run tries that attack, and in test_hooks builds MOAT_TEST_TEARDOWN_NOFILE=0 also
# takes the supervisor's fds away when the run ends (whatever else may exhaust them).
# The orphan must be gone when moat returns, checked with pgrep from outside.
. "${MOAT_SRC:?}/tests/lib/tap.sh"

plan 8
command -v prlimit >/dev/null || skip_all "prlimit (util-linux) is needed"
WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1

survivors() { pgrep -f -- "$1" || true; }
kill_marked() { local p; for p in $(pgrep -f -- "$1"); do kill -9 "$p" 2>/dev/null; done; }

for mode in namespaced unnamespaced; do
	for limits in "" "--pids 100"; do
		for ending in exit timeout; do
			marker="717.$$$RANDOM"
			if [ "$ending" = exit ]; then hold=":"; else hold="sleep 100 & "; fi
			# Every exec comes before the supervisor's limit (its exec check opens);
			# the keeper (the command's parent) is limited first.
			MOAT_TEST_TEARDOWN_NOFILE=0 sh -c 'exec "$0" run -q --mode "$1" $2 --timeout 3 \
				--setenv SUP $$ -- sh -c "$3"' "$MOAT" "$mode" "$limits" "
				(setsid sleep $marker </dev/null >/dev/null 2>&1 &)
				$hold
				sleep 0.3
				prlimit --pid \$PPID --nofile=0:0; prlimit --pid \$SUP --nofile=0:0
				wait" >out.txt 2>&1
			rc=$?
			left=$(survivors "sleep $marker")
			kill_marked "sleep $marker"
			name="$mode${limits:+ $limits}, the run ends by $ending: the setsid'ed orphan is gone when moat returns"
			if [ -z "$left" ] && { [ "$ending" = exit ] || [ "$rc" -eq 124 ]; }; then
				pass "$name"
			else
				fail "$name" "exit $rc; left: $left; moat: $(cat out.txt)"
			fi
		done
	done
done
finish
