#!/usr/bin/env bash
# The supervisor performs metadata calls with its own capabilities, so it must refuse
# what the kernel would refuse the sandbox, which has none: setting or removing
# security.* (file capabilities) and trusted.* xattrs, and changing the mode, owner,
# times or xattrs of a device node (always the host's: mknod of one is refused), by path
# and by fd. Checked from outside: the workspace binary has no security.capability or
# trusted.* xattr; a device node of our own, bound read-write, and the host's /dev/null
# (bound by the default profile) keep mode, owner, times and ctime. /dev/null is only
# asked for what it has already (mode 666, owner 0, its own times), so that a failure
# of this test changes nothing but its ctime.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
[ -c /dev/null ] || skip_all "no /dev/null"

plan 8
W="$TMP/work"; D="$TMP/dev"
mkdir -p "$W" "$D"
cp /bin/true "$W/bin"
mknod "$D/nul" c 1 3 || skip_all "cannot mknod here"
chmod 666 "$D/nul"

for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for c in "no security.* or trusted.* xattr was set" "the device node kept mode, owner and times" "the host's /dev/null kept its ctime" "every attempt is refused inside"; do
			skip "$mode: $c" "moat cannot start in $mode mode here"
		done
		continue
	fi
	dev_before=$(stat -c '%a %u %g %X %Y %.9Z' "$D/nul")
	null_before=$(stat -c '%a %u %g %.9Z' /dev/null)
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --bind "$D" -- "$PY" -c "
import os, struct
cap = struct.pack('<IIIII', 0x02000001, (1 << 1) | (1 << 6) | (1 << 7), 0, 0, 0)
def attempt(what, f):
    try:
        f(); print(what, 'changed')
    except OSError as e:
        print(what, 'refused', e.strerror)
fd = os.open('bin', os.O_RDONLY)
attempt('setxattr security.capability', lambda: os.setxattr('bin', 'security.capability', cap))
attempt('fsetxattr security.capability', lambda: os.setxattr(fd, 'security.capability', cap))
attempt('lsetxattr trusted.x', lambda: os.setxattr('bin', 'trusted.x', b'1', follow_symlinks=False))
attempt('fsetxattr trusted.x', lambda: os.setxattr(fd, 'trusted.x', b'1'))
for dev, mode, uid, times in [('$D/nul', 0o600, 12345, (0, 0)), ('/dev/null', 0o666, 0, None)]:
    st = os.stat(dev)
    t = times or (st.st_atime, st.st_mtime)
    dfd = os.open(dev, os.O_RDONLY)
    attempt(dev + ' chmod', lambda: os.chmod(dev, mode))
    attempt(dev + ' fchmod', lambda: os.fchmod(dfd, mode))
    attempt(dev + ' chown', lambda: os.chown(dev, uid, uid))
    attempt(dev + ' fchown', lambda: os.fchown(dfd, uid, uid))
    attempt(dev + ' utime', lambda: os.utime(dev, t))
    attempt(dev + ' futimens', lambda: os.utime(dfd, t))
    attempt(dev + ' setxattr system.posix_acl_access', lambda: os.setxattr(dev, 'system.posix_acl_access', struct.pack('<IHHIHHIHHI', 2, 1, 6, 0xffffffff, 4, 6, 0xffffffff, 0x20, 6, 0xffffffff)))
" 2>&1)
	xa=$(getfattr -d -m '^(security|trusted)\.' "$W/bin" 2>/dev/null | grep -v '^#' | grep .)
	[ -z "$xa" ]
	ok $? "$mode: no security.* or trusted.* xattr was set on the workspace binary" "$xa"
	dev_after=$(stat -c '%a %u %g %X %Y %.9Z' "$D/nul")
	[ "$dev_before" = "$dev_after" ]
	ok $? "$mode: the device node kept mode, owner and times" "$dev_before -> $dev_after"
	null_after=$(stat -c '%a %u %g %.9Z' /dev/null)
	[ "$null_before" = "$null_after" ]
	ok $? "$mode: the host's /dev/null kept mode, owner and ctime" "$null_before -> $null_after"
	! echo "$out" | grep -q changed && [ "$(echo "$out" | grep -c refused)" -eq 18 ]
	ok $? "$mode: every attempt is refused inside" "$out"
	# repair what a failing run did to our own node
	chmod 666 "$D/nul"; chown 0:0 "$D/nul"
	setfattr -x security.capability "$W/bin" 2>/dev/null; setfattr -x trusted.x "$W/bin" 2>/dev/null
done
finish
