#!/usr/bin/env bash
# podman run --runtime moat-runtime: the container runs, its hidden file stays hidden
# through every alias, a loopback port the policy does not name is refused while the
# named one is reached, the audit stream verifies, podman exec is supervised too, and
# killing its supervisor (or the agent) kills the container. Every effect is checked from outside: podman's output,
# the servers' accept counts, the stream, /proc of the host.
#
# This VM kind: hybrid cgroups (v1 controllers, an empty cgroup2), so podman runs with
# --cgroup-manager cgroupfs; its default rlimits (nofile 1048576, nproc) are above the
# hard limits here, so the containers get explicit ones. Storage is private to the test.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/oci/lib.sh"
need podman runc conmon

build_openat2
make_rootfs "$TMP/rootfs"
podman_image

plan 21

out=$(mrun "$IMG" cat /etc/hostname)
[ $? -eq 0 ] && [ -n "$out" ]
ok $? "podman run --runtime moat-runtime IMAGE cat /etc/hostname prints the hostname" "$(diag "$out")"

# The control: plain runc shows the file, so each check below can fail.
out=$(timeout 60 "${P[@]}" "${RUN[@]}" --runtime runc "$IMG" cat /secret/.env 2>&1)
[ "$out" = "TOKEN=topsecret" ]
ok $? "control: under plain runc the image's /secret/.env is readable" "$out"

out=$(mrun "$IMG" cat /secret/.env)
! grep -q topsecret <<<"$out"
ok $? "a hidden file inside the image is unreadable (**/.env)" "$(diag "$out")"
out=$(mrun "$IMG" sh -c 'cat /proc/self/root/secret/.env; cat /proc/1/root/secret/.env')
! grep -q topsecret <<<"$out"
ok $? "... nor through /proc/self/root and /proc/1/root" "$(diag "$out")"
out=$(mrun "$IMG" sh -c 'ln -s /secret/.env /tmp/l; cat /tmp/l; ln -s /secret /tmp/d; cat /tmp/d/.env')
! grep -q topsecret <<<"$out"
ok $? "... nor through a symlink to it or to its directory" "$(diag "$out")"
out=$(mrun "$IMG" sh -c 'ln /secret/.env /tmp/h && cat /tmp/h')
! grep -q topsecret <<<"$out"
ok $? "... nor through a hard link" "$(diag "$out")"
if [ -n "$OPENAT2_BIN" ]; then
	out=$(mrun "$IMG" sh -c '/bin/openat2 /secret/.env; cd /secret && /bin/openat2 .env')
	! grep -q topsecret <<<"$out" && grep -q "openat2:" <<<"$out$(cat "$TMP/err")"
	ok $? "... nor with openat2" "$(diag "$out")"
else
	skip "... nor with openat2" "no static C toolchain here to build the openat2 helper"
fi
out=$(mrun "$IMG" cat /etc/pub)
[ "$out" = public ]
ok $? "a file the policy does not hide reads as usual" "$(diag "$out")"

# Read-only paths of the image's own (the host has no /secret): a write the container's
# writable root allows is refused under `ro-bind /secret`. The write under no policy is
# the control.
out=$(mrun "$IMG" sh -c 'echo x > /secret/w && cat /secret/w')
[ "$out" = x ]
ok $? "control: the container's root is writable (/secret/w written)" "$(diag "$out")"
out=$(mrun --annotation "run.moat.policy=moat-policy 1; ro-bind /secret" "$IMG" \
	sh -c 'echo x > /secret/w; cat /secret/w; ls /secret')
! grep -qx x <<<"$out" && grep -q "Read-only file system" "$TMP/err"
ok $? "ro-bind /secret (a path only the image has) makes it read-only" "$(diag "$out")"

# Network: the policy names one loopback port; the other gets nothing.
start_server tcp A && start_server tcp B || skip_all "cannot start the test servers"
policy="moat-policy 1; allow-net 127.0.0.1:$PORT_A"
out=$(mrun --annotation run.moat.policy="$policy" --annotation run.moat.audit="$TMP/run.moat" \
	--annotation run.moat.report="$TMP/report.json" \
	"$IMG" sh -c "echo hi | nc 127.0.0.1 $PORT_A; echo hi | nc 127.0.0.1 $PORT_B; cat /secret/.env")
[ "$(cat "$TMP/A.log")" -ge 1 ]
ok $? "a connect to the allowed loopback port reaches the host's server" "$(diag "$out")"
[ "$(cat "$TMP/B.log")" -eq 0 ]
ok $? "a connect to another loopback port is refused: that server accepted nothing" "$(diag "$out")"

"$MOAT" audit verify "$TMP/run.moat" >"$TMP/verify" 2>&1
ok $? "the container's audit stream verifies" "$(cat "$TMP/verify")"
"$MOAT" audit dump "$TMP/run.moat" >"$TMP/dump" 2>&1
grep -q "/secret/.env" "$TMP/dump" && grep -q "$PORT_B" "$TMP/dump"
ok $? "its dump holds the refused open and the refused connect" "$(tail -20 "$TMP/dump")"

# exec: the added process gets a supervisor of its own; its end is not the container's.
cid=$(timeout 60 "${P[@]}" run -d --network host --ulimit nofile=1024:1024 \
	--ulimit nproc=1024:1024 --runtime "$MOAT_RUNTIME" "$IMG" sleep 60 2>"$TMP/err")
out=$(timeout 60 "${P[@]}" exec "$cid" sh -c 'cat /etc/pub; cat /secret/.env' 2>>"$TMP/err")
grep -qx public <<<"$out" && ! grep -q topsecret <<<"$out"
ok $? "podman exec: the added process runs supervised (the hidden file stays hidden)" "$(diag "$out")"
pid=$("${P[@]}" inspect --format '{{.State.Pid}}' "$cid" 2>/dev/null)
sleep 1
[ -n "$pid" ] && [ "$pid" != 0 ] && ! gone "$pid" 1
ok $? "... and the container outlives it" "pid '$pid' $(diag "")"
"${P[@]}" rm -f -t 0 "$cid" >/dev/null 2>&1

jq -e '.denials.total >= 2' "$TMP/report.json" >/dev/null 2>&1
ok $? "run.moat.report: the report, on the host, counts the container's denials" "$(head -c 600 "$TMP/report.json" 2>&1)"

out=$(mrun --annotation "run.moat.policy=moat-policy 1; no-such-directive x" "$IMG" echo RAN)
! grep -q RAN <<<"$out"
ok $? "a policy moat cannot use: the container's program never runs" "$(diag "$out")"

# Fail closed: the container dies with its supervisor, or with the agent.
for victim in supervisor agent "agent's process group"; do
	cid=$(timeout 60 "${P[@]}" run -d --network host --ulimit nofile=1024:1024 \
		--ulimit nproc=1024:1024 --runtime "$MOAT_RUNTIME" "$IMG" sleep 60 2>"$TMP/err")
	pid=$("${P[@]}" inspect --format '{{.State.Pid}}' "$cid" 2>/dev/null)
	agent=$(cat "$MOAT_RUNTIME_STATE/$cid/agent.pid" 2>/dev/null)
	sup=$([ -n "$agent" ] && pgrep -P "$agent" | head -1)
	if [ -z "$pid" ] || [ "$pid" = 0 ] || [ -z "$sup" ]; then
		fail "killing the $victim kills the container" "container $cid pid '$pid' agent '$agent' supervisor '$sup'"
		continue
	fi
	if gone "$pid" 1; then
		fail "killing the $victim kills the container" "the container was gone before the kill"
		continue
	fi
	case $victim in
	supervisor) kill -9 "$sup" ;;
	agent) kill -9 "$agent" ;;
	*) kill -9 -- "-$agent" ;; # the agent leads its session and group
	esac
	gone "$pid" 5
	ok $? "killing the $victim (agent $agent, supervisor $sup) kills the container (pid $pid)" \
		"$(ps -o pid,stat,cmd -p "$pid")"
	"${P[@]}" rm -f -t 0 "$cid" >/dev/null 2>&1
done
finish
