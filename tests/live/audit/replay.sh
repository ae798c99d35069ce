#!/usr/bin/env bash
# replay as a CI gate and suggest as a learning mode, on a real recorded run.
. "$(dirname "$0")/lib.sh"
plan 10

echo "input" > data.txt
CMD=("$PY" -c 'print(open("data.txt").read().strip()); open("out.txt", "w").write("x")
try: open("/etc/shadow")
except OSError: pass')
printf 'moat-policy 1\n' > "$TMP/A"
printf 'moat-policy 1\nhide %s/data.txt\n' "$WORK" > "$TMP/B"
printf 'moat-policy 1\nro-bind /etc/shadow\n' > "$TMP/C"

"$MOAT" run -q --output-in-workspace --policy "$TMP/A" --audit run.moat -- "${CMD[@]}" > out 2>&1
ok $? "the run under policy A succeeds" "$(cat out)"

"$MOAT" audit replay --policy "$TMP/A" run.moat > same.txt 2>&1
ok $? "replay under the same policy A: exit 0" "$(cat same.txt)"

"$MOAT" audit replay --policy "$TMP/B" run.moat > b.txt 2>&1
rc=$?
if [ $rc -eq 1 ]; then pass "replay under B (hides data.txt): exit 1"; else fail "replay under B (hides data.txt): exit 1" "exit $rc: $(cat b.txt)"; fi
# the path as the program gave it, or (a native open recorded from the kernel's event,
# root-started --audit) the object it reached
if grep -E 'openat "([^"]*/)?data.txt".*allowed -> denied' b.txt | grep -q "hide $WORK/data.txt"; then
	pass "the read of data.txt is listed, with the rule of B that denies it"
else
	fail "the read of data.txt is listed with its new rule" "$(cat b.txt)"
fi
# Nothing else of the run depends on that file.
n=$(grep -c '^seq .*allowed -> denied' b.txt)
if [ "$n" -eq 1 ]; then pass "and only that read changes"; else fail "and only that read changes" "$(cat b.txt)"; fi

"$MOAT" audit replay --policy "$TMP/C" run.moat > c.txt 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q '"/etc/shadow".*denied -> allowed' c.txt; then
	pass "replay under C (maps /etc/shadow): the denied open is listed as denied -> allowed"
else
	fail "replay under C lists denied -> allowed" "exit $rc: $(cat c.txt)"
fi

# suggest: the same command under the suggested policy is denied nothing. Learnt from a
# run with --strict-hide, as suggest asks: without it the kernel answers stat and
# listings, and (root-started) the read-only opens are recorded by the object they
# reached, not by the symlinks on the way; suggest says so.
"$MOAT" run -q --output-in-workspace --policy "$TMP/A" --report a.json -- "${CMD[@]}" >/dev/null 2>&1
before=$(jq .denials.total a.json)
"$MOAT" audit suggest run.moat -o "$TMP/S0" 2> s0.err
grep -q "with --strict-hide" s0.err
ok $? "suggest from a run without --strict-hide says what the stream lacks" "$(cat s0.err)"
"$MOAT" run -q --output-in-workspace --policy "$TMP/A" --strict-hide --audit learn.moat -- \
	"${CMD[@]}" >/dev/null 2>&1
"$MOAT" audit suggest learn.moat -o "$TMP/S" 2> s.err
ok $? "suggest writes a policy" "$(cat s.err)"
rm -f out.txt
"$MOAT" run -q --output-in-workspace --policy "$TMP/S" --report s.json --audit s.moat -- "${CMD[@]}" > s.out 2>&1
rc=$?
# What it is denied now: what the learning run was denied (/etc/shadow, /root), and
# lookups of paths that do not exist on the host (unmapped instead of the host's ENOENT).
denied() { "$MOAT" audit dump --json "$1" | jq -r 'select(.type=="sys" and .decision=="denied") | .resolved // .path' | sort -u; }
denied run.moat > learn-denied.txt
extra=$(denied s.moat | while read -r p; do grep -qxF -- "$p" learn-denied.txt || [ ! -e "$p" ] || echo "$p"; done)
if [ $rc -eq 0 ] && [ -z "$extra" ] && [ "$before" -gt 0 ] && [ -f out.txt ] && grep -q input s.out; then
	pass "under the suggested policy the command runs, denied only what it was denied and what does not exist"
else
	fail "under the suggested policy the command runs, denied nothing else" "exit $rc, denied: $extra; policy:
$(cat "$TMP/S")"
fi
# It is a narrowed policy, not the default profile: only what the run used is mapped.
if grep -qx 'profile none' "$TMP/S" && ! grep -q '^ro-bind /$' "$TMP/S"; then
	pass "the suggested policy starts from nothing (profile none)"
else
	fail "the suggested policy starts from nothing" "$(cat "$TMP/S")"
fi
finish
