#!/usr/bin/env bash
# runc with a listenerPath seccomp profile -> `moat agent`: the profile is what
# `moat-runtime seccomp-profile` prints (as a Kubernetes Localhost profile would hold it),
# the policy comes from listenerMetadata or the container's annotation, and killing the
# agent or a supervisor kills the container. Plain runc on the same bundle is the
# control. Checked from outside: runc's output, the host's /proc.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/oci/lib.sh"
need runc

make_rootfs "$TMP/bundle/rootfs"
(cd "$TMP/bundle" && runc spec) || skip_all "runc spec failed"
SOCK="$TMP/agent.sock"
"$MOAT_RUNTIME" seccomp-profile --listener "$SOCK" >"$TMP/profile.json" ||
	skip_all "moat-runtime seccomp-profile failed"

# config ARGS...: the bundle's config for a command, host network, with the profile
# (and META as its listenerMetadata, ANNOT as run.moat.policy) unless PLAIN is set.
config() {
	PROFILE="$TMP/profile.json" "$PY" - "$TMP/bundle/config.json" "$@" <<'PY'
import json, os, sys
path, args = sys.argv[1], sys.argv[2:]
c = json.load(open(path))
c["process"]["args"] = args
c["process"]["terminal"] = False
c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}]
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]
c["linux"].pop("seccomp", None)
c["annotations"] = {}
if not os.environ.get("PLAIN"):
    sc = json.load(open(os.environ["PROFILE"]))
    if os.environ.get("META"):
        sc["listenerMetadata"] = os.environ["META"]
    c["linux"]["seccomp"] = sc
if os.environ.get("ANNOT"):
    c["annotations"]["run.moat.policy"] = os.environ["ANNOT"]
json.dump(c, open(path, "w"))
PY
}
n=0
crun_() { n=$((n + 1)); (cd "$TMP/bundle" && timeout 60 runc run "t$$-$n") 2>"$TMP/err"; }
diag() { printf '%s\n--- stderr:\n%s\n--- agent:\n%s' "$1" "$(cat "$TMP/err")" "$(tail -20 "$TMP/agent.log")"; }

PLAIN=1 config cat /secret/.env
out=$(crun_)
[ "$out" = "TOKEN=topsecret" ] ||
	skip_all "plain runc cannot run the bundle here: $(head -c 300 "$TMP/err")"

"$MOAT" agent --socket "$SOCK" -v >"$TMP/agent.log" 2>&1 &
AGENT=$!
track_pid $AGENT
for i in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done

plan 7
pass "control: plain runc on the same bundle reads /secret/.env"

config sh -c 'cat /etc/pub; cat /secret/.env; cat /proc/self/root/secret/.env'
out=$(crun_)
grep -qx public <<<"$out" && ! grep -q topsecret <<<"$out"
ok $? "runc + listenerPath -> moat agent: the container runs, its hidden file stays hidden" "$(diag "$out")"
grep -q "supervised by" "$TMP/agent.log"
ok $? "the agent says it supervised the container" "$(diag "$out")"

META="moat-policy 1; hide /etc/pub" config cat /etc/pub
out=$(crun_)
! grep -q public <<<"$out"
ok $? "the policy from listenerMetadata hides what it names" "$(diag "$out")"
ANNOT="moat-policy 1; hide /etc/pub" config cat /etc/pub
out=$(crun_)
! grep -q public <<<"$out"
ok $? "... and so does the annotation run.moat.policy" "$(diag "$out")"

# crun speaks the same protocol: the same container under it, where crun can run one.
if ! command -v crun >/dev/null; then
	skip "crun + listenerPath -> moat agent" "crun is not installed"
else
	PLAIN=1 config cat /etc/pub
	n=$((n + 1))
	out=$(cd "$TMP/bundle" && timeout 60 crun run "t$$-$n" 2>&1)
	crun delete -f "t$$-$n" >/dev/null 2>&1
	if [ "$out" != public ]; then
		skip "crun + listenerPath -> moat agent" "crun cannot run a container here: $(head -c 200 <<<"$out")"
	else
		config sh -c 'cat /etc/pub; cat /secret/.env'
		n=$((n + 1))
		out=$(cd "$TMP/bundle" && timeout 60 crun run "t$$-$n" 2>"$TMP/err")
		crun delete -f "t$$-$n" >/dev/null 2>&1
		grep -qx public <<<"$out" && ! grep -q topsecret <<<"$out"
		ok $? "crun + listenerPath -> moat agent: runs, the hidden file stays hidden" "$(diag "$out")"
	fi
fi

# Fail closed: the agent's death reaches the supervisor, which kills the container.
config sleep 60
id="t$$-bg"
(cd "$TMP/bundle" && timeout 60 runc create "$id" </dev/null >/dev/null 2>"$TMP/err" &&
	runc start "$id")
pid=$(runc state "$id" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
if [ -n "$pid" ] && [ "$pid" != 0 ] && ! gone "$pid" 1; then
	kill -9 "$AGENT"
	wait "$AGENT" 2>/dev/null
	gone "$pid" 5
	ok $? "killing the agent kills the container it supervised (pid $pid)" "$(ps -o pid,stat,cmd -p "$pid")"
else
	fail "killing the agent kills the container it supervised" "no running container: pid '$pid' $(diag "")"
fi
runc delete -f "$id" >/dev/null 2>&1
for i in $(seq $n); do runc delete -f "t$$-$i" >/dev/null 2>&1; done
finish
