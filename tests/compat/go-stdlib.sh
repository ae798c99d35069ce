#!/usr/bin/env bash
# Opt-in (minutes of CPU; not registered with meson, so not part of scripts/test): the
# Go standard library's own tests of os, os/exec, io/fs, path/filepath and syscall,
# natively and under moat (default profile, both modes). The numbers of tests run,
# passed, failed and skipped must match. Needs golang-go (Debian ships the sources and
# tests; they run offline).
#   MOAT=build/moat MOAT_SRC=. tests/compat/go-stdlib.sh [PACKAGE...]
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

command -v go >/dev/null || skip_all "go is not installed (apt-get install golang-go)"
pkgs=("$@"); [ ${#pkgs[@]} -eq 0 ] && pkgs=(os os/exec io/fs path/filepath syscall)
mkdir -p "$TMP/ws"; cd "$TMP/ws" || exit 1
export GOFLAGS=-count=1 GOCACHE=$TMP/ws/.gocache GOTMPDIR=$TMP/ws/.gotmp
mkdir -p "$GOTMPDIR"

# counts FILE: "run passed failed skipped" from go test -v output
counts() {
	local run pass fail skip
	run=$(grep -cE '^=== RUN ' "$1"); pass=$(grep -cE '^\s*--- PASS' "$1")
	fail=$(grep -cE '^\s*--- FAIL' "$1"); skip=$(grep -cE '^\s*--- SKIP' "$1")
	echo "$run $pass $fail $skip"
}

plan $(( ${#pkgs[@]} * 2 ))
for p in "${pkgs[@]}"; do
	timeout 900 go test -v "$p" >"$TMP/native.txt" 2>&1
	native=$(counts "$TMP/native.txt")
	for mode in namespaced unnamespaced; do
		if ! have_mode $mode; then skip "$p [$mode]" "moat cannot start in $mode mode here"; continue; fi
		timeout 1800 "$MOAT" run -q --mode $mode --setenv GOFLAGS "$GOFLAGS" --setenv GOCACHE "$GOCACHE" \
			--setenv GOTMPDIR "$GOTMPDIR" -- go test -v "$p" >"$TMP/moat.txt" 2>&1
		m=$(counts "$TMP/moat.txt")
		[ "$m" = "$native" ]
		ok $? "go test $p [$mode]: run/pass/fail/skip $m (native $native)" \
			"$(diff <(grep -E -- '--- (FAIL|SKIP)' "$TMP/native.txt") <(grep -E -- '--- (FAIL|SKIP)' "$TMP/moat.txt") | head -40)"
	done
done
finish
