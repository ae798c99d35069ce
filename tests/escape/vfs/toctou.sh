#!/usr/bin/env bash
# Invariant 1 (no TOCTOU): tests/escape/vfs/toctou.c flips the path buffer between an
# allowed file and a hidden `.env` while looping openat 100 000 times; it must never get
# the hidden file, in either mode. A run without the hide rule shows the race is real:
# there both files are opened. (Not .env: the default profile hides that in every run.)
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
: "${TOCTOU:?TOCTOU must point at the fixture (meson sets it)}"

plan 4
mkdir "$TMP/cwd"
W=$(mktemp -d "$TMP/ws.XXXXXX")
echo ALLOWED >"$W/okay"
echo HIDDEN >"$W/hush"
cp "$TOCTOU" "$W/toctou"

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: 100000 racing opens never reach the hidden file" "moat cannot start in $mode mode here"
		skip "$mode: control run" "moat cannot start in $mode mode here"
		continue
	fi
	if [ "$mode" = namespaced ]; then map=(--bind "$W:/workspace" --chdir /workspace); D=/workspace
	else map=(--bind "$W" --chdir "$W"); D=$W; fi
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" --hide '**/hush' -- \
		"$D/toctou" "$D/okay" "$D/hush" 100000 2>&1)
	rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q 'hidden=0 ' 
	ok $? "$mode: 100000 racing opens never reach the hidden file ($out)" "rc=$rc"

	out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" -- \
		"$D/toctou" "$D/okay" "$D/hush" 20000 2>&1)
	echo "$out" | grep -qE 'hidden=[1-9]' && echo "$out" | grep -qE 'allowed=[1-9]'
	ok $? "$mode: control run without the hide rule opens both files ($out)"
done
finish
