#!/usr/bin/env bash
# Creating a hidden name, or any name under a hidden directory, fails with EACCES, the
# way a place the caller may not write or search fails; never with ENOENT, which
# programs act on (mkdir -p and Node's recursive mkdir create the parent and retry, for
# ever when the parent is a hidden top-level name). Looking still says ENOENT: a hidden
# name does not exist. Every check reads the errno the program printed, and the host.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 20
PY=/usr/bin/python3
mkdir "$TMP/cwd" "$TMP/home"
# /root must be hidden, not the caller's private home (the default profile gives the
# home a private directory): moat runs with a home elsewhere
export HOME=$TMP/home

# errno_of CALL...: a Python snippet printing the errno name each call fails with
probe='
import errno, os, sys
def t(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
D = sys.argv[1]
t("mkdir-root", lambda: os.mkdir("/root"))
t("makedirs-npm", lambda: os.makedirs("/root/.npm/_cacache", exist_ok=True))
t("stat-root", lambda: os.stat("/root"))
t("open-root-file", lambda: open("/root/.bashrc"))
t("creat-under-root", lambda: open("/root/new-file", "w"))
t("creat-env", lambda: open(D + "/.env", "w"))
t("creat-env-excl", lambda: os.open(D + "/sub/.env", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
t("mkdir-env", lambda: os.mkdir(D + "/sub/.env"))
t("symlink-env", lambda: os.symlink("a.txt", D + "/sub/.env"))
t("link-env", lambda: os.link(D + "/a.txt", D + "/sub/.env"))
t("rename-env", lambda: os.rename(D + "/a.txt", D + "/sub/.env"))
t("mknod-env", lambda: os.mkfifo(D + "/sub/.env"))
t("stat-env", lambda: os.stat(D + "/.env"))
t("open-env", lambda: open(D + "/.env"))
'
expect="mkdir-root EACCES
makedirs-npm EACCES
stat-root ENOENT
open-root-file ENOENT
creat-under-root EACCES
creat-env EACCES
creat-env-excl EACCES
mkdir-env EACCES
symlink-env EACCES
link-env EACCES
rename-env EACCES
mknod-env EACCES
stat-env ENOENT
open-env ENOENT"

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6 7 8 9; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	make_workspace
	# A report asks for the change set, which keeps creates with moat (its EACCES is
	# what this tests); a plain namespaced run leaves them to the kernel (below).
	if [ "$mode" = namespaced ]; then
		map=(--bind "$W:/workspace" --chdir /workspace --report "$TMP/report.json"); D=/workspace
	else map=(--bind "$W" --chdir "$W"); D=$W; fi
	(cd "$TMP/cwd" && timeout 60 "$MOAT" run -q --mode "$mode" "${map[@]}" \
		-- $PY -c "$probe" "$D" >"$TMP/out" 2>"$TMP/err")
	rc=$?
	diag="rc=$rc
$(diff <(echo "$expect") "$TMP/out")
$(head -c 2000 "$TMP/err")"
	[ $rc -eq 0 ] && diff -q <(echo "$expect" | head -2) <(head -2 "$TMP/out") >/dev/null
	ok $? "$mode: mkdir /root and makedirs /root/.npm say EACCES, not ENOENT" "$diag"
	[ "$(sed -n 3,4p "$TMP/out")" = "$(echo "$expect" | sed -n 3,4p)" ]
	ok $? "$mode: stat and open of /root still say ENOENT" "$diag"
	[ "$(sed -n 5p "$TMP/out")" = "creat-under-root EACCES" ]
	ok $? "$mode: open(O_CREAT) under /root says EACCES" "$diag"
	[ "$(sed -n 6,12p "$TMP/out")" = "$(echo "$expect" | sed -n 6,12p)" ] &&
		[ ! -e "$W/sub/.env" ] && [ -e "$W/a.txt" ]
	ok $? "$mode: O_CREAT, O_EXCL, mkdir, symlink, link, rename, mkfifo onto a hidden name: EACCES, nothing on the host" "$diag"
	# Namespaced, the kernel answers stat and finds the empty stub that covers the
	# name (--strict-hide keeps it absent). A read-only open is native when root
	# started moat: the stub's fanotify mark refuses it with EPERM, the one errno
	# fanotify gives (a policy decision of the fast path, docs/threat-model.md);
	# otherwise the supervisor decides it and says ENOENT.
	open_env=ENOENT
	[ "$(id -u)" -eq 0 ] && [ -z "${MOAT_TEST_NO_FANOTIFY:-}" ] && open_env=EPERM
	if [ "$mode" = namespaced ]; then want="stat-env ok
open-env $open_env"; else want=$(echo "$expect" | sed -n 13,14p); fi
	[ "$(sed -n 13,14p "$TMP/out")" = "$want" ]
	ok $? "$mode: the hidden .env still does not exist for ${want%% *} and open" "$diag"

	# mkdir -p under a hidden home fails at once with a clear error (no loop)
	(cd "$TMP/cwd" && timeout 20 "$MOAT" run -q --mode "$mode" "${map[@]}" \
		-- sh -c 'mkdir -p /root/.npm/x; echo "rc=$?"' >"$TMP/out" 2>"$TMP/err")
	rc=$?
	[ $rc -eq 0 ] && grep -q "rc=1" "$TMP/out" && grep -qi "permission denied" "$TMP/err"
	ok $? "$mode: mkdir -p /root/.npm/x fails at once with 'Permission denied'" "rc=$rc $(cat "$TMP/out" "$TMP/err" | head -c 1000)"

	# a HOME that is mapped but not writable (read-only /): a clear error at once too
	(cd "$TMP/cwd" && timeout 20 "$MOAT" run -q --mode "$mode" --profile none --ro-bind / \
		--bind "$TMP/cwd" --setenv HOME "$TMP/home" \
		-- sh -c 'mkdir -p ~/.npm/x; echo "rc=$?"' >"$TMP/out" 2>"$TMP/err")
	rc=$?
	[ $rc -eq 0 ] && grep -q "rc=1" "$TMP/out" && grep -qi "read-only file system" "$TMP/err" &&
		[ ! -e "$TMP/home/.npm" ]
	ok $? "$mode: mkdir -p ~/.npm/x with a read-only HOME fails at once with 'Read-only file system'" \
		"rc=$rc $(cat "$TMP/out" "$TMP/err" | head -c 1000)"

	# Node's recursive mkdir looped for ever on ENOENT for a top-level name
	if command -v node >/dev/null; then
		(cd "$TMP/cwd" && timeout 20 "$MOAT" run -q --mode "$mode" "${map[@]}" -- node -e '
			try { require("fs").mkdirSync("/root/.npm/_cacache", { recursive: true }); console.log("made"); }
			catch (e) { console.log(e.code); }' >"$TMP/out" 2>"$TMP/err")
		rc=$?
		[ $rc -eq 0 ] && grep -qx EACCES "$TMP/out"
		ok $? "$mode: node's recursive mkdir under /root ends with EACCES" "rc=$rc $(cat "$TMP/out" "$TMP/err" | head -c 1000)"
	else
		skip "$mode: node's recursive mkdir under /root ends with EACCES" "node is not installed"
	fi

	# the verbose line names the rule, with the errno the program got
	(cd "$TMP/cwd" && "$MOAT" run -v --mode "$mode" "${map[@]}" -- mkdir /root >/dev/null 2>"$TMP/err")
	grep -q 'denied mkdir.*"/root".*hide /root.*EACCES' "$TMP/err"
	ok $? "$mode: -v names the hide rule and EACCES" "$(head -c 1000 "$TMP/err")"
done

# A plain namespaced run leaves creates to the kernel (docs/threat-model.md, "Native
# creates") where root started moat: /root is absent from the read-only skeleton, so
# making it says EROFS, as a container with a read-only root does; still at once, no
# loop, and nothing appears on the host.
if have_mode namespaced && [ "$(id -u)" -eq 0 ]; then
	(cd "$TMP/cwd" && timeout 20 "$MOAT" run -q -- sh -c 'mkdir -p /root/.npm/x; echo "rc=$?"' \
		>"$TMP/out" 2>"$TMP/err")
	rc=$?
	[ $rc -eq 0 ] && grep -q "rc=1" "$TMP/out" && grep -qiE "read-only file system|permission denied" "$TMP/err"
	ok $? "native creates: mkdir -p /root/.npm/x fails at once" "rc=$rc $(cat "$TMP/out" "$TMP/err" | head -c 1000)"
	if command -v node >/dev/null; then
		(cd "$TMP/cwd" && timeout 20 "$MOAT" run -q -- node -e '
			try { require("fs").mkdirSync("/root/.npm/_cacache", { recursive: true }); console.log("made"); }
			catch (e) { console.log(e.code); }' >"$TMP/out" 2>"$TMP/err")
		rc=$?
		[ $rc -eq 0 ] && grep -qxE "EROFS|ENOENT|EACCES" "$TMP/out"
		ok $? "native creates: node's recursive mkdir under /root ends (no loop)" "rc=$rc $(cat "$TMP/out" "$TMP/err" | head -c 1000)"
	else
		skip "native creates: node's recursive mkdir under /root ends" "node is not installed"
	fi
else
	skip "native creates: mkdir -p /root/.npm/x fails at once" "needs root and namespaced mode"
	skip "native creates: node's recursive mkdir under /root ends" "needs root and namespaced mode"
fi
finish
