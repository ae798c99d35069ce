#!/usr/bin/env bash
# Escape suite for the core sandbox (issue 2): every case tries a way out of
# `moat run` and fails when it works. Each case runs in both modes where the
# mode changes what is being tested; one TAP line per case and mode.
#
# The fixture (escape-core.c) prints HELD / ESCAPED / SKIP lines; the cases
# whose effect lives outside the sandbox (files created after the supervisor
# died, processes left behind, bytes typed into a terminal, environment of the
# host) are checked here, from outside.
. "${MOAT_SRC:?}/tests/lib/tap.sh"
: "${FIX_ESCAPE_CORE:?FIX_ESCAPE_CORE must point at the escape-core fixture}"
HERE="$MOAT_SRC/tests/escape/core"
MODES=(namespaced unnamespaced)
NCASES=15
plan $((NCASES * ${#MODES[@]}))

# The workspace: the sandbox's read-write cwd. The fixture is copied in
# because the default profile does not map the build tree.
WS="$TMP/ws"
mkdir -p "$WS"
cp "$FIX_ESCAPE_CORE" "$WS/escape-core"
cd "$WS" || exit 1

# A mode moat cannot start in is skipped only when the kernel refuses what
# the mode needs (user namespaces for namespaced mode); otherwise every case
# of that mode fails, so a broken launcher never turns into a row of skips.
mode_ok() {
	local err
	err=$("$MOAT" run -q --mode "$1" -- /bin/true 2>&1) && return 0
	if [ "$1" = namespaced ] && ! unshare --user --map-root-user /bin/true 2>/dev/null; then
		mode_why="user namespaces are not available here"
		return 1
	fi
	mode_why="BROKEN: moat run --mode $1 -- /bin/true failed: $err"
	return 1
}

# fixture_case NAME MODE [MOAT OPTIONS...] -- FIXTURE ARGS...
# Passes when the fixture said HELD and moat ran it (exit 0).
fixture_case() {
	local name=$1 mode=$2 out rc
	shift 2
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	out=$("$MOAT" run -q --mode "$mode" "${opts[@]}" -- ./escape-core "$@" 2>"$TMP/err")
	rc=$?
	case "$out" in
	HELD*)
		if [ "$rc" -eq 0 ]; then pass "$name [$mode]: ${out#HELD }"
		else fail "$name [$mode]" "fixture said '$out' but moat exited $rc"; fi ;;
	SKIP*) skip "$name [$mode]" "${out#SKIP }" ;;
	*) fail "$name [$mode]" "moat exit $rc; fixture: ${out:-<nothing>}; stderr: $(head -c 600 "$TMP/err")" ;;
	esac
}

# int 0x80 outside the sandbox first: if the kernel has IA-32 emulation, the
# call works natively and only the filter can stop it (SIGSYS expected); if
# emulation is off, the kernel itself answers with SIGSEGV before the filter.
native_int80=$(./escape-core int80 2>&1)
# (the child prints "int80-returned N" before the fixture's verdict line)
case "$native_int80" in
*ESCAPED*) ia32=on ;;
*SEGV*) ia32=off ;;
*) ia32=unknown ;;
esac

case_int80() {
	local mode=$1 out rc
	out=$("$MOAT" run -q --mode "$mode" -- ./escape-core int80 2>"$TMP/err"); rc=$?
	case "$ia32:$out" in
	*:HELD\ *"killed by SYS"*) pass "int 0x80 (i386 getpid) [$mode]: killed by SIGSYS (the filter's non-native ABI kill)" ;;
	off:HELD-SIG*SEGV*)
		pass "int 0x80 (i386 getpid) [$mode]: killed by SIGSEGV: IA-32 emulation is off on this kernel, so the kernel refuses it before the filter (the filter's kill is not exercised here)" ;;
	*) fail "int 0x80 (i386 getpid) [$mode]" "IA-32 emulation $ia32 (native: $native_int80); in sandbox: ${out:-<nothing>} (moat exit $rc)" ;;
	esac
}

# The supervisor's pid is the pid of the shell that execs moat.
case_ptrace_supervisor() {
	local mode=$1 out
	out=$(bash -c 'exec "$MOAT" run -q --mode "$1" -- ./escape-core ptrace supervisor "$$"' _ "$mode" 2>"$TMP/err")
	case "$out" in
	HELD*) pass "ptrace(PTRACE_ATTACH/SEIZE) of the moat supervisor [$mode]: ${out#HELD }" ;;
	*) fail "ptrace of the moat supervisor [$mode]" "fixture: ${out:-<nothing>}; stderr: $(head -c 400 "$TMP/err")" ;;
	esac
}

# TIOCSTI through a pty the sandbox opens itself. The default profile does not
# map /dev/ptmx and /dev/pts: bind them so the filter is what stops the ioctl.
case_tiocsti_pty() {
	local mode=$1 variant=$2
	fixture_case "ioctl TIOCSTI${variant:+ with garbage in the upper 32 bits} on a pty opened inside" "$mode" \
		--bind /dev/ptmx --bind /dev/pts -- tiocsti $variant
}

# TIOCSTI into the terminal moat was started from (--tty): the byte must not be
# in that terminal's input queue afterwards, as read by pty-run.py outside.
case_tiocsti_tty() {
	local mode=$1 variant=$2 out name
	name="ioctl(0, TIOCSTI${variant:+|garbage<<32}) on the user's terminal (--tty)"
	if ! out=$(python3 "$HERE/pty-run.py" --raw "$MOAT" run -q --tty --mode "$mode" -- ./escape-core tiocsti_fd0 $variant 2>&1); then
		fail "$name [$mode]" "pty-run.py failed: $out"; return
	fi
	if ! grep -q "^UNREAD b''" <<<"$out"; then
		fail "$name [$mode]" "bytes reached the terminal's input queue: $(grep '^UNREAD' <<<"$out")"
	elif ! grep -q "^HELD" <<<"$out"; then
		fail "$name [$mode]" "$(tr '\n' ' ' <<<"$out")"
	else
		pass "$name [$mode]: $(grep '^HELD' <<<"$out" | tr -d '\r'), input queue empty"
	fi
}

# Fail closed: kill -9 the supervisor while the sandbox makes a name every 10 ms
# through a notified call (symlink: an open's create is the kernel's where nothing asks
# for the change set, and goes on until the sandbox is gone, a few ms after its
# supervisor, as any native call does). Afterwards no name may appear and no process of
# the sandbox may survive.
case_supervisor_killed() {
	local mode=$1 marker="moat-escape-$$-$RANDOM$RANDOM" dir="$WS/loop-$1" p i a b n left
	mkdir -p "$dir"
	"$MOAT" run -q --mode "$mode" -- ./escape-core loop_files "loop-$mode" "$marker" >/dev/null 2>&1 &
	p=$!
	track_pid "$p"
	for i in $(seq 50); do
		n=$(find "$dir" -mindepth 1 | wc -l)
		[ "$n" -ge 10 ] && break
		sleep 0.1
	done
	if [ "$n" -lt 10 ]; then
		fail "supervisor SIGKILLed mid-run [$mode]" "the fixture never got going: $n files"; return
	fi
	kill -9 "$p"
	wait "$p" 2>/dev/null
	a=$(find "$dir" -mindepth 1 | wc -l)
	sleep 1
	b=$(find "$dir" -mindepth 1 | wc -l)
	left=$(pgrep -f "$marker")
	for q in $left; do kill -9 "$q"; done
	if [ "$a" -ne "$b" ]; then
		fail "supervisor SIGKILLed mid-run [$mode]" "files went on appearing: $a right after the kill, $b one second later (survivors: ${left:-none})"
	elif [ -n "$left" ]; then
		fail "supervisor SIGKILLed mid-run [$mode]" "sandbox processes survived the supervisor: pids $left"
	else
		pass "supervisor SIGKILLed mid-run [$mode]: $a files, none after the kill, no sandbox process left"
	fi
}

# TOCTOU: a thread flips the path between allowed.txt and the hidden
# secret.txt while the main thread opens it 100 000 times.
case_toctou() {
	local mode=$1 out allowed failed
	echo ALLOWED >"$WS/allowed.txt"
	echo SECRET >"$WS/secret.txt"
	out=$("$MOAT" run -q --mode "$mode" --hide '**/secret.txt' -- ./escape-core toctou 100000 2>"$TMP/err")
	allowed=$(sed -n 's/.*allowed=\([0-9]*\).*/\1/p' <<<"$out")
	failed=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' <<<"$out")
	case "$out" in
	HELD*)
		# Both names must really have been opened: otherwise the race
		# never ran and the pass would mean nothing.
		if [ "${allowed:-0}" -gt 0 ] && [ "${failed:-0}" -gt 0 ]; then
			pass "TOCTOU path flip allowed.txt/secret.txt never reads SECRET [$mode]: ${out#HELD }"
		else
			fail "TOCTOU path flip [$mode]" "the race was not exercised: $out"
		fi ;;
	*) fail "TOCTOU path flip never reads SECRET [$mode]" "${out:-<nothing>}; stderr: $(head -c 400 "$TMP/err")" ;;
	esac
}

# The host's environment: a unique variable given to moat must not be visible
# inside, neither in the sandbox's own environment nor through the environ of
# any process the sandbox can name in /proc (pid 1, the parent, the
# supervisor's host pid, every numeric entry, relative to a /proc dirfd).
case_env_leak() {
	local mode=$1 mark="HOSTLEAK_$$_$RANDOM" out
	cat >"$WS/envleak.sh" <<-'EOF'
	sup=$1
	env
	for f in /proc/1/environ /proc/$PPID/environ /proc/$sup/environ /proc/[0-9]*/environ \
		/proc/self/../1/environ /proc/thread-self/../../1/environ; do
		tr '\000' '\n' <"$f"
	done 2>/dev/null
	cd /proc && for f in 1/environ "$sup/environ"; do tr '\000' '\n' <"$f"; done 2>/dev/null
	exit 0
	EOF
	out=$(HOST_SECRET="$mark" bash -c 'exec "$MOAT" run -q --mode "$1" -- /bin/sh ./envleak.sh "$$"' _ "$mode" 2>&1)
	if grep -q "$mark" <<<"$out"; then
		fail "host environment does not leak [$mode]" "$(grep -c "$mark" <<<"$out") line(s) with the host's HOST_SECRET: $(grep "$mark" <<<"$out" | head -3)"
	elif ! grep -q '^PATH=' <<<"$out"; then
		fail "host environment does not leak [$mode]" "the sandbox printed no environment at all: $(head -c 400 <<<"$out")"
	else
		pass "host environment does not leak (env, /proc/1, parent, supervisor, /proc/*/environ) [$mode]"
	fi
}

for mode in "${MODES[@]}"; do
	if ! mode_ok "$mode"; then
		for i in $(seq $NCASES); do
			case "$mode_why" in
			BROKEN*) fail "case $i [$mode]" "$mode_why" ;;
			*) skip "case $i [$mode]" "$mode_why" ;;
			esac
		done
		continue
	fi
	fixture_case "io_uring_setup never yields a ring" "$mode" -- io_uring
	fixture_case "ptrace(PTRACE_ATTACH) of the parent" "$mode" -- ptrace parent
	case_ptrace_supervisor "$mode"
	case_int80 "$mode"
	fixture_case "x32 syscall (0x40000000|39) killed by SIGSYS" "$mode" -- x32
	fixture_case "seccomp(NEW_LISTENER) refused (EPERM)" "$mode" -- listener
	case_tiocsti_pty "$mode" ""
	case_tiocsti_pty "$mode" garbage
	case_tiocsti_tty "$mode" ""
	case_tiocsti_tty "$mode" garbage
	fixture_case "unshare/clone with CLONE_NEWUSER/NEWNS refused" "$mode" -- namespaces
	fixture_case "process_vm_readv of the parent refused" "$mode" -- pvm_read
	case_supervisor_killed "$mode"
	case_toctou "$mode"
	case_env_leak "$mode"
done
finish
