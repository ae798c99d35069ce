#!/usr/bin/env bash
# Issue 3 acceptance: everyday tools work under the default profile with the workspace
# as cwd, in both modes. Each result is checked on the host after the run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 12
for t in python3 gcc git tar; do command -v $t >/dev/null || skip_all "$t is not installed"; done

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 6); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	W=$(mktemp -d "$TMP/ws.XXXXXX")
	run() { (cd "$W" && "$MOAT" run -q --mode "$mode" -- "$@") >"$TMP/out" 2>"$TMP/err"; }
	diag() { echo "--- stdout"; head -c 1500 "$TMP/out"; echo "--- stderr"; head -c 1500 "$TMP/err"; }

	run python3 -c 'import json, email, sqlite3, http.client, os; print("imported", os.getcwd())'
	ok $? "$mode: python3 imports json, email, sqlite3, http.client" "$(diag)"

	printf 'int moat_add(int a, int b) { return a + b; }\n' >"$W/add.c"
	run gcc -c add.c -o add.o
	[ $? -eq 0 ] && nm "$W/add.o" 2>/dev/null | grep -q 'T moat_add'
	ok $? "$mode: gcc -c writes an object file with the symbol (checked with nm on the host)" "$(diag)"

	run sh -c 'git init -q . && git add . && git -c user.name=moat -c user.email=moat@test commit -qm "from the sandbox"'
	[ $? -eq 0 ] && [ "$(git -C "$W" log --format=%s 2>/dev/null)" = "from the sandbox" ] &&
		git -C "$W" ls-files | grep -qx add.c && git -C "$W" fsck --no-progress >/dev/null 2>&1
	ok $? "$mode: git init/add/commit in the workspace gives a sound repository on the host" "$(diag)"

	# The archive goes to a subdirectory left out of it, so "." does not change under tar.
	mkdir "$W/out"
	run tar czf out/ws.tgz --exclude=./out --exclude=./.git .
	[ $? -eq 0 ] && tar tzf "$W/out/ws.tgz" | grep -qx './add.c' && tar tzf "$W/out/ws.tgz" | grep -qx './add.o'
	ok $? "$mode: tar of the workspace holds its files" "$(diag)"

	# Extracting restores directory modes through O_PATH fds, which seccomp's ADDFD
	# cannot hand over as such (it failed with EIO).
	mkdir -p "$W/src/d" "$W/x" && echo inner >"$W/src/d/f" && chmod 750 "$W/src/d"
	tar czf "$W/in.tgz" -C "$W" src
	run tar xzf in.tgz -C x
	[ $? -eq 0 ] && [ "$(stat -c %a "$W/x/src/d")" = 750 ] && [ "$(cat "$W/x/src/d/f")" = inner ]
	ok $? "$mode: tar xzf restores files and directory modes" "$(diag)"

	# O_PATH: a directory's fd works as a dirfd and a file's with fstat; a FIFO opens
	# at once where the kernel makes the O_PATH open (namespaced), and is refused at once
	# where moat opens it (unnamespaced: a read-only open would block or wake its writer).
	mkfifo "$W/ff"
	run timeout 10 python3 -c '
import os
d = os.open("src", os.O_PATH | os.O_DIRECTORY)
print("dir", open(os.open("d/f", os.O_RDONLY, dir_fd=d)).read().strip())
print("file", os.fstat(os.open("src/d/f", os.O_PATH)).st_size)
try:
    os.open("ff", os.O_PATH)
    print("fifo O_PATH")
except OSError as e:
    print("fifo", e.strerror)'
	fifo="fifo O_PATH"
	[ "$mode" = unnamespaced ] && fifo="fifo Operation not supported"
	grep -qx "dir inner" "$TMP/out" && grep -qx "file 6" "$TMP/out" && grep -qx "$fifo" "$TMP/out"
	ok $? "$mode: O_PATH opens of a directory and a file work; of a FIFO, ${fifo#fifo }" "$(diag)"
done
finish
