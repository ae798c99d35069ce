#!/usr/bin/env bash
# --disk SIZE and tmpfs SIZE: what the run writes privately (/tmp, /dev/shm, the home,
# every tmpfs) has room for SIZE and no more. Checked from outside: the writer gets
# ENOSPC, the host's disk does not grow by what was written, the report says the
# quota was reached, and no mount of it is left in the host's mount table.
. "$MOAT_SRC/tests/lib/tap.sh"
MODES="namespaced unnamespaced"
plan 12

cd "$TMP"
used_kib() { df --output=used -k /tmp | tail -1 | tr -d ' '; }
mounts_left() { grep -c "moat-vfs-" /proc/self/mountinfo; }

for m in $MODES; do
	before=$(used_kib)
	# The writer fills its quota, then waits so that the host is measured while the
	# sandbox still holds what it wrote.
	"$MOAT" run -q --mode "$m" --disk 64M --report "r-$m.json" -- sh -c \
		'dd if=/dev/zero of="${TMPDIR:-/tmp}/big" bs=1M count=128 2>dd.err; echo "dd=$?" > dd.st; sleep 2' &
	pid=$!
	track_pid $pid
	for _ in $(seq 50); do [ -s dd.st ] && break; sleep 0.1; done
	during=$(used_kib)
	wait $pid
	st=$?
	grows=$(( (during - before) / 1024 ))
	ok $([ "$(cat dd.st 2>/dev/null)" != "dd=0" ] && grep -q "No space left" dd.err && echo 0 || echo 1) \
		"--disk 64M: writing 128 MiB fails with ENOSPC inside [$m]" "$(cat dd.st dd.err 2>&1)"
	ok $([ "$grows" -lt 70 ] && echo 0 || echo 1) \
		"--disk 64M: the host's disk grew by $grows MiB (< 70) while the sandbox held its 64 MiB [$m]"
	ok $([ $st -eq 0 ] && jq -e '.limits.disk.full == true and .limits.disk.size == 67108864' "r-$m.json" >/dev/null \
		&& echo 0 || echo 1) "--disk 64M: the report says the quota was reached [$m]" \
		"status $st; $(jq -c .limits "r-$m.json" 2>&1)"
	ok $([ "$(mounts_left)" -eq 0 ] && echo 0 || echo 1) "no tmpfs of the run is left in the host's mount table [$m]"
	rm -f dd.st dd.err
done

# A tmpfs with a SIZE is that size (namespaced: anywhere; unnamespaced: the private /tmp).
"$MOAT" run -q --mode namespaced --tmpfs '/scratch 1M' -- sh -c \
	'dd if=/dev/zero of=/scratch/x bs=1M count=2 2>/dev/null; stat -c %s /scratch/x' > sz.txt 2>&1
ok $([ "$(cat sz.txt)" -le 1048576 ] 2>/dev/null && echo 0 || echo 1) \
	"--tmpfs '/scratch 1M' holds 1 MiB, no more (file has $(cat sz.txt) bytes) [namespaced]"
"$MOAT" run -q --mode unnamespaced --tmpfs '/tmp 1M' -- sh -c \
	'dd if=/dev/zero of="$TMPDIR/x" bs=1M count=2 2>/dev/null; stat -c %s "$TMPDIR/x"' > sz.txt 2>&1
ok $([ "$(cat sz.txt)" -le 1048576 ] 2>/dev/null && echo 0 || echo 1) \
	"--tmpfs '/tmp 1M' holds 1 MiB, no more (file has $(cat sz.txt) bytes) [unnamespaced]"

# A supervisor killed mid-run leaves no mount behind either: the mounts live in its
# own mount namespace.
"$MOAT" run -q --disk 16M -- sleep 30 &
pid=$!
sleep 1
kill -9 $pid
wait $pid 2>/dev/null
sleep 0.5
ok $([ "$(mounts_left)" -eq 0 ] && echo 0 || echo 1) "a SIGKILLed supervisor leaves no tmpfs mounted on the host"

# Without root, a size cannot be enforced: refused, not ignored.
if command -v setpriv >/dev/null && setpriv --reuid 65534 --regid 65534 --clear-groups true 2>/dev/null; then
	setpriv --reuid 65534 --regid 65534 --clear-groups "$MOAT" run -q --disk 16M -- true >/dev/null 2>err.txt
	st=$?
	ok $([ $st -eq 125 ] && grep -q "need moat to run as root" err.txt && echo 0 || echo 1) \
		"unprivileged: --disk is refused with 125 and the reason (got $st)" "$(cat err.txt)"
else
	skip "unprivileged: --disk is refused" "setpriv cannot drop to uid 65534 here"
fi
finish
