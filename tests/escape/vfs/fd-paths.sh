#!/usr/bin/env bash
# Issue 3: the view is consistent for directory fds too. A directory the supervisor
# opened for the sandbox (the fd it injects) must name its virtual path, not the host
# path behind a remap, and *at calls relative to it must resolve inside the view.
# (A host path showing here both leaks the host layout and breaks find, tar -C, mkdir -p.)
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 4
have_mode namespaced || skip_all "remaps need the namespaced mode, which cannot start here"
mkdir "$TMP/cwd"
W=$(mktemp -d "$TMP/ws.XXXXXX"); mkdir "$W/sub"; echo inner >"$W/sub/f"

# probe VIRT DIR REL: with $W mapped at VIRT, open DIR and read REL relative to it
probe() {
	(cd "$TMP/cwd" && "$MOAT" run -q --mode namespaced --bind "$W:$1" -- python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
print("link:", os.readlink("/proc/self/fd/%d" % fd))
try:
    print("at:", open(os.open(sys.argv[2], os.O_RDONLY, dir_fd=fd)).read().strip())
except OSError as e:
    print("at:", e)
' "$2" "$3" 2>&1)
}

out=$(probe /workspace /workspace sub/f)
echo "$out" | grep -qx 'link: /workspace'
ok $? "/proc/self/fd/N of an opened /workspace reads /workspace, not the host path" "$out"
echo "$out" | grep -qx 'at: inner'
ok $? "openat relative to that fd reaches /workspace/sub/f" "$out"

# The same for the unmapped directories above a mapping (moat's skeleton, whose fds the
# walker keeps for the whole run): the fd must be the one inside the sandbox's own tree.
out=$(probe /deep/er/ws /deep/er ws/sub/f)
echo "$out" | grep -qx 'link: /deep/er'
ok $? "/proc/self/fd/N of an opened unmapped parent /deep/er reads /deep/er" "$out"
echo "$out" | grep -qx 'at: inner'
ok $? "openat relative to that fd reaches /deep/er/ws/sub/f" "$out"
finish
