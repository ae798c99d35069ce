#!/usr/bin/env bash
# A magic link (/proc/self/fd/N, /dev/stdout) to an object outside the view reopens only
# a file the caller handed in as a standard fd, and only for what that fd does; it never
# lands on another object of the view. The link's text names such a file from the host's
# root (/tmp/NAME for `moat run ... >> /tmp/NAME`), and in namespaced mode that name may
# be a file of the sandbox's private /tmp: `echo x > /dev/stdout` once wrote the caller's
# output there (silently lost) and truncated what the sandbox kept at that name.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 17
mkdir "$TMP/cwd"
OUT=$(mktemp /tmp/moat-magic.XXXXXX)
IN=$(mktemp /tmp/moat-magic-in.XXXXXX)
trap 'rm -f "$OUT" "$IN"; _tap_cleanup' EXIT
N=${OUT#/tmp/}

for mode in namespaced unnamespaced; do
	for flags in "" "-v"; do
		name="$mode${flags:+ $flags}"
		if ! have_mode "$mode"; then
			for i in 1 2 3 4; do skip "$name: case $i" "no $mode mode"; done
			continue
		fi
		# stdout handed in for appending: both magic links reopen it, as natively
		: > "$OUT"
		err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $flags -- \
			sh -c 'echo a >> /dev/stdout; echo b >> /proc/self/fd/1' 2>&1 >>"$OUT")
		[ "$(cat "$OUT")" = "$(printf 'a\nb')" ]
		ok $? "$name: /dev/stdout and /proc/self/fd/1 reopen the handed file (it holds: $(cat "$OUT" | tr '\n' ' '))" "$err"
		# ... for writing only: that fd does not read
		err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $flags -- \
			sh -c 'cat < /dev/stdout' 2>&1 >>"$OUT")
		echo "$err" | grep -q "Permission denied"
		ok $? "$name: the write-only stdout does not reopen for reading (EACCES)" "$err"
		# stdin handed in read-only, from outside the view: not written through a reopen
		echo untouched > "$IN"
		err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $flags --stdin -- \
			sh -c 'echo OVERWRITTEN > /proc/self/fd/0; echo OVERWRITTEN >> /dev/stdin' \
			<"$IN" 2>&1)
		[ "$(cat "$IN")" = untouched ] && echo "$err" | grep -q "Permission denied"
		ok $? "$name: the read-only stdin is not written through /proc/self/fd/0 or /dev/stdin (host: $(cat "$IN"))" "$err"
		if [ "$mode" = namespaced ]; then
			# the text's name is a file of the sandbox's own /tmp: not the handed one's
			: > "$OUT"
			err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $flags -- \
				sh -c "echo mine > /tmp/$N; echo handed >> /dev/stdout; cat /tmp/$N" \
				2>&1 >>"$OUT")
			[ "$(cat "$OUT")" = "$(printf 'handed\nmine')" ]
			ok $? "$name: /dev/stdout is the handed file, not the sandbox's /tmp/$N (stdout: $(cat "$OUT" | tr '\n' ' '))" "$err"
		else
			skip "$name: /dev/stdout is the handed file, not the sandbox's /tmp/NAME" \
				"unnamespaced, /tmp is the host's: the name is the file"
		fi
	done
done

# A magic link whose text passes through another magic link: stdin is a host directory
# outside the view (only regular files are handed), and the sandbox makes the name of
# its parent, in its private /tmp, a symlink to /proc/self/fd/7, a directory of its
# workspace. A create below /proc/self/fd/0 is refused (as Landlock refuses it
# natively), and does not land in the workspace (checked on the host).
if have_mode namespaced; then
	OD=$(mktemp -d /tmp/moat-magicdir.XXXXXX)
	mkdir "$OD/sub"
	D=${OD#/tmp/}
	err=$(cd "$TMP/cwd" && "$MOAT" run -q --mode namespaced -v --stdin -- \
		sh -c "mkdir -p w/sub; exec 7<w; ln -s /proc/self/fd/7 /tmp/$D; echo leaked > /proc/self/fd/0/out" \
		<"$OD/sub" 2>&1)
	[ ! -e "$TMP/cwd/w/sub/out" ] && [ ! -e "$OD/sub/out" ] && echo "$err" | grep -q "Permission denied"
	ok $? "namespaced -v: a magic link in the text's path leads no create into the workspace (workspace: $(cat "$TMP/cwd/w/sub/out" 2>&1))" "$err"
	rm -rf "$OD"
else
	skip "namespaced -v: a magic link in the text's path leads no create into the workspace" \
		"moat cannot start in namespaced mode here"
fi
finish
