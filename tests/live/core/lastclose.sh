#!/usr/bin/env bash
# The stubs' fanotify groups are closed for the last time by a helper after moat exits
# (interposer/core/lastclose.h): that close may wait 12-22 ms for the kernel, and the run's
# exit no longer does. What is checked from outside, on the helper of one run (found
# by the pipe it shares with that supervisor, so that parallel runs do not mix): it
# holds the groups and its pipe and nothing else of moat's; it is in seccomp's strict
# mode with every catchable signal blocked, and no child of moat; killing it weakens
# nothing (a hidden file is still refused and reported); it ends once moat has; a run
# without marks (started by nobody) makes none, nor a moat that is its pid namespace's
# init (the helper would come back to it as a child).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "the stubs' marks need moat started by root"
have_mode namespaced || skip_all "the namespaced mode cannot start here"
plan 9

# pipe_inodes PID: the pipes PID holds, as "pipe:[N]"
pipe_inodes() { for f in /proc/"$1"/fd/*; do readlink "$f"; done 2>/dev/null | grep '^pipe:' | sort -u; }

# helper_of PID: the moat-lastclose process that shares a pipe with the supervisor PID
helper_of() {
	local sup_pipes p
	sup_pipes=$(pipe_inodes "$1")
	[ -n "$sup_pipes" ] || return 1
	for p in $(pgrep -x moat-lastclose); do
		if pipe_inodes "$p" | grep -qxF -f <(echo "$sup_pipes"); then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# fd_kinds PID: one line per fd: its link, with numbers taken out
fd_kinds() { for f in /proc/"$1"/fd/*; do readlink "$f"; done 2>/dev/null | sed 's/\[[0-9]*\]//' | sort; }

# gone PID: not there, or a zombie (its parent reaps it in its own time), within 5 s
gone() {
	for _ in $(seq 50); do
		[ -e /proc/"$1" ] || return 0
		[ "$(awk '/^State:/ {print $2}' /proc/"$1"/status 2>/dev/null)" = Z ] && return 0
		sleep 0.1
	done
	return 1
}

make_workspace
# start_run NAME ARGS...: moat run in the background, its command waiting for "go";
# sets PID (the supervisor) once the command is running
start_run() {
	local name=$1
	shift
	rm -f "$W/ready-$name" "$W/go-$name"
	(cd "$W" && exec "$MOAT" run -q "$@" -- sh -c '
		touch ready-'"$name"'
		for i in $(seq 200); do [ -e go-'"$name"' ] && break; sleep 0.05; done
		cat .env >out-'"$name"' 2>&1
		echo "cat=$?" >>out-'"$name"'') &
	PID=$!
	track_pid "$PID"
	wait_for "$W/ready-$name"
}

# 1-4: a plain run, its report saying the opens are native (the marks are there)
start_run plain --report "$TMP/r.json" || fail "the run did not start"
H=$(helper_of "$PID")
kinds=$(fd_kinds "$H")
[ -n "$H" ] && [ "$kinds" = "$(printf 'anon_inode:[fanotify]\npipe:')" ]
ok $? "the helper holds the stubs' group and its pipe, nothing else" "helper=${H:-none} fds: $(echo "$kinds" | tr '\n' ' ')"

st=$(cat /proc/"$H"/status 2>/dev/null)
seccomp=$(awk '/^Seccomp:/ {print $2}' <<<"$st")
blocked=$(awk '/^SigBlk:/ {print $2}' <<<"$st")
ppid=$(awk '/^PPid:/ {print $2}' <<<"$st")
# every signal but SIGKILL (9) and SIGSTOP (19), which no mask holds
[ "$seccomp" = 1 ] && [ "$blocked" = fffffffffffbfeff ] && [ -n "$ppid" ] && [ "$ppid" != "$PID" ]
ok $? "the helper is in seccomp's strict mode, blocks every signal, is no child of moat" \
	"Seccomp=$seccomp SigBlk=$blocked PPid=$ppid moat=$PID"

# Killed, it takes nothing with it: moat's own fd of the group keeps the marks working.
[ -n "$H" ] && kill -KILL "$H"
touch "$W/go-plain"
wait "$PID"
rc=$?
[ $rc -eq 0 ] && no_secret "$W/out-plain" "$SECRET" && grep -q 'cat=1' "$W/out-plain" &&
	grep -q 'Operation not permitted' "$W/out-plain" &&
	[ "$(jq -r '.denials.by_syscall.openat' "$TMP/r.json" 2>/dev/null)" = 1 ]
ok $? "with the helper killed, the hidden file is still refused (EPERM) and reported" \
	"rc=$rc out: $(tr '\n' ' ' <"$W/out-plain") denials: $(jq -c .denials "$TMP/r.json" 2>/dev/null)"

[ -n "$H" ] && gone "$H"
ok $? "that helper is gone" "helper=${H:-none}"

# 5-6: another run, the helper left alone: it ends once moat has
start_run second || fail "the run did not start"
H=$(helper_of "$PID")
touch "$W/go-second"
wait "$PID"
rc=$?
[ $rc -eq 0 ] && [ -n "$H" ] && gone "$H"
ok $? "a helper left alone ends once moat exits" "rc=$rc helper=${H:-none}"
no_secret "$W/out-second" "$SECRET"
ok $? "and the hidden file stayed hidden there too" "$(tr '\n' ' ' <"$W/out-second")"

# 7: --audit: the recorder's group as well
start_run audit --audit "$TMP/a.zst" || fail "the run did not start"
H=$(helper_of "$PID")
kinds=$(fd_kinds "$H")
touch "$W/go-audit"
wait "$PID"
[ "$kinds" = "$(printf 'anon_inode:[fanotify]\nanon_inode:[fanotify]\npipe:')" ]
ok $? "--audit: the helper holds both groups (stubs, open events) and its pipe" \
	"helper=${H:-none} fds: $(echo "$kinds" | tr '\n' ' ')"

# 8: started by nobody, no marks can be put on the stubs: no group, no helper
NW=$(mktemp -d "$TMP/nw.XXXXXX")
NHOME=$(mktemp -d "$TMP/nhome.XXXXXX")
chown 65534:65534 "$NW" "$NHOME"
chmod 755 "$TMP"
(cd "$NW" && exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$NHOME" \
	"$MOAT" run -q -- sh -c 'touch ready; for i in $(seq 100); do [ -e go ] && exit 0; sleep 0.05; done; exit 1') &
PID=$!
track_pid "$PID"
if wait_for "$NW/ready"; then
	H=$(helper_of "$PID")
	touch "$NW/go"
	wait "$PID"
	rc=$?
	[ $rc -eq 0 ] && [ -z "$H" ]
	ok $? "started by nobody (no marks): no helper" "rc=$rc helper=${H:-none}"
else
	skip "started by nobody (no marks): no helper" "moat started by nobody cannot run here"
fi
# 9: moat as the init of a pid namespace (a container's entry point): no helper
if command -v unshare >/dev/null; then
	rm -f "$W/ready-init" "$W/go-init"
	(cd "$W" && exec unshare --pid --fork --mount-proc --kill-child "$MOAT" run -q -- sh -c '
		touch ready-init
		for i in $(seq 200); do [ -e go-init ] && break; sleep 0.05; done
		cat .env >out-init 2>&1; echo "cat=$?" >>out-init') &
	U=$!
	track_pid "$U"
	if wait_for "$W/ready-init"; then
		M1=$(cat /proc/"$U"/task/*/children 2>/dev/null | awk '{print $1}')
		kids=$(for k in $(cat /proc/"$M1"/task/*/children 2>/dev/null); do cat /proc/"$k"/comm; done 2>/dev/null | sort | tr '\n' ' ')
		touch "$W/go-init"
		start=$(date +%s)
		wait "$U"
		rc=$?
		took=$(($(date +%s) - start))
		[ $rc -eq 0 ] && [ -n "$M1" ] && [[ "$kids" != *moat-lastclose* ]] && [ "$took" -lt 5 ] &&
			grep -q 'cat=1' "$W/out-init" && no_secret "$W/out-init" "$SECRET"
		ok $? "moat as a pid namespace's init makes no helper, and ends as before" \
			"rc=$rc moat=${M1:-none} its children: ${kids:-none} took ${took}s out: $(tr '\n' ' ' <"$W/out-init" 2>/dev/null)"
	else
		fail "moat as a pid namespace's init makes no helper, and ends as before" "the run did not start"
	fi
else
	skip "moat as a pid namespace's init makes no helper, and ends as before" "no unshare(1)"
fi
finish
