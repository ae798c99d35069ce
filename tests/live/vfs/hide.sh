#!/usr/bin/env bash
# Issue 3 acceptance: a `.env` hidden by `--hide '**/.env'` inside the very workspace
# stays invisible through every alias, and a hidden name cannot be created. Namespaced
# mode remaps the workspace to /workspace; unnamespaced mode binds it at its host path.
# Every check reads what the sandboxed command printed or what is on the host after it.
# Namespaced mode runs twice: by default the kernel answers metadata calls and a hidden
# name shows as an empty stub (its content never does); --strict-hide hides the name too.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 48
# moat runs from an unrelated empty directory: the default profile maps the caller's
# cwd, which must not make the workspace reachable under its host path as well.
mkdir "$TMP/cwd"

# run_in MODE SCRIPT: run SCRIPT under sh in the workspace; stdout to $TMP/out,
# stderr to $TMP/err, status in $rc. $D is the workspace as the sandbox names it.
run_in() {
	local mode=$1 script=$2 map
	if [ "$mode" = unnamespaced ]; then map=(--bind "$W" --chdir "$W")
	else map=(--bind "$W:/workspace" --chdir /workspace); fi
	[ "$mode" = strict-hide ] && map+=(--strict-hide) && mode=namespaced
	# A report asks for the change set, which keeps creates with moat: that a hidden
	# name cannot be created is its decision (a plain run leaves creates to the kernel,
	# where a new name is the sandbox's own: tests/escape/vfs/native-writes.sh).
	[ "$mode" = namespaced ] && map+=(--report "$TMP/report.json")
	(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" --hide '**/.env' \
		-- sh -c "$script" >"$TMP/out" 2>"$TMP/err")
	rc=$?
}
diag() { echo "rc=$rc"; echo "--- stdout"; head -c 2000 "$TMP/out"; echo "--- stderr"; head -c 2000 "$TMP/err"; }
# hidden: neither the secret nor (when $1 is set) the name shows in stdout
hidden() { no_secret "$TMP/out" "$SECRET" && no_secret "$TMP/err" "$SECRET" &&
	{ [ -z "${1:-}" ] || ! grep -q '\.env' "$TMP/out"; }; }

for mode in namespaced strict-hide unnamespaced; do
	if ! have_mode "${mode/strict-hide/namespaced}"; then
		for i in $(seq 16); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	make_workspace
	if [ "$mode" = unnamespaced ]; then D=$W; else D=/workspace; fi
	# where the name itself is hidden, not only the content
	if [ "$mode" = namespaced ]; then names=; else names=name; fi
	host_sum=$(sha256sum "$W/.env")

	run_in $mode "cat $D/.env"
	hidden && [ $rc -ne 0 ]; ok $? "$mode: cat \$D/.env fails without the secret" "$(diag)"

	run_in $mode "ls -a $D"
	hidden $names && grep -qx a.txt "$TMP/out"; ok $? "$mode: ls -a lists a.txt${names:+ but not .env}" "$(diag)"

	run_in $mode "find $D"
	hidden $names && grep -q 'sub/inner.txt$' "$TMP/out" && [ $rc -eq 0 ]
	ok $? "$mode: find walks the whole workspace (sub/inner.txt)${names:+ and omits .env}" "$(diag)"

	run_in $mode "ln -s $D/.env $D/abs-link; ln -s .env $D/rel-link; cat $D/abs-link $D/rel-link"
	hidden && [ $rc -ne 0 ]; ok $? "$mode: absolute and relative symlinks made inside do not reach it" "$(diag)"

	run_in $mode "cat /proc/self/root$D/.env; cat /proc/self/cwd/.env; cat /proc/\$\$/root$D/.env"
	hidden && [ $rc -ne 0 ]; ok $? "$mode: /proc/self/root, /proc/self/cwd and /proc/PID/root do not reach it" "$(diag)"

	run_in $mode "cd $D && cat ./sub/../.env; cd sub && cat ../.env; cat $D//sub/..//.env"
	hidden && [ $rc -ne 0 ]; ok $? "$mode: ./sub/../.env, ../.env and // spellings do not reach it" "$(diag)"

	run_in $mode "python3 -c 'import os; print(os.listdir(\"$D\")); print(os.listdir(\".\")); print(os.path.exists(\"$D/.env\"))'"
	hidden $names && grep -q a.txt "$TMP/out" && { [ -z "$names" ] || grep -qx False "$TMP/out"; }
	ok $? "$mode: Python os.listdir${names:+ does not list it, os.path.exists is False}" "$(diag)"

	run_in $mode "grep -r moat-secret $D; tar cf - -C $D . | grep -c moat-secret; cp $D/.env $D/copy1; ln $D/.env $D/copy2; cat $D/copy1 $D/copy2"
	hidden && [ ! -e "$W/copy1" ] && [ ! -e "$W/copy2" ] && grep -qx 0 "$TMP/out"
	ok $? "$mode: grep -r, tar, cp and a hard link do not carry it out" "$(diag)"

	# Creating a hidden name fails (ENOENT, as if the directory did not allow it) and
	# leaves nothing on the host: a file the run cannot see must not be written either.
	run_in $mode "echo created-in-run > $D/sub/.env; cat $D/sub/.env; ls -a $D/sub"
	[ ! -e "$W/sub/.env" ] && ! grep -q 'created-in-run\|\.env' "$TMP/out"
	ok $? "$mode: a .env created during the run is refused and absent on the host" "$(diag)"

	run_in $mode "echo overwritten > $D/.env; echo appended >> $D/.env; cat $D/.env"
	[ "$(sha256sum "$W/.env")" = "$host_sum" ] && ! grep -q 'overwritten\|appended' "$TMP/out"
	ok $? "$mode: writing to the hidden .env fails and the host file is unchanged" "$(diag)"

	run_in $mode "echo x > $D/plain; mv $D/plain $D/sub/.env; mkdir $D/sub/.env; ls -a $D/sub"
	[ ! -e "$W/sub/.env" ] && [ -e "$W/plain" ]
	ok $? "$mode: renaming or mkdir onto a hidden name fails; the source stays" "$(diag)"

	run_in $mode "mkdir -p $D/deep/er && echo made > $D/deep/er/.env; ls -a $D/deep/er"
	[ -d "$W/deep/er" ] && [ ! -e "$W/deep/er/.env" ]
	ok $? "$mode: mkdir -p works and a .env in a new directory is refused" "$(diag)"

	run_in $mode "rm -f $D/.env; unlink $D/.env; mv $D/.env $D/moved"
	[ "$(sha256sum "$W/.env")" = "$host_sum" ] && [ ! -e "$W/moved" ]
	ok $? "$mode: the hidden .env cannot be removed or renamed away" "$(diag)"

	# (If a broken build let the previous case delete it, put it back so this one means something.)
	[ -e "$W/.env" ] || printf '%s\n' "$SECRET" >"$W/.env"
	if [ -n "$names" ]; then
		run_in $mode "stat $D/.env; test -e $D/.env && echo EXISTS; ls -l $D/.env"
		! grep -q EXISTS "$TMP/out" && hidden name
		ok $? "$mode: stat, test -e and ls -l report it absent" "$(diag)"
	else
		# The stub is 0444, openable: an open of it meets its fanotify mark and
		# fails with EPERM (root), or is trapped and refused (another user), so that
		# the kernel's refusal is reported (a policy decision of the fast path).
		run_in $mode "stat -c '%s %a' $D/.env; cat $D/.env || echo UNREADABLE"
		grep -qx '0 444' "$TMP/out" && grep -qx UNREADABLE "$TMP/out" && hidden
		ok $? "$mode: stat shows an empty stub of mode 0444, not the file, and it cannot be read" "$(diag)"
	fi

	# A directory whose only entry is hidden: where the name is hidden too, it lists
	# empty, and its removal must not say "not empty" (that would tell something is
	# there); it is refused, and the host's file stays.
	mkdir "$W/only" && printf '%s\n' "$SECRET" >"$W/only/.env"
	run_in $mode "ls -A $D/only; rmdir $D/only; rm -rf $D/only; echo done"
	[ "$(cat "$W/only/.env" 2>/dev/null)" = "$SECRET" ] && hidden $names &&
		{ [ -z "$names" ] || { ! grep -qi 'not empty' "$TMP/err" &&
			grep -qi 'permission denied' "$TMP/err"; }; }
	ok $? "$mode: a directory holding only the hidden file stays${names:+, refused as a place, not as not empty}" "$(diag)"

	# Positive control: the rest of the workspace is readable and writable.
	run_in $mode "cat $D/a.txt $D/sub/inner.txt && echo written > $D/new.txt"
	grep -qx visible "$TMP/out" && grep -qx inner "$TMP/out" && [ "$(cat "$W/new.txt" 2>/dev/null)" = written ]
	ok $? "$mode: the rest of the workspace reads and writes normally" "$(diag)"
done
finish
