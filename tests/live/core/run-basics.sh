#!/usr/bin/env bash
# moat run, the front door (issue 2): exit statuses, the seccomp filter being
# in place, the environment rebuilt from scratch, stdin and inherited fds,
# `moat syscalls --json` and `--report`. Real programs, checked from outside.
. "${MOAT_SRC:?}/tests/lib/tap.sh"
MODES=(namespaced unnamespaced)
plan $((12 * ${#MODES[@]} + 5))

WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1

# run MODE [OPTIONS...] -- CMD...: stdout in $out, stderr in $err, status in $rc
run() {
	local mode=$1
	shift
	out=$("$MOAT" run -q --mode "$mode" "$@" 2>"$TMP/stderr")
	rc=$?
	err=$(cat "$TMP/stderr")
}
# expect_rc NAME WANT: pass when $rc is WANT
expect_rc() {
	if [ "$rc" -eq "$2" ]; then pass "$1"; else fail "$1" "exit $rc, want $2; stdout: $out; stderr: $err"; fi
}

printf '#!/bin/sh\necho should-not-run\n' >"$WS/not-exec.sh"
chmod 644 "$WS/not-exec.sh"

for m in "${MODES[@]}"; do
	run "$m" -- /bin/echo hi
	if [ "$rc" -eq 0 ] && [ "$out" = hi ]; then pass "echo hi prints hi, exit 0 [$m]"
	else fail "echo hi prints hi, exit 0 [$m]" "exit $rc, stdout '$out', stderr: $err"; fi

	run "$m" -- /bin/sh -c 'exit 7'
	expect_rc "sh -c 'exit 7' exits 7 [$m]" 7

	run "$m" -- /nonexistent
	expect_rc "/nonexistent exits 127 [$m]" 127

	run "$m" -- ./not-exec.sh
	if [ "$rc" -eq 126 ] && [[ "$out" != *should-not-run* ]]; then pass "non-executable file exits 126 [$m]"
	else fail "non-executable file exits 126 [$m]" "exit $rc, stdout '$out', stderr: $err"; fi

	run "$m" -- /bin/sh -c 'kill -TERM $$'
	expect_rc "killed by SIGTERM exits 143 [$m]" 143

	run "$m" -- /bin/grep Seccomp: /proc/self/status
	if [ "$rc" -eq 0 ] && [[ "$out" =~ Seccomp:[[:space:]]+2 ]]; then pass "the command runs in seccomp filter mode (Seccomp: 2) [$m]"
	else fail "Seccomp: 2 [$m]" "exit $rc, stdout '$out', stderr: $err"; fi

	# The environment is rebuilt from scratch: a host variable is not passed,
	# --setenv and --keep-env are.
	out=$(HOST_SECRET=host-secret-$$ KEEP_ME=kept-$$ DROP_ME=dropped "$MOAT" run -q --mode "$m" \
		--setenv SET_ME "set value $$" --keep-env KEEP_ME -- /usr/bin/env 2>"$TMP/stderr")
	rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q '^PATH=' <<<"$out"; then
		fail "environment rebuilt from scratch [$m]" "exit $rc, env printed: $out; stderr: $(cat "$TMP/stderr")"
	elif grep -q "HOST_SECRET\|DROP_ME" <<<"$out"; then
		fail "environment rebuilt from scratch [$m]" "host variables reached the command: $(grep 'HOST_SECRET\|DROP_ME' <<<"$out")"
	else
		pass "environment rebuilt from scratch: no HOST_SECRET [$m]"
	fi
	if grep -qx "SET_ME=set value $$" <<<"$out" && grep -qx "KEEP_ME=kept-$$" <<<"$out"; then
		pass "--setenv NAME VALUE and --keep-env NAME pass exactly those [$m]"
	else
		fail "--setenv / --keep-env [$m]" "env printed: $out"
	fi

	# A piped stdin is passed (tests/live/vfs/cli-fidelity.sh); --no-stdin gives /dev/null.
	out=$(echo piped-$$ | "$MOAT" run -q --mode "$m" --no-stdin -- /bin/sh -c 'cat; readlink /proc/self/fd/0' 2>"$TMP/stderr")
	if [ "$out" = /dev/null ]; then pass "stdin is /dev/null with --no-stdin [$m]"
	else fail "stdin is /dev/null with --no-stdin [$m]" "command saw: $out; stderr: $(cat "$TMP/stderr")"; fi
	out=$(echo piped-$$ | "$MOAT" run -q --mode "$m" --stdin -- /bin/cat 2>"$TMP/stderr")
	if [ "$out" = "piped-$$" ]; then pass "--stdin passes stdin through [$m]"
	else fail "--stdin passes stdin through [$m]" "command saw: '$out'; stderr: $(cat "$TMP/stderr")"; fi

	# Inherited fds beyond 0-2 are closed: fd 7 is open (for writing, on a
	# host file) in the shell that starts moat.
	: >"$TMP/fd7"
	out=$("$MOAT" run -q --mode "$m" -- /bin/sh -c 'ls /proc/self/fd; echo leaked >&7' 7>"$TMP/fd7" 2>"$TMP/stderr")
	# ls holds one fd of its own on /proc/self/fd (3).
	fds=$(tr '\n' ' ' <<<"$out")
	if [ -s "$TMP/fd7" ]; then
		fail "inherited fds beyond 0-2 are closed [$m]" "the command wrote through fd 7: $(cat "$TMP/fd7")"
	elif [ "$fds" != "0 1 2 3 " ]; then
		fail "inherited fds beyond 0-2 are closed [$m]" "fds inside: $fds"
	else
		pass "inherited fds beyond 0-2 are closed (fd 7 of the caller is gone) [$m]"
	fi

	# --report: exit status and reason.
	rm -f "$TMP/report.json"
	"$MOAT" run -q --mode "$m" --report "$TMP/report.json" -- /bin/sh -c 'exit 7' 2>/dev/null
	rc=$?
	got=$(jq -c '[.exit_status, .reason, .mode]' "$TMP/report.json" 2>&1)
	if [ "$rc" -eq 7 ] && [ "$got" = "[7,\"exited\",\"$m\"]" ]; then pass "--report: exit_status 7, reason exited, mode $m [$m]"
	else fail "--report exit_status/reason/mode [$m]" "exit $rc, report: $got"; fi
done

# Usage errors are moat's own failure: 125, with the usage on stderr.
out=$("$MOAT" run --bogus -- /bin/true 2>"$TMP/stderr"); rc=$?
err=$(cat "$TMP/stderr")
if [ "$rc" -eq 125 ] && grep -qi usage <<<"$err"; then pass "--bogus exits 125 with a usage message on stderr"
else fail "--bogus exits 125 with a usage message" "exit $rc, stderr: $err"; fi

# moat syscalls --json: valid JSON, the name-bearing calls notified.
got=$("$MOAT" syscalls --json | jq -r '.[] | select(.name == "openat" or .name == "execve" or .name == "connect") | "\(.name)=\(.handling)"' 2>&1 | sort | tr '\n' ' ')
if [ "$got" = "connect=notify execve=notify openat=notify " ]; then pass "moat syscalls --json: openat, execve, connect handled by notify"
else fail "moat syscalls --json lists openat/execve/connect as notify" "got: $got"; fi

# -v: a denial is named on stderr, and the program gets a plain errno.
out=$("$MOAT" run -v -- /bin/cat /etc/shadow 2>"$TMP/stderr"); rc=$?
err=$(cat "$TMP/stderr")
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'denied openat "/etc/shadow"' <<<"$err"; then
	pass "-v names the denied openat of /etc/shadow; cat fails and reads nothing"
else
	fail "-v names the denied openat of /etc/shadow" "exit $rc, stdout: $(head -c 200 <<<"$out"), stderr: $err"
fi

# Unprivileged: unnamespaced mode as nobody. The binary and a scratch cwd must
# be reachable by nobody.
nobody_check() {
	local dir path
	if ! command -v setpriv >/dev/null; then skip "$1" "setpriv (util-linux) not installed"; return 1; fi
	if [ "$(id -u)" -ne 0 ]; then skip "$1" "the test runs unprivileged already"; return 1; fi
	if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$MOAT"; then
		skip "$1" "nobody cannot execute $MOAT (a directory on its path is not searchable)"; return 1
	fi
	return 0
}
NOBODY_WS="$TMP/nobody"
mkdir -p "$NOBODY_WS"
chmod 755 "$TMP"; chmod 777 "$NOBODY_WS"
name="Seccomp: 2 as an unprivileged user (nobody) in unnamespaced mode"
if nobody_check "$name"; then
	out=$(cd "$NOBODY_WS" && timeout -s KILL 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$MOAT" run -q --mode unnamespaced -- /bin/grep Seccomp: /proc/self/status 2>"$TMP/stderr")
	rc=$?
	if [ "$rc" -eq 0 ] && [[ "$out" =~ Seccomp:[[:space:]]+2 ]]; then pass "$name"
	else fail "$name" "exit $rc$([ $rc -eq 137 ] && echo ' (killed by the 20 s guard: moat hung)'), stdout '$out', stderr: $(cat "$TMP/stderr")"; fi
fi
name="echo hi as nobody in unnamespaced mode"
if nobody_check "$name"; then
	out=$(cd "$NOBODY_WS" && timeout -s KILL 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$MOAT" run -q --mode unnamespaced -- /bin/echo hi 2>"$TMP/stderr")
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$out" = hi ]; then pass "$name"
	else fail "$name" "exit $rc$([ $rc -eq 137 ] && echo ' (killed by the 20 s guard: moat hung)'), stdout '$out', stderr: $(cat "$TMP/stderr")"; fi
fi
finish
