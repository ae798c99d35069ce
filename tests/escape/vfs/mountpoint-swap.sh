#!/usr/bin/env bash
# moat removes, when the run ends, the mount points the keeper made in the workspace
# for destinations the host lacked (tests/live/vfs/mountpoints.sh), and the directories
# it made on the way to them. The sandbox cannot reach such a mount point (its mount
# covers it), but it could try to rename a directory the keeper made on the way to one
# and put a symlink to a host directory at its name, whose entry has the mount point's
# name, so that a removal by path would take the host's entry. Two walls: moat refuses
# the rename (EXDEV: a mapping lies below the directory, and programs fall back to a
# copy, which cannot remove the mount point), and the removal goes through the directory
# the object was made in, held since, and removes only the object made then. Checked
# on the host after the run: the host's entries stay, the workspace is as before.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 2
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
W=$(mktemp -d "$TMP/ws.XXXXXX")
cd "$W" || exit 1
mkdir -p "$TMP/victim/f" "$TMP/victim2"
echo precious >"$TMP/victim2/h.conf"
echo hello >"$TMP/src.txt"
SWAP=$(cat <<'PYEOF'
import errno, os, sys
made, target = sys.argv[1], sys.argv[2]
try:
    os.rename(made, made + "2")
except OSError as e:
    print("rename:", errno.errorcode[e.errno])
    sys.exit(0)
os.symlink(target, made)
print("renamed")
PYEOF
)

out=$(timeout 60 "$MOAT" run -q --tmpfs "$W/e/f" -- "$PY" -c "$SWAP" "$W/e" "$TMP/victim" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "rename: EXDEV" ] && [ -d "$TMP/victim/f" ] && [ -z "$(ls -A "$W")" ]
ok $? "a directory moat made for a mount point cannot be swapped for a symlink, and the host's entry stays (rc $rc; victim: $(ls -A "$TMP/victim"); workspace: $(ls -A "$W"))" "$out"

out=$(timeout 60 "$MOAT" run -q --ro-bind "$TMP/src.txt:$W/g/h.conf" -- "$PY" -c "$SWAP" "$W/g" "$TMP/victim2" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "rename: EXDEV" ] && [ "$(cat "$TMP/victim2/h.conf" 2>/dev/null)" = precious ] &&
	[ -z "$(ls -A "$W")" ]
ok $? "the same for a file mount point: the host file of that name stays (rc $rc; victim2: $(ls -A "$TMP/victim2"); workspace: $(ls -A "$W"))" "$out"
finish
