#!/usr/bin/env bash
# A magic link (/proc/self/fd/N, /dev/stdout) to an object outside the view never lands
# on another object of the view. The link's text names such an object from the host's
# root (/tmp/NAME for a host file handed in as stdout), and in namespaced mode that name
# may be a file of the sandbox's private /tmp: `echo x > /dev/stdout` wrote the caller's
# output there (silently lost) and truncated what the sandbox kept at that name.
# Natively the kernel reopens the host file; moat refuses it (EACCES, as Landlock does
# where the kernel decides the open), and the refusal is reported.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 4
have_mode namespaced || skip_all "the private /tmp this needs is namespaced"
mkdir "$TMP/cwd"
OUT=$(mktemp /tmp/moat-magic.XXXXXX)
trap 'rm -f "$OUT"; _tap_cleanup' EXIT
N=${OUT#/tmp/}

for flags in "" "-v"; do
	: > "$OUT"
	err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode namespaced $flags -- \
		sh -c "echo mine > /tmp/$N; echo leaked > /dev/stdout; cat /tmp/$N" 2>&1 >"$OUT")
	got=$(cat "$OUT")
	[ "$got" = mine ]
	ok $? "namespaced${flags:+ $flags}: /dev/stdout (a host file) is not the sandbox's /tmp/$N (stdout holds: $got)" "$err"
	echo "$err" | grep -q "Permission denied"
	ok $? "namespaced${flags:+ $flags}: the reopen is refused with EACCES, not silently" "$err"
done
finish
