#!/usr/bin/env bash
# Calls moat once answered differently from the kernel: openat2's RESOLVE_IN_ROOT with
# an absolute path (relative to the dirfd), its checks of flags, mode and resolve bits
# (EINVAL), /proc/self/fd/N of a memfd, a deleted file and an O_TMPFILE (the object
# itself), O_TMPFILE's mode, and linkat(fd, "", AT_EMPTY_PATH) of an O_TMPFILE. The same
# program runs natively and under moat in each mode; every line must be the same.
# Then, under moat only: linkat(AT_EMPTY_PATH) of a read-only host file's fd does not
# give it a name in the workspace (checked on the host).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
PROG="$MOAT_SRC/tests/live/vfs/kernel-compat.py"

setup() {
	W=$(mktemp -d "$TMP/ws.XXXXXX")
	mkdir "$W/sub"
	echo inner >"$W/sub/inner.txt"
	echo top >"$W/a.txt"
	ln -s /inner.txt "$W/sub/abs"
	cp "$PROG" "$W/prog.py"
}
setup
native=$(cd "$W" && umask 022 && "$PY" prog.py 2>&1)
n=$(echo "$native" | wc -l)
echo "$native" | grep -q 'openat2 IN_ROOT absolute path: inner' || skip_all "the kernel lacks openat2: $native"

plan $(( (n + 1) * 2 ))
for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq $((n + 1))); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	setup
	out=$(cd "$W" && umask 022 && "$MOAT" run -q --mode "$mode" -- "$PY" prog.py 2>&1)
	while IFS= read -r line; do
		name=${line%%: *}
		got=$(echo "$out" | grep -F -- "$name: " | head -1)
		[ "$got" = "$line" ]
		ok $? "$mode: $name as natively (${line#*: })" "moat: ${got:-nothing}"
	done <<<"$native"
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" -- "$PY" -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('/usr/bin/true', os.O_RDONLY)
print(libc.linkat(fd, b'', -100, b'usr-link', 0x1000), os.strerror(ctypes.get_errno()))
" 2>&1)
	[ ! -e "$W/usr-link" ]
	ok $? "$mode: linkat(AT_EMPTY_PATH) of a read-only host file gives it no name in the workspace" "$out"
done
finish
