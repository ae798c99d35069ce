#!/usr/bin/env bash
# A supervisor killed by SIGKILL cannot remove its private directories (the sandbox's
# /tmp backing under /tmp/moat-vfs-*, the skeleton under /dev/shm/moat-root-*); the next
# run removes them, and never those of a run that is still alive.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 5
have_mode namespaced || skip_all "the namespaced mode cannot start here"
command -v flock >/dev/null || skip_all "flock(1) (util-linux) is not installed"

# age DIR...: older than the sweep's grace period for new directories
age() { touch -m -d '-1 minute' "$@"; }

# A: writes into its /tmp, then is killed with SIGKILL.
WA=$(mktemp -d "$TMP/a.XXXXXX")
(cd "$WA" && exec "$MOAT" run -q -- sh -c 'echo left >/tmp/left; touch ready; exec sleep 60') &
a=$!; track_pid $a
wait_for "$WA/ready" || { fail "run A started" "no ready file"; finish; }
a_dirs=$(private_dirs $a)
kill -9 $a; wait $a 2>/dev/null
# its keeper and sandbox die with it (PR_SET_PDEATHSIG); wait until nothing holds a lock
for d in $a_dirs; do
	for _ in $(seq 50); do flock -n "$d" true 2>/dev/null && break; sleep 0.1; done
done
n_a=$(echo "$a_dirs" | grep -c .)
left=$(for d in $a_dirs; do [ -d "$d" ] && echo "$d"; done | grep -c .)
[ "$n_a" -ge 1 ] && [ "$left" -eq "$n_a" ]
ok $? "a SIGKILLed supervisor leaves its $n_a private directories behind" "held: $a_dirs; left: $left"
grep -rqs '^left$' $a_dirs
ok $? "and in them what its sandbox wrote to /tmp" "$a_dirs"

# B: alive while the sweep runs; waits for go, then reads its /tmp back.
WB=$(mktemp -d "$TMP/b.XXXXXX")
(cd "$WB" && exec "$MOAT" run -q -- sh -c 'echo kept >/tmp/x; touch ready
	for i in $(seq 100); do [ -e go ] && break; sleep 0.1; done; cat /tmp/x >out') &
b=$!; track_pid $b
wait_for "$WB/ready" || { fail "run B started" "no ready file"; finish; }
b_dirs=$(private_dirs $b)
age $a_dirs $b_dirs

# C: any run sweeps.
(cd "$TMP" && "$MOAT" run -q -- true)
gone=$(for d in $a_dirs; do [ -e "$d" ] && echo "$d"; done)
[ -z "$gone" ]
ok $? "the next run removes them" "still there: $gone"
kept=$(for d in $b_dirs; do [ -d "$d" ] || echo "$d"; done)
[ -n "$b_dirs" ] && [ -z "$kept" ]
ok $? "a live run's directories stay" "B held: ${b_dirs:-<none>}; removed: $kept"
touch "$WB/go"; wait $b
[ "$(cat "$WB/out" 2>/dev/null)" = kept ]
ok $? "and the live run still reads its /tmp afterwards" "out: $(cat "$WB/out" 2>&1)"
finish
