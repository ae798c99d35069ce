#!/usr/bin/env bash
# --strict-hide promises that a hidden name answers ENOENT everywhere and is never
# listed. In namespaced mode a hidden path that exists on the host is still covered by a
# read-only bind of an empty stub (the kernel's view must not hold its content), and
# every mount of the namespace shows in /proc/<pid>/mountinfo, mounts and mountstats: the
# stub's mount point there is the hidden name. Under --strict-hide an open of any of them
# (by /proc/self, /proc/thread-self, /proc/<pid>, /proc/mounts, an O_PATH fd reopened)
# gets a copy without the stubs' mounts (interposer/core/mounttab.h); statmount() and
# listmount() are refused (ENOSYS). Checked: the hidden name never appears in what the
# program printed, and the rest of the table does (the workspace's own mount). Without
# --strict-hide the stub is listed, as the threat model says: the control that this test
# can see a name in the table at all.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

plan 10
make_workspace
mkdir "$W/keys"
name="moat-hidden-name-$RANDOM$RANDOM"
echo key >"$W/keys/$name"
mkdir "$W/keys/dir-$name"
strict() { (cd "$W" && "$MOAT" run -q --strict-hide --mode namespaced \
	--hide "$W/keys/$name" --hide "$W/keys/dir-$name" -- "$@" 2>&1); }

out=$(strict sh -c 'ls -a keys; cat keys/'"$name"' 2>&1; stat keys/'"$name"' 2>&1')
! grep -qF "$name:" <(echo "$out" | grep -v "No such file") && ! echo "$out" | grep -qx "$name"
ok $? "--strict-hide: the hidden name is neither listed nor found (ls, cat, stat)" "$out"

for f in self/mountinfo self/mounts self/mountstats thread-self/mountinfo mounts; do
	out=$(strict cat /proc/$f)
	! echo "$out" | grep -qF "$name" && echo "$out" | grep -qF "$W"
	ok $? "--strict-hide: /proc/$f names no hidden path, and still lists the workspace" \
		"$(echo "$out" | grep -F -e "$name" -e "$W")"
done

# Another process's table, and an O_PATH fd opened again through /proc/self/fd.
out=$(strict python3 -c '
import os, subprocess
p = subprocess.Popen(["sleep", "5"])
for path in ("/proc/%d/mountinfo" % p.pid, "/proc/%d/task/%d/mounts" % (p.pid, p.pid)):
    print(open(path).read())
fd = os.open("/proc/self/mountinfo", os.O_PATH)
print(open("/proc/self/fd/%d" % fd).read())
p.kill()')
! echo "$out" | grep -qF "$name" && [ "$(echo "$out" | grep -cF "$W")" -ge 3 ]
ok $? "--strict-hide: another process's table and a reopened O_PATH fd name no hidden path" \
	"$(echo "$out" | grep -F -e "$name" -e Error)"

out=$(strict python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, nr in (("statmount", 457), ("listmount", 458)):
    r = libc.syscall(nr, None, None, 0, 0)
    print(name, r, ctypes.get_errno())')
[ "$(echo "$out" | tr '\n' ' ')" = "statmount -1 38 listmount -1 38 " ]
ok $? "--strict-hide: statmount and listmount are refused (ENOSYS)" "$out"

# A view the kernel cannot answer for (a mapping of "/" brings the host's devices) keeps
# every name absent without --strict-hide: the same copies.
out=$(cd "$W" && "$MOAT" run -q --mode namespaced --ro-bind / --hide "$W/keys/$name" \
	--hide "$W/keys/dir-$name" -- sh -c 'cat /proc/self/mountinfo; ls -a keys' 2>&1)
! echo "$out" | grep -qF "$name" && echo "$out" | grep -qF " / "
ok $? "--ro-bind /: the mount table names no hidden path either" "$(echo "$out" | grep -F "$name")"

# Control: without --strict-hide a stub is a mount the table lists.
out=$(cd "$W" && "$MOAT" run -q --mode namespaced --hide "$W/keys/$name" -- \
	cat /proc/self/mountinfo 2>&1)
echo "$out" | grep -qF "$name"
ok $? "without --strict-hide the stub's mount point names the hidden path (the documented gap of the fast path)" "$out"
finish
