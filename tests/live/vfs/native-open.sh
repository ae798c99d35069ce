#!/usr/bin/env bash
# Native read-only opens (namespaced, moat started by root): open and openat without a
# write, create, truncate, O_TMPFILE or O_PATH flag never reach the supervisor; every
# hidden or read-denied path is covered by an empty stub whose fanotify mark refuses an
# open of it (EPERM, the one errno fanotify gives) and has the supervisor report it as
# a trapped denial is: -v names the rule, the exit line counts it, --report and --events
# list it. A FIFO hidden in the workspace is covered too: a host writer finds no reader.
# Without the marks (moat started by another user; MOAT_TEST_NO_FANOTIFY in test_hooks
# builds) opens stay trapped and continued: ENOENT for a hidden path, EACCES for a
# denied one, as before. Every effect is checked from outside: the errno the program
# printed, the host writer's fate, the report and events files, moat's stderr.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 20
if ! have_mode namespaced; then
	skip_all "moat cannot start in namespaced mode here"
fi
# Readable by another user (the fallback's case run as nobody).
B=$(mktemp -d /tmp/moat-native-open.XXXXXX)
chmod 755 "$B"
trap 'rm -rf "$B"; _tap_cleanup' EXIT
W="$B/ws"
mkdir "$W"
SECRET="moat-secret-$RANDOM$RANDOM"
printf '%s\n' "$SECRET" >"$W/.env"
printf '%s\n' "$SECRET" >"$W/denied.txt"
echo visible >"$W/a.txt"
mkfifo "$W/feed.fifo"
chmod -R a+rwX "$W"
mkdir "$B/cwd" "$B/nb" && chmod 755 "$B/cwd" && chown 65534:65534 "$B/nb" 2>/dev/null

cat >"$W/probe.py" <<'EOF'
import os
for p in ("a.txt", ".env", "denied.txt"):
    try:
        fd = os.open(p, os.O_RDONLY)
        print(p, "OPEN", os.read(fd, 100).decode().strip())
    except OSError as e:
        print(p, "ERR", e.errno)
EOF

# run [ENV=V...] -- [OPTIONS...]: the probe, then a reader of the FIFO (which a hidden
# FIFO's writer must never meet); stdout to $B/out, stderr to $B/err.
run() {
	local env=()
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	(cd "$B/cwd" && env "${env[@]}" timeout 60 "$MOAT" run --mode namespaced \
		--bind "$W:/workspace" --chdir /workspace --hide '**/feed.fifo' \
		--deny '/workspace/denied.txt' "$@" -- \
		sh -c 'python3 probe.py; timeout 3 cat feed.fifo >/dev/null 2>&1; echo fifo=$?' \
		>"$B/out" 2>"$B/err")
}
# writer: a host process that writes the FIFO; its exit says whether a reader came
# (0) or not (124, killed by timeout). Started before the sandbox, waits 6 s at most.
writer() { (timeout 6 sh -c "echo HOST-FEED > '$W/feed.fifo'"; echo $? >"$B/writer") &
	track_pid $!; }
diag() { echo "--- out"; head -c 1500 "$B/out"; echo "--- err"; head -c 1500 "$B/err"; }
no_leak() { no_secret "$B/out" "$SECRET" && no_secret "$B/err" "$SECRET"; }
# probed REPORT OPENS ENV_ERRNO DENIED_ERRNO: the report's read_only_opens is OPENS, the
# probe read the visible file and got these errnos, and no secret showed anywhere
probed() {
	[ "$(jq -r .features.read_only_opens "$1" 2>/dev/null)" = "$2" ] &&
		grep -qx 'a.txt OPEN visible' "$B/out" && grep -qx ".env ERR $3" "$B/out" &&
		grep -qx "denied.txt ERR $4" "$B/out" && no_leak
}

# Root: the marks are in place (the report says so), the opens get EPERM.
if [ "$(id -u)" -eq 0 ] && [ -z "${MOAT_TEST_NO_FANOTIFY:-}" ]; then
	writer
	run -- --report "$B/r.json" --events "$B/ev.jsonl"
	wait
	probed "$B/r.json" native 1 1
	ok $? "root: a hidden .env and a denied file fail natively with EPERM, a visible file reads" "$(diag)"
	[ "$(cat "$B/writer")" = 124 ] && grep -qx 'fifo=1' "$B/out"
	ok $? "root: the hidden FIFO is not opened (the host writer met no reader: $(cat "$B/writer"))" "$(diag)"
	[ "$(jq -r '.denials.by_syscall.openat' "$B/r.json")" -ge 3 ]
	ok $? "root: --report counts the denied opens ($(jq -c .denials "$B/r.json"))"
	[ "$(jq -r 'select(.event=="denial" and .syscall=="openat" and .errno=="EPERM") | .rule' "$B/ev.jsonl" | sort -u | tr '\n' '|')" = \
	  "deny /workspace/denied.txt (--deny)|hide **/.env (default profile)|hide **/feed.fifo (--hide)|" ]
	ok $? "root: --events lists each denied open with its rule" "$(cat "$B/ev.jsonl")"
	grep -q 'moat: [0-9]* denied calls (.*openat [3-9]' "$B/err" && ! grep -q 'denied openat "' "$B/err"
	ok $? "root: without -v the exit line still counts them" "$(diag)"
	# -v asks for every denial, which a native open below a hidden directory cannot
	# give (a failed lookup reaches no kernel hook): opens stay trapped, a denied one
	# is reported and continued, and the program sees the errno it sees without -v.
	writer
	run -- -v --report "$B/rv.json" --events "$B/evv.jsonl"
	wait
	probed "$B/rv.json" continued 1 1 && grep -q 'read-only opens: checked, then continued, refused ones too' "$B/err"
	ok $? "root -v: opens trapped and continued, still EPERM for the hidden and the denied file" "$(diag)"
	[ "$(grep -c 'denied openat "[^"]*\.env" (hide \*\*/.env (default profile)): EPERM' "$B/err")" = 1 ] &&
		[ "$(grep -c 'denied openat "[^"]*denied.txt" (deny /workspace/denied.txt (--deny)): EPERM' "$B/err")" = 1 ] &&
		[ "$(grep -c 'denied openat "[^"]*feed.fifo" (hide \*\*/feed.fifo (--hide)): EPERM' "$B/err")" = 1 ]
	ok $? "root -v: names the rule of each denied open, once" "$(diag)"
	[ "$(cat "$B/writer")" = 124 ] && grep -qx 'fifo=1' "$B/out"
	ok $? "root -v: the hidden FIFO is not opened (writer: $(cat "$B/writer"))" "$(diag)"
	[ "$(jq -r 'select(.event=="denial" and .syscall=="openat" and .errno=="EPERM") | .rule' "$B/evv.jsonl" | sort | tr '\n' '|')" = \
	  "deny /workspace/denied.txt (--deny)|hide **/.env (default profile)|hide **/feed.fifo (--hide)|" ]
	ok $? "root -v: --events lists each denied open once, EPERM, with its rule" "$(cat "$B/evv.jsonl")"
	# Reopening a stub through /proc/self/root (the same inode, another path) meets the
	# same mark; so does a directory stub, and there is nothing below it.
	mkdir -p "$W/keys" "$W/private" && echo "$SECRET" >"$W/keys/k" && echo "$SECRET" >"$W/private/p" &&
		chmod -R a+rwX "$W/keys" "$W/private"
	(cd "$B/cwd" && timeout 60 "$MOAT" run --mode namespaced --bind "$W:/workspace" \
		--chdir /workspace --hide /workspace/keys -- python3 -c '
import os
for p in ("/proc/self/root/workspace/.env", "keys", "keys/k"):
    try:
        fd = os.open(p, os.O_RDONLY)
        print(p, "OPEN", os.read(fd, 100) if not os.path.isdir(p) else os.listdir(fd))
    except OSError as e:
        print(p, "ERR", e.errno)
' >"$B/out" 2>"$B/err")
	grep -qx '/proc/self/root/workspace/.env ERR 1' "$B/out" && grep -qx 'keys ERR 1' "$B/out" &&
		grep -qx 'keys/k ERR 2' "$B/out" && no_leak
	ok $? "root: /proc/self/root of a stub and a directory stub are refused, nothing below it" "$(diag)"
	# The errno a program sees is the same with and without -v (-v must not change
	# what the sandbox sees), for a hidden file, a name below a hidden directory and
	# below a denied one, a symlink to a name below a hidden directory, and below the
	# keeper's /proc/1; -v names each rule once. A hidden symlink is no stub: the
	# kernel follows it to a visible file, with and without -v, and -v names no rule.
	mkdir -p "$W/sub" && ln -sfn ../keys/k "$W/sub/l3" && ln -sfn ../a.txt "$W/sub/.env"
	cat >"$W/errnos.py" <<'PY'
import errno, os
for p in (".env", "keys/k", "private/p", "keys/none", "sub/l3", "sub/.env", "/proc/1/environ"):
    try:
        os.close(os.open(p, os.O_RDONLY))
        print(p, "OPEN")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, e.errno))
PY
	errnos() { (cd "$B/cwd" && timeout 60 "$MOAT" run "$@" --mode namespaced --bind "$W:/workspace" \
		--chdir /workspace --hide /workspace/keys --deny /workspace/private -- \
		python3 errnos.py >"$B/out" 2>"$B/err"); }
	errnos -v
	cp "$B/out" "$B/out-v"
	cp "$B/err" "$B/err-v"
	grep -q 'denied openat "keys/k" (hide /workspace/keys (--hide)): ENOENT' "$B/err-v" &&
		grep -q 'denied openat "private/p" (deny /workspace/private (--deny)): ENOENT' "$B/err-v" &&
		grep -q 'denied openat "sub/l3" (hide /workspace/keys (--hide)): ENOENT' "$B/err-v" &&
		! grep -q 'keys/none\|sub/\.env' "$B/err-v"
	ok $? "root -v: names the rule of an open below a hidden and below a denied directory" "$(cat "$B/err-v")"
	errnos
	if [ -d /proc/1 ] && grep -qx '/proc/1/environ OPEN' "$B/out"; then
		# not reachable here: compare the rest
		sed -i '/^\/proc\/1\//d' "$B/out" "$B/out-v"
	fi
	cmp -s "$B/out" "$B/out-v" && grep -qx '.env EPERM' "$B/out" && grep -qx 'keys/k ENOENT' "$B/out" &&
		grep -qx 'private/p ENOENT' "$B/out" && grep -qx 'keys/none ENOENT' "$B/out" &&
		grep -qx 'sub/l3 ENOENT' "$B/out" && grep -qx 'sub/.env OPEN' "$B/out" &&
		no_secret "$B/out-v" "$SECRET"
	ok $? "root: the same errnos with and without -v ($(tr '\n' ' ' <"$B/out"))" "$(diff "$B/out" "$B/out-v"; cat "$B/err-v")"
	# each denial once: .env, keys/k, private/p, sub/l3 and the keeper's /proc/1. Without -v
	# only the stub's refusal is counted: the failed lookups reach no kernel hook
	# (docs/threat-model.md, "Native read-only opens").
	grep -q 'moat: 5 denied calls (openat 5)' "$B/err-v" && [ "$(grep -c 'denied openat' "$B/err-v")" = 5 ] &&
		grep -q 'moat: 1 denied call (openat 1)' "$B/err"
	ok $? "root -v: the exit line counts each denied open once (without -v the stub's alone)" "$(cat "$B/err-v" "$B/err")"
else
	for i in $(seq 13); do
		skip "root case $i" "fanotify permission events need root (and no MOAT_TEST_NO_FANOTIFY)"
	done
fi

# The fallback, as a run without root gets it: opens trapped and continued.
if grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
	writer
	run MOAT_TEST_NO_FANOTIFY=1 -- -v --report "$B/r2.json" --events "$B/ev2.jsonl"
	wait
	probed "$B/r2.json" continued 2 13
	ok $? "no fanotify: the opens are trapped, ENOENT and EACCES as before" "$(diag)"
	grep -q 'denied openat ".env" (hide \*\*/.env (default profile)): ENOENT' "$B/err" &&
		grep -q 'denied openat "denied.txt" (deny /workspace/denied.txt (--deny)): EACCES' "$B/err" &&
		grep -q 'read-only opens: checked, then continued' "$B/err"
	ok $? "no fanotify: -v names the rules and says opens are continued" "$(diag)"
	[ "$(cat "$B/writer")" = 124 ] && grep -qx 'fifo=1' "$B/out"
	ok $? "no fanotify: the hidden FIFO is not opened (writer: $(cat "$B/writer"))" "$(diag)"
	[ "$(jq -r '.denials.by_syscall.openat' "$B/r2.json")" -ge 3 ] &&
		[ "$(jq -r 'select(.event=="denial" and .syscall=="openat") | .rule' "$B/ev2.jsonl" | sort -u | wc -l)" = 3 ]
	ok $? "no fanotify: --report and --events list the denied opens" "$(jq -c .denials "$B/r2.json")"
else
	for i in $(seq 4); do skip "fallback case $i" "a build without test_hooks"; done
fi

# A literal hide is covered while the mappings are mounted; the walk that resolves the
# globs, which reads the whole (writable) workspace, meets it again. One stub over it,
# as the kernel lists the sandbox's mounts: a second bind on the first is a mount made
# and torn down for nothing.
mkdir "$W/lit" && printf '%s\n' "$SECRET" >"$W/lit/k.txt" && chmod -R a+rwX "$W/lit"
(cd "$B/cwd" && timeout 60 "$MOAT" run -q --mode namespaced --bind "$W:/workspace" \
	--chdir /workspace --hide /workspace/lit -- \
	sh -c 'grep -c " /workspace/lit " /proc/self/mountinfo; cat lit/k.txt' >"$B/out" 2>"$B/err")
[ "$(head -1 "$B/out")" = 1 ] && no_leak
ok $? "a literal hide the glob walk meets as well is covered by one stub ($(head -1 "$B/out") mounts)" "$(diag)"
rm -rf "$W/lit"

# The real fallback: moat started by another user (no fanotify permission events).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
	(cd "$B/cwd" && setpriv --reuid=65534 --regid=65534 --clear-groups "$MOAT" run -q \
		--mode namespaced -- true) >/dev/null 2>&1; then
	(cd "$B/cwd" && timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$MOAT" run -v --mode namespaced --bind "$W:/workspace" --chdir /workspace \
		--deny /workspace/denied.txt --report "$B/nb/r.json" -- python3 probe.py \
		>"$B/out" 2>"$B/err")
	probed "$B/nb/r.json" continued 2 13 &&
		grep -q 'read-only opens: checked, then continued' "$B/err"
	ok $? "started by nobody: opens continued, ENOENT and EACCES, the rules shown" "$(diag)"
	grep -q 'moat: 2 denied calls (openat 2)' "$B/err"
	ok $? "started by nobody: the exit line counts them" "$(diag)"
else
	skip "started by nobody" "not root, no setpriv, or an unprivileged namespaced run cannot start here"
	skip "started by nobody: count" "as above"
fi
finish
