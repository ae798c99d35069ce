#!/usr/bin/env bash
# Each record names the thread as the kernel did at the time of the call (its comm),
# though moat keeps the text between calls: a PR_SET_NAME (even with garbage in the
# option's upper half), a write to /proc/.../comm from another thread and an exec each
# show in the very next record. (The /proc write needs --bind /proc: the default profile
# maps /proc read-only.) The probes are creates, which moat traps and records in every
# mode (namespaced, stat runs natively and is not recorded, and a read-only open is
# recorded from the kernel's open event, whose comm is read when moat reads the event).
. "$(dirname "$0")/lib.sh"
plan 10

cat > rename.py <<'PYEOF'
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
def probe(name):
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass
probe("m-before")
libc.prctl(15, b"renamed", 0, 0, 0)  # PR_SET_NAME
probe("m-prctl")
probe("m-prctl2")
libc.syscall(157, ctypes.c_long(15 | (1 << 32)), b"sneaky", 0, 0, 0)  # prctl, x86_64
probe("m-sneaky")
tid = threading.get_native_id()
def rename():
    with open("/proc/self/task/%d/comm" % tid, "w") as f:
        f.write("viaproc")
t = threading.Thread(target=rename)
t.start()
t.join()
probe("m-proc")
os.execv("/bin/sh", ["sh", "-c", "exec /usr/bin/touch m-exec >/dev/null 2>&1"])
PYEOF
[ "$(uname -m)" = x86_64 ] || skip_all "the raw prctl number in rename.py is x86_64's"

for mode in namespaced unnamespaced; do
	rm -f c.moat
	# /proc writable: the default profile maps it read-only
	"$MOAT" run -q --output-in-workspace --mode "$mode" --bind /proc --audit c.moat -- "$PY" rename.py >out.txt 2>&1
	"$MOAT" audit dump --json c.moat > c.json 2>/dev/null
	comm_of() { jq -r --arg p "$1" 'select(.type=="sys" and .path==$p) | .comm' c.json | sort -u | tr '\n' ' '; }
	rm -f m-before m-prctl m-prctl2 m-sneaky m-proc m-exec
	check() {
		local got
		got=$(comm_of "$1")
		[ "$got" = "$2 " ]
		ok $? "$mode: $1 is recorded as $2" "comm: '${got}'; moat: $(head -c 400 out.txt)"
	}
	check m-before python3
	check m-prctl renamed
	check m-sneaky sneaky
	check m-proc viaproc
	check m-exec touch
done
finish
