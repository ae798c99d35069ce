#!/usr/bin/env bash
# containerd: `ctr run --runc-binary moat-runtime`, the path a Kubernetes RuntimeClass
# takes through the runc v2 shim. A containerd of the test's own (socket, root and
# state under $TMP), an OCI archive built here (oci-archive.py) and imported with
# `ctr image import`. Plain runc through the same shim is the control. Checked from
# outside: ctr's output, the servers' accept counts, the host's /proc.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/oci/lib.sh"
need containerd ctr runc

make_rootfs "$TMP/rootfs"
CD="$TMP/cd"
mkdir -p "$CD"
containerd --address "$CD/sock" --root "$CD/root" --state "$CD/state" >"$CD/log" 2>&1 &
CDPID=$!
track_pid $CDPID
C=(ctr -a "$CD/sock" -n moat-test)
for i in $(seq 100); do "${C[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${C[@]}" version >/dev/null 2>&1 || skip_all "containerd does not start here: $(tail -c 300 "$CD/log")"
cleanup_cd() {
	"${C[@]}" task ls -q 2>/dev/null | while read -r t; do "${C[@]}" task kill -s KILL "$t"; done
	sleep 0.5
	"${C[@]}" container ls -q 2>/dev/null | while read -r c; do
		"${C[@]}" task delete -f "$c" >/dev/null 2>&1; "${C[@]}" container delete "$c"; done >/dev/null 2>&1
	kill "$CDPID" 2>/dev/null
	wait "$CDPID" 2>/dev/null
	grep -o " $TMP/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
}
trap 'cleanup_cd; _tap_cleanup' EXIT
IMG=docker.io/library/moat-oci-test:1
"$PY" "$OCIDIR/oci-archive.py" "$TMP/rootfs" "$TMP/img.tar" "$IMG" &&
	"${C[@]}" image import "$TMP/img.tar" >/dev/null 2>"$TMP/err" ||
	skip_all "ctr image import failed: $(head -c 300 "$TMP/err")"
n=0
crun_() { n=$((n + 1)); timeout 60 "${C[@]}" run --rm --net-host "$@" 2>"$TMP/err"; }
diag() { printf '%s\n--- stderr:\n%s' "$1" "$(cat "$TMP/err")"; }
out=$(crun_ "$IMG" "c$n" cat /secret/.env)
[ "$out" = "TOKEN=topsecret" ] || skip_all "ctr run with plain runc fails here: $(head -c 300 "$TMP/err")"

plan 5
pass "control: ctr run with plain runc reads the image's /secret/.env"
out=$(crun_ --runc-binary "$MOAT_RUNTIME" "$IMG" "c$n" sh -c 'cat /etc/pub; cat /secret/.env; cat /proc/self/root/secret/.env')
grep -qx public <<<"$out" && ! grep -q topsecret <<<"$out"
ok $? "ctr run --runc-binary moat-runtime: the container runs, its hidden file stays hidden" "$(diag "$out")"

start_server tcp A && start_server tcp B || skip_all "cannot start the test servers"
out=$(crun_ --runc-binary "$MOAT_RUNTIME" --annotation "run.moat.policy=moat-policy 1; allow-net 127.0.0.1:$PORT_A" \
	"$IMG" "c$n" sh -c "echo hi | nc 127.0.0.1 $PORT_A; echo hi | nc 127.0.0.1 $PORT_B")
[ "$(cat "$TMP/A.log")" -ge 1 ]
ok $? "the allowed loopback port is reached" "$(diag "$out")"
[ "$(cat "$TMP/B.log")" -eq 0 ]
ok $? "another loopback port is refused: that server accepted nothing" "$(diag "$out")"

"${C[@]}" run -d --net-host --runc-binary "$MOAT_RUNTIME" "$IMG" bg sleep 60 >/dev/null 2>"$TMP/err"
pid=$("${C[@]}" task ls 2>/dev/null | awk '$1 == "bg" {print $2}')
agent=$(cat "$MOAT_RUNTIME_STATE/bg/agent.pid" 2>/dev/null)
sup=$([ -n "$agent" ] && pgrep -P "$agent" | head -1)
if [ -n "$pid" ] && [ "$pid" != 0 ] && [ -n "$sup" ] && ! gone "$pid" 1; then
	kill -9 "$sup"
	gone "$pid" 5
	ok $? "killing the supervisor (pid $sup) kills the container (pid $pid)" "$(ps -o pid,stat,cmd -p "$pid")"
else
	fail "killing the supervisor kills the container" "pid '$pid' agent '$agent' supervisor '$sup' $(diag "")"
fi
finish
