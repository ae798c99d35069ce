#!/usr/bin/env bash
# Invariant 1 (no TOCTOU) for the fd-metadata calls: tests/escape/vfs/fd-meta-race.c
# dup2()s a read-only host file and a workspace file onto one fd number in turn while
# calling fchmod(04777) and fsetxattr(user.race) on that number. The read-only file must
# keep its mode and gain no xattr, checked from outside, in either mode; both outcomes
# inside (some calls changed the workspace file, some were refused) show that the race
# was really run against both files.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
: "${FD_META_RACE:?FD_META_RACE must point at the fixture (meson sets it)}"

plan 4
R="$TMP/ro"; W="$TMP/work"
mkdir -p "$R" "$W"
echo data >"$R/f"
chmod 644 "$R/f"
cp "$FD_META_RACE" "$W/race"

for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: racing fchmod/fsetxattr never change the read-only file" "moat cannot start in $mode mode here"
		skip "$mode: both files were raced" "moat cannot start in $mode mode here"
		continue
	fi
	echo w >"$W/own"
	chmod 644 "$W/own"
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --timeout 120 --ro-bind "$R" -- \
		"$W/race" "$W/own" "$R/f" 20000 2>&1)
	after=$(stat -c %a "$R/f")
	xattr=$(getfattr --only-values -n user.race "$R/f" 2>/dev/null)
	[ "$after" = 644 ] && [ -z "$xattr" ]
	ok $? "$mode: racing fchmod/fsetxattr never change the read-only file ($out)" \
		"mode $after, user.race '$xattr'"
	echo "$out" | grep -qE 'ok=[1-9]' && echo "$out" | grep -qE 'refused=[1-9]'
	ok $? "$mode: both files were raced (some calls changed the workspace file, some were refused)" "$out"
	chmod 644 "$R/f"; setfattr -x user.race "$R/f" 2>/dev/null
done
finish
