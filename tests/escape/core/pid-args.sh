#!/usr/bin/env bash
# Syscalls that name a process by pid (prlimit64, setpriority, sched_setscheduler,
# sched_setaffinity) reach only the sandbox's own processes. The kernel lets a process
# of the same uid change another's limits, nice value and scheduling, so without a
# check the sandbox could limit the supervisor (an RLIMIT_FSIZE kills it at its next
# write) or renice host processes. Each case names a process outside the sandbox (and
# the host's process group, which setpriority can name too) and
# then reads its limits, nice value and policy from outside, while the run still holds.
# A control changes the same things on the sandbox's own child.
. "${MOAT_SRC:?}/tests/lib/tap.sh"

plan 10
command -v prlimit >/dev/null && command -v renice >/dev/null && command -v chrt >/dev/null ||
	skip_all "prlimit, renice and chrt (util-linux) are needed"
WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1

limit_of() { awk -v n="$2" '$0 ~ n { print $(NF-2) " " $(NF-1); exit }' "/proc/$1/limits" 2>/dev/null; }
nice_of() { ps -o ni= -p "$1" | tr -d ' '; }
policy_of() { chrt -p "$1" 2>/dev/null | sed -n 's/.*scheduling policy: //p'; }

# A host process of our uid that the sandbox will try to reach.
sleep 300 &
HOST=$!
track_pid "$HOST"

for mode in namespaced unnamespaced; do
	rm -f ready out.txt
	# $$ of the sh that execs moat is moat's pid; the sandbox learns it from --setenv.
	# The command tries each call on the supervisor, on the keeper (its parent: pid 1 in
	# a pid namespace, moat's child otherwise) and on the host sleep, then holds the run
	# open until the checks below are done.
	sh -c 'exec "$0" run -q --mode "$1" --setenv HOST "$2" --setenv PG "$3" --setenv SUP $$ \
		-- sh -c "$4"' "$MOAT" "$mode" "$HOST" "$(ps -o pgid= -p "$HOST" | tr -d ' ')" '
		for p in $SUP $PPID $HOST; do
			prlimit --pid $p --core=12345:12345 && echo "prlimit $p worked"
			prlimit --pid $p --fsize=4096 && echo "fsize $p worked"
			renice -n 13 -p $p >/dev/null && echo "renice $p worked"
			taskset -p 1 $p >/dev/null && echo "taskset $p worked"
			chrt -f -p 1 $p && echo "chrt $p worked"
		done
		renice -n 13 -g $PG >/dev/null && echo "renice of the host process group $PG worked"
		sleep 30 & c=$!
		prlimit --pid $c --nofile=77:77 && renice -n 5 -p $c >/dev/null && echo "own child ok $(cut -d" " -f19 /proc/$c/stat)"
		kill $c
		touch ready; sleep 5' >out.txt 2>&1 &
	moat=$!
	for _ in $(seq 100); do [ -e ready ] && break; sleep 0.1; done
	keeper=$(pgrep -P "$moat" | head -1)
	sup_core=$(limit_of "$moat" "core file size")
	sup_fsize=$(limit_of "$moat" "file size")
	keeper_core=$(limit_of "$keeper" "core file size")
	host_core=$(limit_of "$HOST" "core file size")
	sup_nice=$(nice_of "$moat") keeper_nice=$(nice_of "$keeper") host_nice=$(nice_of "$HOST")
	host_policy=$(policy_of "$HOST")
	wait "$moat"
	rc=$?
	chrt -o -p 0 "$HOST" 2>/dev/null; renice -n 0 -g "$(ps -o pgid= -p "$HOST")" >/dev/null 2>&1

	[ -e ready ] || { fail "$mode: the run reached its checks" "exit $rc: $(cat out.txt)"; }
	if [ "$sup_core" != "12345 12345" ] && [ "$sup_fsize" != "4096 4096" ] && [ "$sup_nice" != 13 ]; then
		pass "$mode: the supervisor's limits and nice value are unchanged"
	else
		fail "$mode: the supervisor's limits and nice value are unchanged" \
			"core '$sup_core' fsize '$sup_fsize' nice '$sup_nice'; sandbox: $(cat out.txt)"
	fi
	if [ -n "$keeper" ] && [ "$keeper_core" != "12345 12345" ] && [ "$keeper_nice" != 13 ]; then
		pass "$mode: the keeper's limits and nice value are unchanged"
	else
		fail "$mode: the keeper's limits and nice value are unchanged" \
			"keeper '$keeper' core '$keeper_core' nice '$keeper_nice'; sandbox: $(cat out.txt)"
	fi
	if [ "$host_core" != "12345 12345" ] && [ "$host_nice" != 13 ] && [ "$host_policy" = SCHED_OTHER ]; then
		pass "$mode: a host process's limits, nice value and policy are unchanged"
	else
		fail "$mode: a host process's limits, nice value and policy are unchanged" \
			"core '$host_core' nice '$host_nice' policy '$host_policy'; sandbox: $(cat out.txt)"
	fi
	if [ "$rc" -eq 0 ] && ! grep -q worked out.txt; then
		pass "$mode: every call on a process outside the sandbox failed, moat exited 0"
	else
		fail "$mode: every call on a process outside the sandbox failed, moat exited 0" \
			"exit $rc: $(cat out.txt)"
	fi
	# control: the sandbox's own child may be limited and reniced
	grep -q "own child ok 5" out.txt
	ok $? "$mode: the sandbox's own child can be limited and reniced (control)" "$(cat out.txt)"
done
finish
