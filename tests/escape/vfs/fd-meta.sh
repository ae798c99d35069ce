#!/usr/bin/env bash
# Invariant 4 (deny by default) through an fd: fchmod, fchown, fsetxattr and
# fremovexattr (and fchmodat2/fchownat by AT_EMPTY_PATH, on an O_PATH fd too) need only
# ownership of a file, not an fd opened for writing. A file
# opened read-only from a read-only mapping must not change on the host, in either
# mode (unnamespaced mode has no read-only mount to stop it: moat must). Checked from
# outside: the host file's mode, owner and xattrs before and after.
. "$MOAT_SRC/tests/lib/tap.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"

R="$TMP/ro"; W="$TMP/work"
mkdir -p "$R" "$W"
echo data >"$R/f"
chmod 644 "$R/f"
if ! setfattr -n user.keep -v 1 "$R/f" 2>/dev/null; then
	xattrs=no
fi

plan 8
for mode in unnamespaced namespaced; do
	before=$(stat -c '%a %u %g' "$R/f"; getfattr -d "$R/f" 2>/dev/null | grep -v '^#')
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --ro-bind "$R" -- "$PY" -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def by_fd(call):  # fchmodat2/fchownat(fd, '', AT_EMPTY_PATH): the fd's own file
    def f():
        if call() < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return f
fd = os.open('$R/f', os.O_RDONLY)
op = os.open('$R/f', os.O_PATH)
for what, f in [('fchmod', lambda: os.fchmod(fd, 0o777)),
                ('fchown', lambda: os.fchown(fd, 12345, 12345)),
                ('fchmodat2 AT_EMPTY_PATH', by_fd(lambda: libc.syscall(452, fd, b'', 0o777, 0x1000))),
                ('fchownat AT_EMPTY_PATH, O_PATH', by_fd(lambda: libc.fchownat(op, b'', 12345, 12345, 0x1000))),
                ('fsetxattr', lambda: os.setxattr(fd, 'user.x', b'1')),
                ('fremovexattr', lambda: os.removexattr(fd, 'user.keep'))]:
    try:
        f(); print(what, 'changed')
    except OSError as e:
        print(what, 'refused', e.strerror)
" 2>&1)
	after=$(stat -c '%a %u %g' "$R/f"; getfattr -d "$R/f" 2>/dev/null | grep -v '^#')
	[ "$before" = "$after" ]
	ok $? "$mode: the host file's mode, owner and xattrs are unchanged" "$before -> $after; $out"
	! echo "$out" | grep -q changed
	ok $? "$mode: every fd-based change is refused inside" "$out"
	# Positive control: the same calls on a workspace file do change it on the host.
	echo w >"$W/own"
	(cd "$W" && "$MOAT" run -q --mode "$mode" -- "$PY" -c "
import os
fd = os.open('own', os.O_RDONLY)
os.fchmod(fd, 0o600)
" 2>&1)
	[ "$(stat -c %a "$W/own")" = 600 ]
	ok $? "$mode: fchmod of a workspace file does change it (control)"
	if [ "${xattrs:-yes}" = no ]; then
		skip "$mode: fsetxattr of a workspace file (control)" "no user xattrs on $TMP"
	else
		(cd "$W" && "$MOAT" run -q --mode "$mode" -- "$PY" -c "
import os
fd = os.open('own', os.O_RDONLY)
os.setxattr(fd, 'user.y', b'2')
" 2>&1)
		getfattr -n user.y "$W/own" >/dev/null 2>&1
		ok $? "$mode: fsetxattr of a workspace file does change it (control)"
	fi
done
finish
