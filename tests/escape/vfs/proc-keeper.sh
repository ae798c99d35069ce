#!/usr/bin/env bash
# Invariant 4 (deny by default: no environment variable unless passed) and issue 3's
# "/proc shows only the sandbox's own processes": no process visible in the sandbox's
# /proc may expose moat's own environment or memory. The keeper (pid 1 of the sandbox,
# or the command's parent without a pid namespace) is a fork of the supervisor and holds
# the host environment; the supervisor opens /proc files itself, so ptrace checks that
# would stop the command do not apply.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 4
mkdir "$TMP/cwd"
# A host-only value; the probe searches for its reverse so the probe itself never holds it.
VALUE="hostonly$RANDOM$RANDOM$RANDOM"
REV=$(echo "$VALUE" | rev)
PROBE='
import os, sys
want = sys.argv[1][::-1].encode()
me = os.getpid()
env_hits, mem_hits = [], []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me: continue
    try:
        if want in open("/proc/%s/environ" % p, "rb").read(): env_hits.append(p)
    except OSError: pass
    try:
        fd = os.open("/proc/%s/mem" % p, os.O_RDONLY)
        for line in open("/proc/%s/maps" % p):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if "r" not in line.split()[1] or hi - lo > (64 << 20): continue
            try:
                if want in os.pread(fd, hi - lo, lo): mem_hits.append(p); break
            except OSError: pass
    except OSError: pass
print("environ:", " ".join(env_hits) or "none")
print("mem:", " ".join(mem_hits) or "none")
'
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: environ" "no $mode mode"; skip "$mode: mem" "no $mode mode"; continue
	fi
	out=$(cd "$TMP/cwd" && MOAT_TEST_HOST_ONLY="$VALUE" "$MOAT" run -q --mode "$mode" -- \
		python3 -c "$PROBE" "$REV" 2>&1)
	echo "$out" | grep -qx 'environ: none'
	ok $? "$mode: no /proc/<pid>/environ in the sandbox holds a host-only variable" "$out"
	echo "$out" | grep -qx 'mem: none'
	ok $? "$mode: no /proc/<pid>/mem in the sandbox holds it (moat's memory is out of reach)" "$out"
done
finish
