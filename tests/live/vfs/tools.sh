#!/usr/bin/env bash
# Issue 3 acceptance: everyday tools work under the default profile with the workspace
# as cwd, in both modes. Each result is checked on the host after the run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 8
for t in python3 gcc git tar; do command -v $t >/dev/null || skip_all "$t is not installed"; done

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 4); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
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
done
finish
