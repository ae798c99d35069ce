#!/usr/bin/env bash
# The default profile gives ordinary tools what they write to: a private, empty,
# writable HOME (the real home's files stay out, ~/.ssh stays hidden), a private
# /dev/shm (multiprocessing, shared_memory), a writable /tmp at its own name in both
# modes (unnamespaced: the host's /tmp showing only what the run made, removed after);
# and -v and the report count only what the policy took away, not names that do not
# exist natively either. Every check reads what the sandbox printed, the report, or
# the host after the run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 22
PY=/usr/bin/python3
# the caller's home lies outside /tmp (the sandbox's /tmp is another directory)
H=$(mktemp -d /var/tmp/moat-env-home.XXXXXX)
mkdir -p "$TMP/cwd" "$H/.ssh"
HSECRET="moat-home-secret-$RANDOM$RANDOM"
echo "$HSECRET" >"$H/.ssh/id_rsa"
echo "$HSECRET" >"$H/.gitconfig"
export HOME=$H
TAG=moat-env-$$-$RANDOM
# a host file in /tmp (and /dev/shm) the sandbox did not make
HOSTFILE=/tmp/$TAG-host; echo "$HSECRET" >"$HOSTFILE"
SHMFILE=/dev/shm/$TAG-host; echo "$HSECRET" >"$SHMFILE" 2>/dev/null || SHMFILE=
trap 'rm -rf "$HOSTFILE" ${SHMFILE:+"$SHMFILE"} "$H"; _tap_cleanup' EXIT

run() { # run MODE ARGS... -- CMD
	local mode=$1; shift
	(cd "$TMP/cwd" && timeout 60 "$MOAT" run --mode "$mode" "$@" >"$TMP/out" 2>"$TMP/err")
	rc=$?
}
diag() { echo "rc=$rc"; echo "--- stdout"; head -c 2000 "$TMP/out"; echo "--- stderr"; head -c 2000 "$TMP/err"; }

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 11); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	run $mode -q -- sh -c 'echo "HOME=$HOME"; ls -A "$HOME"; mkdir -p ~/.cache/pip ~/.npm && echo cached > ~/.cache/pip/x && cat ~/.cache/pip/x; git config --global user.name sandbox && git config --global user.name'
	grep -qx cached "$TMP/out" && grep -qx sandbox "$TMP/out" && [ "$(sed -n 2p "$TMP/out")" = cached ] &&
		no_secret "$TMP/out" "$HSECRET" && [ ! -e "$H/.cache" ] && [ ! -e "$H/.npm" ] &&
		[ "$(cat "$H/.gitconfig")" = "$HSECRET" ]
	ok $? "$mode: HOME is private, empty and writable; the real home is untouched" "$(diag)"

	if [ $mode = namespaced ]; then
		grep -qx "HOME=$H" "$TMP/out"
		ok $? "$mode: HOME keeps the caller's path" "$(diag)"
	else
		h=$(sed -n 's/^HOME=//p' "$TMP/out")
		[ -n "$h" ] && [ "$h" != "$H" ] && [ ! -e "$h" ]
		ok $? "$mode: HOME is a private host directory, removed after the run ($h)" "$(diag)"
	fi

	# namespaced, the private home has the home's path, so the hide rules for ~/.ssh
	# apply to it; unnamespaced, it is another directory and they apply to the real one
	run $mode -q -- sh -c 'cat ~/.ssh/id_rsa; cat '"$H"'/.ssh/id_rsa; mkdir -p '"$H"'/.ssh/x; echo rc=$?'
	# (namespaced with native creates, the private home has no .ssh, and one the
	# sandbox makes there is its own: mkdir -p may succeed; the real one is untouched)
	no_secret "$TMP/out" "$HSECRET" && [ ! -e "$H/.ssh/x" ] &&
		{ [ $mode = namespaced ] || grep -qx rc=1 "$TMP/out"; }
	ok $? "$mode: the real ~/.ssh stays hidden and nothing can be created in it" "$(diag)"

	run $mode -q -- $PY -c '
import multiprocessing as mp
from multiprocessing import shared_memory
m = shared_memory.SharedMemory(create=True, size=16)
m.buf[:2] = b"ok"
print(m.name)
with mp.Pool(2) as p:
    print(sum(p.map(abs, [-1, -2, -3])))
n = shared_memory.SharedMemory(m.name)
print(bytes(n.buf[:2]).decode())
n.close()
m.close()
m.unlink()
'
	name=$(head -1 "$TMP/out")
	[ $rc -eq 0 ] && [ "$(sed -n 2,3p "$TMP/out" | tr '\n' ' ')" = "6 ok " ] && [ -n "$name" ] &&
		[ ! -e "/dev/shm/$name" ]
	ok $? "$mode: multiprocessing.Pool and shared_memory work; nothing left in the host's /dev/shm" "$(diag)"

	run $mode -q -- sh -c "ls -A /dev/shm; cat $SHMFILE /tmp/$TAG-host; ls -A /tmp | grep -c $TAG; echo x > /tmp/$TAG-host; echo rc=\$?"
	no_secret "$TMP/out" "$HSECRET" && grep -qx 0 "$TMP/out" &&
		[ "$(cat "$HOSTFILE")" = "$HSECRET" ] && { [ -z "$SHMFILE" ] || ! grep -q "$TAG" "$TMP/out"; }
	ok $? "$mode: host entries of /tmp and /dev/shm are neither listed, read nor written" "$(diag)"

	run $mode -q -- sh -c "echo one > /tmp/$TAG-a && mkdir /tmp/$TAG-d && mv /tmp/$TAG-a /tmp/$TAG-d/b && cat /tmp/$TAG-d/b && ls /tmp | grep $TAG && sqlite3 /tmp/$TAG.db 'create table t(x); insert into t values(42); select x from t;'"
	[ $rc -eq 0 ] && grep -qx one "$TMP/out" && grep -qx "$TAG-d" "$TMP/out" && grep -qx 42 "$TMP/out" &&
		[ -z "$(ls -d /tmp/$TAG-* /tmp/$TAG.db 2>/dev/null | grep -v -- -host)" ]
	ok $? "$mode: /tmp/NAME is writable at its own name (files, dirs, rename, SQLite); gone after the run" "$(diag)"

	run $mode -q -- $PY -c "
import socket, os
p = '/tmp/$TAG-sock'
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen()
c = socket.socket(socket.AF_UNIX); c.connect(p); a, _ = s.accept(); c.send(b'hi'); print(a.recv(2).decode())
print(os.path.basename(p) in os.listdir('/tmp'))"
	[ $rc -eq 0 ] && [ "$(tr '\n' ' ' <"$TMP/out")" = "hi True " ] && [ ! -e "/tmp/$TAG-sock" ]
	ok $? "$mode: a unix socket bound in /tmp is listed and connectable; gone after the run" "$(diag)"

	run $mode -q -- $PY -c "
import tempfile, os
with tempfile.NamedTemporaryFile(dir='/tmp') as f:
    f.write(b'x'); f.flush(); print(os.path.exists(f.name))
print(tempfile.gettempdir())"
	[ $rc -eq 0 ] && [ "$(tr '\n' ' ' <"$TMP/out")" = "True /tmp " ]
	ok $? "$mode: tempfile uses /tmp" "$(diag)"

	# names that do not exist natively either are no denials; hidden ones are
	run $mode -v --report "$TMP/r.json" -- sh -c "cat /etc/$TAG-nothing /var/$TAG/nothing /sys/$TAG ~/.ssh/$TAG 2>/dev/null; true"
	[ $rc -eq 0 ] && ! grep -q denied "$TMP/err" && [ "$(jq .denials.total "$TMP/r.json")" = 0 ]
	ok $? "$mode: lookups of names missing on the host are not counted as denials" "$(diag; cat "$TMP/r.json" 2>/dev/null | head -c 600)"

	# namespaced, /tmp is a private directory in which the host's file does not exist;
	# unnamespaced, it is the host's /tmp, where the file exists and is hidden
	run $mode -v --report "$TMP/r.json" -- sh -c "cat /etc/shadow $HOSTFILE 2>/dev/null; true"
	if [ $mode = namespaced ]; then want=1; else want=2; fi
	[ $rc -eq 0 ] && grep -q 'denied openat "/etc/shadow"' "$TMP/err" &&
		{ [ $want = 1 ] || grep -q "denied openat \"$HOSTFILE\"" "$TMP/err"; } &&
		[ "$(jq .denials.total "$TMP/r.json")" = $want ] && [ "$(grep -c denied "$TMP/err")" = $((want + 1)) ]
	ok $? "$mode: hidden names that exist are counted (-v and the report agree)" "$(diag; cat "$TMP/r.json" 2>/dev/null | head -c 600)"

	run $mode -q --profile none --ro-bind / --bind "$TMP/cwd" -- sh -c 'echo "HOME=$HOME"'
	grep -qx "HOME=$H" "$TMP/out"
	ok $? "$mode: --profile none keeps the caller's HOME (no private home)" "$(diag)"
done
finish
