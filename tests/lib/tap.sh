#!/usr/bin/env bash
# Minimal TAP producer for the live and escape suites. Source it, then:
#   plan N | ok COND "name" | pass "name" | fail "name" "diag" | skip "name" "reason"
#   skip_all "reason" (exits 0 with "1..0 # SKIP reason") | finish (exit status)
# Every check must observe an effect from outside the sandbox: a file on the host,
# bytes a server received, a process that is or is not there.
set -u
: "${MOAT:?MOAT must point at the moat binary (meson sets it)}"
_tap_n=0
_tap_failed=0

plan() { echo "1..$1"; }
pass() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1"; }
fail() {
	_tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $1"
	[ $# -ge 2 ] && printf '%s\n' "$2" | sed 's/^/# /'
	return 0
}
# todo COND "name" "reason": a known hole, reported as TAP TODO (not a failure) until fixed
todo() {
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $_tap_n - $2 # TODO $3"; else echo "not ok $_tap_n - $2 # TODO $3"; fi
}
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP $2"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
# ok EXIT_STATUS_OF_A_TEST "name" [diag]
ok() { if [ "$1" -eq 0 ]; then pass "$2"; else fail "$2" "${3:-}"; fi; }
finish() { [ "$_tap_failed" -eq 0 ]; exit $?; }
# --cow mounts an overlay as root: skip the whole test, with the reason, where it cannot.
need_cow() {
	[ "$(id -u)" -eq 0 ] || skip_all "--cow mounts an overlay: needs root"
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
	grep -qw overlay /proc/filesystems || skip_all "no overlayfs in this kernel"
}

# A scratch directory removed at exit; processes we started are ended by pid.
TMP=$(mktemp -d /tmp/moat-test.XXXXXX)
_tap_pids=()
track_pid() { _tap_pids+=("$1"); }
_tap_cleanup() {
	for p in "${_tap_pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap _tap_cleanup EXIT
