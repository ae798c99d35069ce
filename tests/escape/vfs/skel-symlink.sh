#!/usr/bin/env bash
# Teardown removes the namespaced skeleton (/dev/shm/moat-root-*/root) from the table,
# one unlinkat() per entry by its path below the skeleton. The kernel follows a symlink
# in any but the last component of that path. Another sandbox of the same user that was
# given the host's /dev/shm (--bind /dev/shm) can, while a run goes on, rename that
# run's implicit /dev in the skeleton away (in the host's namespace it is no mount
# point) and put a symlink to a host directory in its place: the victim's teardown must
# not then remove that directory's "null" (the name of a mount point under /dev).
# Checked from outside: the target file is still there when the victim's moat exits.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 1
if ! have_mode namespaced; then
	skip_all "namespaced mode is not available here"
fi
[ -d /dev/shm ] || skip_all "no /dev/shm"
mkdir -p "$TMP/target"
echo precious >"$TMP/target/null"
sys=()
for d in /usr /bin /lib /lib64; do [ -e "$d" ] && sys+=(--ro-bind "$d"); done

before=$(ls -d /dev/shm/moat-root-* 2>/dev/null | sort)
"$MOAT" run --mode namespaced -q -- /bin/sleep 4 &
victim=$!
track_pid "$victim"
skel=
for _ in $(seq 50); do
	for d in /dev/shm/moat-root-*; do
		[ -d "$d/root/dev" ] || continue
		grep -qxF "$d" <<<"$before" && continue
		skel=$d
	done
	[ -n "$skel" ] && break
	sleep 0.1
done
if [ -z "$skel" ]; then
	wait "$victim"
	skip_all "the run's skeleton is not in /dev/shm (not a tmpfs here)"
fi
# the attacker: a second sandbox given the host's /dev/shm
"$MOAT" run --mode namespaced -q --profile none "${sys[@]}" --bind /dev/shm -- /bin/sh -c \
	"mv '$skel/root/dev' '$skel/root/dev.old' && ln -s '$TMP/target' '$skel/root/dev'" \
	|| echo "# the attacker's run failed"
wait "$victim"
if [ -e "$TMP/target/null" ]; then
	pass "a skeleton entry replaced by a symlink does not steer teardown's removal"
else
	fail "a skeleton entry replaced by a symlink does not steer teardown's removal" \
		"moat removed $TMP/target/null through a symlink planted in its skeleton"
fi
finish
