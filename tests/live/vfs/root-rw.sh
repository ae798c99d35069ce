#!/usr/bin/env bash
# A mapping of "/" is a mapping like any other: `--bind /` is writable where the host is,
# `--ro-bind /` is not, and a writable mapping below a read-only "/" stays writable. The
# namespaced keeper remounts the root mount read-only because it is normally the
# skeleton of mount points; a read-write mapping of "/" is the root mount itself.
# Every effect is checked on the host.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 7
mkdir "$TMP/cwd" "$TMP/out"; cd "$TMP/cwd" || exit 1
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	f="$TMP/out/$mode-rw"
	out=$(timeout 60 "$MOAT" run -q --mode $mode --profile none --bind / -- \
		sh -c "echo made >'$f'" 2>&1)
	[ "$(cat "$f" 2>/dev/null)" = made ]
	ok $? "$mode: --bind /: the sandbox writes where the host allows ($f)" "$out"

	f="$TMP/out/$mode-ro"
	out=$(timeout 60 "$MOAT" run -q --mode $mode --profile none --ro-bind / -- \
		sh -c "echo made >'$f'" 2>&1)
	[ ! -e "$f" ] && grep -q "Read-only file system\|Permission denied" <<<"$out"
	ok $? "$mode: --ro-bind /: nothing is written ($f)" "$out"

	f="$TMP/out/$mode-sub"
	out=$(timeout 60 "$MOAT" run -q --mode $mode --profile none --ro-bind / \
		--bind "$TMP/out" -- sh -c "echo made >'$f'" 2>&1)
	[ "$(cat "$f" 2>/dev/null)" = made ]
	ok $? "$mode: --ro-bind / --bind $TMP/out: the writable mapping below stays writable" "$out"
done

# The mount point of a mapping whose destination the host lacks is the keeper's, not the
# sandbox's: with "/" mapped read-write the root mount is the host's own filesystem, where
# the keeper's mkdir lands; moat removes it when the run ends (read-only, the same mapping
# fails to start). tests/live/vfs/mountpoints.sh has the other cases.
if have_mode namespaced; then
	nx="$TMP/out/not-on-host"
	out=$(timeout 60 "$MOAT" run -q --profile none --bind / --tmpfs "$nx" -- \
		sh -c "ls -ld '$nx'" 2>&1)
	[ $? -eq 0 ] && [ ! -e "$nx" ] && grep -q "^d.* $nx\$" <<<"$out"
	ok $? "namespaced --bind / --tmpfs DST: the run leaves no DST on the host ($(ls -ld "$nx" 2>&1))" "$out"
else
	skip "namespaced --bind / --tmpfs DST: the run leaves no DST on the host" "no namespaced mode"
fi
finish
