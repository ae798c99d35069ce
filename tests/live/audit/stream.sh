#!/usr/bin/env bash
# The stream of a real run: the denied openat of /etc/shadow with its rule and a stack
# in the Python interpreter; stock zstd reads it; a flipped byte is caught and its frame
# named; a signature verifies with the right key only.
. "$(dirname "$0")/lib.sh"
plan 10

"$MOAT" run -q --output-in-workspace --audit t.moat -- "$PY" -c 'import json; open("/etc/shadow")' 2>/dev/null
"$MOAT" audit dump --json t.moat > dump.json
ok $? "dump --json reads the stream"

den=$(jq -c 'select(.type=="sys" and .syscall=="openat" and .path=="/etc/shadow" and .decision=="denied")' dump.json)
rule=$(printf '%s' "$den" | jq -r '.rule // empty' | head -1)
case "$rule" in
*shadow*) pass "the denied openat of /etc/shadow names its rule ($rule)" ;;
*) fail "the denied openat of /etc/shadow names its rule" "record: ${den:-none}" ;;
esac
mods=$(printf '%s' "$den" | jq -r '.stack[]?.module // empty' | sort -u)
if printf '%s\n' "$mods" | grep -q "python3"; then
	pass "its stack has frames in the Python interpreter"
else
	fail "its stack has frames in the Python interpreter" "modules: $mods"
fi

# Four threads denied the same hidden file at once, 150 times each: every denial keeps
# its stack. Started by root, each is a stub's refusal, read while the opener waits for
# the answer; a waiter that the answer to another thread's open woke, or one not yet
# asleep when its event was read, reads as "running" in /proc/<tid>/syscall, and such
# denials (45-233 of 600 in a run) had no stack.
cat >threads.py <<'PYEOF'
import threading
def f():
    for i in range(150):
        try:
            open("/etc/shadow")
        except OSError:
            pass
ts = [threading.Thread(target=f) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
PYEOF
"$MOAT" run -q --output-in-workspace --audit th.moat -- "$PY" threads.py 2>/dev/null
counts=$("$MOAT" audit dump --json th.moat |
	jq -r 'select(.type=="sys" and .decision=="denied" and .path=="/etc/shadow") | (.stack // [] | length)' |
	awk '{n++; if ($1 == 0) z++} END {print n + 0, z + 0}')
read -r n_den n_bare <<<"$counts"
[ "$n_den" -eq 600 ] && [ "$n_bare" -eq 0 ]
ok $? "600 denials by four threads at once each keep their stack ($n_den denied, $n_bare without)"

# The header's features are the run's, as the report gives them: the listener flag is
# only known once the listener has arrived, which is after the stream is opened.
"$MOAT" run -q --output-in-workspace --audit f.moat --report f.json -- true
hdr=$("$MOAT" audit dump --json f.moat | head -1 |
	jq -r '.features[] | select(.name=="SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP") | .present')
rep=$(jq -r '.features.seccomp_sync_wake_up' f.json)
if [ -n "$hdr" ] && [ "$hdr" = "$rep" ]; then
	pass "the header's SYNC_WAKE_UP feature matches the report's ($hdr)"
else
	fail "the header's SYNC_WAKE_UP feature matches the report's" "header: '$hdr', report: '$rep'"
fi

# Stock tools: the decompressed stream is msgpack whose first record is the header.
zstd -q -dc t.moat > t.raw
rc=$?
if [ $rc -eq 0 ] && head -c 16 t.raw | grep -q "hdr" && grep -q "/etc/shadow" t.raw; then
	pass "zstd -dc decompresses the stream (msgpack header first, the shadow record inside)"
else
	fail "zstd -dc decompresses the stream" "zstd exit $rc, $(wc -c < t.raw) bytes"
fi

# One byte flipped in the middle of the file.
size=$(stat -c %s t.moat)
cp t.moat flip.moat
python3 - flip.moat "$((size / 2))" <<'PYEOF'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[off] ^= 0xff; open(p, "wb").write(b)
PYEOF
"$MOAT" audit verify t.moat > v-good.txt 2>&1
good=$?
"$MOAT" audit verify flip.moat > v-flip.txt 2>&1
bad=$?
if [ $good -eq 0 ] && [ $bad -ne 0 ] && grep -Eq 'frame [0-9]+' v-flip.txt; then
	pass "verify passes the stream and fails the flipped one, naming the frame ($(grep -Eo 'frame [0-9]+' v-flip.txt | head -1))"
else
	fail "verify fails a flipped byte and names the frame" "intact: exit $good; flipped: exit $bad: $(head -5 v-flip.txt)"
fi

# Signatures.
"$MOAT" audit keygen "$TMP/k" >/dev/null && "$MOAT" audit keygen "$TMP/other" >/dev/null
ok $? "keygen writes two key pairs"
"$MOAT" run -q --output-in-workspace --audit s.moat --audit-key "$TMP/k" -- "$PY" -c 'print(1)' >/dev/null 2>&1
"$MOAT" audit verify --key "$TMP/k.pub" s.moat > v-key.txt 2>&1
ok $? "a signed stream verifies with its public key" "$(cat v-key.txt)"
"$MOAT" audit verify --key "$TMP/other.pub" s.moat > v-wrong.txt 2>&1
if [ $? -ne 0 ]; then pass "and fails with another key"; else fail "and fails with another key" "$(cat v-wrong.txt)"; fi
finish
