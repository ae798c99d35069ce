#!/usr/bin/env bash
# Issue 3: the view is consistent for directory fds too. A directory the supervisor
# opened for the sandbox (the fd it injects) must name its virtual path, not the host
# path behind a remap, and *at calls relative to it must resolve inside the view.
# (A host path showing here both leaks the host layout and breaks find, tar -C, mkdir -p.)
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 2
have_mode namespaced || skip_all "remaps need the namespaced mode, which cannot start here"
mkdir "$TMP/cwd"
W=$(mktemp -d "$TMP/ws.XXXXXX"); mkdir "$W/sub"; echo inner >"$W/sub/f"
out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode namespaced --bind "$W:/workspace" -- python3 -c '
import os
fd = os.open("/workspace", os.O_RDONLY | os.O_DIRECTORY)
print("link:", os.readlink("/proc/self/fd/%d" % fd))
try:
    sub = os.open("sub", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    print("at:", open(os.open("f", os.O_RDONLY, dir_fd=sub)).read().strip())
except OSError as e:
    print("at:", e)
' 2>&1)
echo "$out" | grep -qx 'link: /workspace'
ok $? "/proc/self/fd/N of an opened /workspace reads /workspace, not the host path" "$out"
echo "$out" | grep -qx 'at: inner'
ok $? "openat relative to that fd reaches /workspace/sub/f" "$out"
finish
