#!/usr/bin/env bash
# A mapping of "/" is a mapping like any other: `--bind /` is writable where the host is,
# `--ro-bind /` is not, and a writable mapping below a read-only "/" stays writable. The
# namespaced keeper remounts the root mount read-only because it is normally the
# skeleton of mount points; a read-write mapping of "/" is the root mount itself.
# Every effect is checked on the host.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 10
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
	# Several levels made, and a file made for a file's mapping: all of it goes.
	nx="$TMP/out/n1/n2/n3"
	out=$(timeout 60 "$MOAT" run -q --profile none --bind / --tmpfs "$nx" -- \
		sh -c "echo x >'$nx/f' && ls -d '$nx'" 2>&1)
	[ $? -eq 0 ] && [ ! -e "$TMP/out/n1" ] && [ "$out" = "$nx" ]
	ok $? "namespaced --bind / --tmpfs A/B/C: none of the three is left on the host ($(ls -A "$TMP/out" | tr "\n" " "))" "$out"

	echo hello >"$TMP/src.txt"
	nx="$TMP/out/f1/app.conf"
	out=$(timeout 60 "$MOAT" run -q --profile none --bind / --ro-bind "$TMP/src.txt:$nx" -- \
		cat "$nx" 2>&1)
	[ $? -eq 0 ] && [ ! -e "$TMP/out/f1" ] && [ "$out" = hello ]
	ok $? "namespaced --bind / --ro-bind FILE:DST: neither the empty file nor its directory is left on the host ($(ls -A "$TMP/out" | tr "\n" " "))" "$out"

	# The sandbox can write anywhere the host lets it, so it tries to swap the directory
	# made on the way to the mount point for a symlink to one of the test's, whose entry
	# has the mount point's name. moat refuses the rename (a mapping lies below it), and
	# the removal would not follow the symlink anyway (tests/escape/vfs/mountpoint-swap.sh).
	PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3)
	mkdir -p "$TMP/victim/m"
	nx="$TMP/out/s1/m"
	out=$(timeout 60 "$MOAT" run -q --profile none --bind / --tmpfs "$nx" -- "$PY" -c '
import errno, os, sys
try:
    os.rename(sys.argv[1], sys.argv[1] + ".moved")
    os.symlink(sys.argv[2], sys.argv[1])
    print("swapped")
except OSError as e:
    print("rename:", errno.errorcode[e.errno])' "$TMP/out/s1" "$TMP/victim" 2>&1)
	[ "$out" = "rename: EXDEV" ] && [ -d "$TMP/victim/m" ] && [ ! -e "$TMP/out/s1" ]
	ok $? "namespaced --bind /: a directory moat made cannot be swapped for a symlink, the host's entry stays ($(ls -A "$TMP/victim" | tr "\n" " "); $(ls -A "$TMP/out" | tr "\n" " "))" "$out"
else
	for c in "--tmpfs DST" "--tmpfs A/B/C" "--ro-bind FILE:DST" "a swapped directory"; do
		skip "namespaced --bind / $c: the run leaves nothing on the host" "no namespaced mode"
	done
fi
finish
