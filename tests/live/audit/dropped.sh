#!/usr/bin/env bash
# Records that come faster than the stream is written wait in a bounded buffer; when it
# is full they are dropped, and the stream counts them (checkpoints, footer). The run
# says so on stderr too, with the count, so that nobody has to dump the stream to learn
# that it is incomplete. A test_hooks build shrinks the buffer (MOAT_TEST_AUDIT_BUFFER)
# so that an ordinary loop fills it. Checked from outside: moat's stderr against the
# footer that `moat audit dump` reads.
. "$(dirname "$0")/lib.sh"
plan 2

have_mode() { (cd "$TMP" && "$MOAT" run -q --mode "$1" -- true) >/dev/null 2>&1; }
grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null ||
	skip_all "a build without test_hooks (MOAT_TEST_AUDIT_BUFFER)"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

mkdir many
for i in $(seq 300); do : >"many/$i"; done
loop='import os
for r in range(20):
    for i in range(1, 301):
        os.close(os.open("many/%d" % i, os.O_RDONLY))
        os.stat("many/%d" % i)'

footer_drops() { "$MOAT" audit dump --json "$1" | jq -r 'select(.type=="ftr") | .dropped'; }

out=$(MOAT_TEST_AUDIT_BUFFER=2048 timeout 120 "$MOAT" run -q --output-in-workspace \
	--audit small.moat -- "$PY" -c "$loop" 2>&1)
rc=$?
n=$(footer_drops small.moat)
said=$(sed -n 's/.*small\.moat lacks \([0-9]*\) records\{0,1\}: .*/\1/p' <<<"$out")
[ $rc -eq 0 ] && [ "${n:-0}" -gt 0 ] && [ "$said" = "$n" ]
ok $? "a full buffer: moat says how many records the stream lacks, as its footer counts them (rc $rc; footer $n, said ${said:-nothing})" "$out"

out=$(timeout 120 "$MOAT" run -q --output-in-workspace --audit full.moat -- "$PY" -c "$loop" 2>&1)
rc=$?
n=$(footer_drops full.moat)
[ $rc -eq 0 ] && [ "$n" = 0 ] && ! grep -q "lacks" <<<"$out"
ok $? "the default buffer: nothing dropped, nothing said (rc $rc; footer ${n:-?})" "$out"
finish
