#!/usr/bin/env bash
# kill -9 of the supervisor half-way through a long run: verify reports the stream as
# cut short (non-zero), and dump still prints every record of every complete frame.
. "$(dirname "$0")/lib.sh"
plan 5

# A sandboxed loop of recorded calls (opens: namespaced, stat is native and unrecorded)
# meant to run for 8 s; killed after 3 s.
"$MOAT" run -q --output-in-workspace --audit long.moat -- "$PY" -c '
import os, time
t = time.time()
while time.time() - t < 8:
    os.close(os.open("/etc/hostname", os.O_RDONLY))
' >/dev/null 2>&1 &
sup=$!
track_pid "$sup"
sleep 3
kill -KILL "$sup"
wait "$sup" 2>/dev/null
rc=$?
if [ $rc -eq 137 ]; then pass "the supervisor died of SIGKILL mid-run"; else fail "the supervisor died of SIGKILL mid-run" "exit $rc"; fi

"$MOAT" audit verify long.moat > verify.txt 2>&1
vrc=$?
if [ $vrc -ne 0 ] && grep -Eqi 'truncat|no footer' verify.txt; then
	pass "verify reports the cut-short stream (exit $vrc)"
else
	fail "verify reports the cut-short stream" "exit $vrc: $(cat verify.txt)"
fi
frames=$(grep -Eo 'in [0-9]+ frames' verify.txt | grep -Eo '[0-9]+')

"$MOAT" audit dump --json long.moat > dump.json 2>dump.err
sys=$(jq -s '[.[] | select(.type=="sys")] | length' dump.json)
ckpts=$(jq -s '[.[] | select(.type=="ckpt")] | length' dump.json)
other=$(jq -s '[.[] | select(.type!="ckpt")] | length' dump.json)
last=$(jq -s '[.[] | select(.type=="ckpt")] | last | .records' dump.json)
if [ "${sys:-0}" -gt 1000 ]; then pass "dump prints the records before the kill ($sys sys records)"; else fail "dump prints the records before the kill" "$sys sys records"; fi
# Every complete frame ends with a checkpoint that counts the records before it.
if [ -n "$frames" ] && [ "$ckpts" -eq "$frames" ] && [ "$other" -eq "$last" ]; then
	pass "dump prints every record of all $frames complete frames ($other records + $ckpts checkpoints)"
else
	fail "dump prints every record of every complete frame" "verify: $frames frames; dump: $ckpts checkpoints, $other records, last checkpoint counts $last"
fi

# A cut inside a frame (the partial tail a crash can leave): the lost bytes are named.
size=$(stat -c %s long.moat)
head -c $((size - 100)) long.moat > cut.moat
"$MOAT" audit verify cut.moat > cut.txt 2>&1
crc=$?
if [ $crc -ne 0 ] && grep -qi 'truncat' cut.txt; then pass "a stream cut inside a frame is reported truncated"; else fail "a stream cut inside a frame is reported truncated" "exit $crc: $(cat cut.txt)"; fi
finish
