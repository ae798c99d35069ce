#!/usr/bin/env bash
# The tools say one true thing: verify gives one verdict per stream (a tampered signed
# stream is a failure, never also "signature valid"); stats' per-rule table keeps one
# line per rule whatever the rule text holds (the sandbox's resolv.conf rule has
# newlines); replay does not count moat's own DNS responder as a policy decision.
. "$(dirname "$0")/lib.sh"
plan 9

"$MOAT" audit keygen "$TMP/k" >/dev/null || skip_all "keygen failed"
# A name lookup: the namespaced sandbox reads moat's resolv.conf and asks 127.0.0.1:53;
# and one denial (a hidden secret), for the tables and the ECS mapping of a denied call.
"$MOAT" run -q --output-in-workspace --audit s.moat --audit-key "$TMP/k" -- "$PY" -c '
import socket
try: socket.getaddrinfo("moat-test.invalid", 80)
except OSError: pass
try: open("/etc/shadow")
except OSError: pass
open("/etc/hostname").read()' >/dev/null 2>&1

# --- verify: one verdict line, non-zero, naming the first bad frame -------------------
"$MOAT" audit verify --key "$TMP/k.pub" s.moat > v-good.txt 2>&1
ok $? "the intact signed stream verifies" "$(cat v-good.txt)"
size=$(stat -c %s s.moat)
for where in head middle; do
	cp s.moat "t-$where.moat"
	off=$([ $where = head ] && echo 40 || echo $((size / 2)))
	python3 - "t-$where.moat" "$off" <<'PYEOF'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[off] ^= 0xff; open(p, "wb").write(b)
PYEOF
	"$MOAT" audit verify --key "$TMP/k.pub" "t-$where.moat" > "v-$where.txt" 2>&1
	rc=$?
	verdicts=$(grep -Ec '^(ok|FAIL)' "v-$where.txt")
	verdict=$(grep -E '^(ok|FAIL)' "v-$where.txt")
	if [ $rc -ne 0 ] && [ "$verdicts" -eq 1 ] && printf '%s' "$verdict" | grep -Eq '^FAIL.*frame [0-9]+' &&
		! grep -qi 'signature valid' "v-$where.txt"; then
		pass "a byte flipped at the $where: exit $rc, one verdict naming the frame ($verdict)"
	else
		fail "a byte flipped at the $where: one failing verdict naming the frame" "exit $rc, $verdicts verdict lines:
$(cat "v-$where.txt")"
	fi
done

# --- stats: the per-rule table ----------------------------------------------------------
"$MOAT" audit stats s.moat > stats.txt 2>&1
rc=$?
rules=$(sed -n '/^per rule:/,/^$/p' stats.txt | sed '1d;/^$/d')
bad=$(printf '%s\n' "$rules" | grep -Evc '^ +[0-9]+  [^ ]')
if [ $rc -eq 0 ] && [ -n "$rules" ] && [ "$bad" -eq 0 ]; then
	pass "every line of the per-rule table is a count and a rule ($(printf '%s\n' "$rules" | wc -l) rules)"
else
	fail "every line of the per-rule table is a count and a rule" "exit $rc:
$(cat stats.txt)"
fi
if printf '%s\n' "$rules" | grep -q 'resolv.conf.*nameserver 127.0.0.1.*options'; then
	pass "the resolv.conf rule, newlines and all, stays on its one line"
else
	fail "the resolv.conf rule stays on its one line" "$rules"
fi

# --- replay: the DNS responder is moat's, not the policy's -------------------------------
printf 'moat-policy 1\nprofile default\n' > "$TMP/same"
"$MOAT" audit replay --policy "$TMP/same" s.moat > r.txt 2>&1
rc=$?
if [ $rc -eq 0 ] && ! grep -q '127.0.0.1:53.*->' r.txt; then
	pass "replay under the run's own policy: exit 0, the DNS responder is not a change"
else
	fail "replay under the run's own policy: exit 0, no change for 127.0.0.1:53" "exit $rc: $(cat r.txt)"
fi
if grep -q "moat's own infrastructure" r.txt; then
	pass "and replay says it left moat's own infrastructure out"
else
	fail "replay says it left moat's own infrastructure out" "$(cat r.txt)"
fi

# --- dump --format ecs: one Elastic Common Schema event per record -----------------------
"$MOAT" audit dump --format ecs s.moat > ecs.jsonl 2> ecs.err
rc=$?
n_ecs=$(jq -c 'select(has("@timestamp") and .ecs.version and .event.kind == "event" and (.event.category | type) == "array")' ecs.jsonl | wc -l)
n_rec=$("$MOAT" audit dump --json s.moat | jq -c 'select(.type != "ckpt" and .type != "sig")' | wc -l)
if [ $rc -eq 0 ] && [ "$n_ecs" -gt 0 ] && [ "$n_ecs" -eq "$n_rec" ] && [ "$(wc -l < ecs.jsonl)" -eq "$n_rec" ]; then
	pass "dump --format ecs: one ECS event per record ($n_ecs)"
else
	fail "dump --format ecs: one ECS event per record" "exit $rc, $n_ecs ECS events of $(wc -l < ecs.jsonl) lines, $n_rec records: $(head -c 400 ecs.err)"
fi
den=$(jq -c 'select(.event.type | index("denied"))' ecs.jsonl | head -1)
want=$("$MOAT" audit dump --json s.moat | jq -c 'select(.type == "sys" and .decision == "denied")' | head -1)
if [ -n "$den" ] && [ "$(printf '%s' "$den" | jq -r '.event.outcome')" = failure ] &&
	[ "$(printf '%s' "$den" | jq -r '.rule.name')" = "$(printf '%s' "$want" | jq -r '.rule')" ] &&
	[ "$(printf '%s' "$den" | jq -r '.event.action')" = "$(printf '%s' "$want" | jq -r '.syscall')" ]; then
	pass "a denied call is an ECS event of type denied, outcome failure, with its rule and syscall"
else
	fail "a denied call maps to ECS" "ecs: $den
record: $want"
fi
finish
