#!/usr/bin/env bash
# --strict-hide promises that a hidden name answers ENOENT everywhere and is never
# listed. In namespaced mode a hidden path that exists on the host is still covered by a
# read-only bind of an empty stub (the kernel's view must not hold its content), and
# every mount of the namespace shows in /proc/self/mountinfo, /proc/self/mounts and
# /proc/self/mountstats (and through statmount/listmount, native syscalls): the mount
# point there is the hidden name. Checked: the name never appears in what the program
# printed. Reported with todo() until the mount table is filtered or the stubs leave it.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

plan 4
make_workspace
mkdir "$W/keys"
name="moat-hidden-name-$RANDOM$RANDOM"
echo key >"$W/keys/$name"
out=$(cd "$W" && "$MOAT" run -q --strict-hide --mode namespaced --hide "$W/keys/$name" -- \
	sh -c 'ls -a keys; cat keys/'"$name"' 2>&1; stat keys/'"$name"' 2>&1' 2>&1)
! grep -qF "$name:" <(echo "$out" | grep -v "No such file") && ! echo "$out" | grep -qx "$name"
ok $? "--strict-hide: the hidden name is neither listed nor found (ls, cat, stat)" "$out"
for f in mountinfo mounts mountstats; do
	out=$(cd "$W" && "$MOAT" run -q --strict-hide --mode namespaced --hide "$W/keys/$name" -- \
		cat /proc/self/$f 2>&1)
	! echo "$out" | grep -qF "$name"
	todo $? "--strict-hide: /proc/self/$f does not name the hidden file" \
		"its stub is a bind mount at the hidden name: $(echo "$out" | grep -F "$name")"
done
finish
