#!/usr/bin/env bash
# --audit with native read-only opens, where no open is continued: had moat continued a
# create, recorded it and left out the kernel's open event it then expected (same thread,
# same path), a create the kernel refuses (a directory whose mode refuses the caller, a
# name another process took first under O_EXCL, O_CREAT|O_DIRECTORY) would have no event,
# and the expectation left behind would swallow the thread's next read-only open of that
# path, whenever it came; and a create whose event came late would be recorded again as a
# read. The records of names procfs prints oddly (" (deleted)") too. Each read here
# must be in the stream as a native open.
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
plan 6

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
[ "$(id -u)" -eq 0 ] || skip_all "native opens under --audit need moat started by root (fanotify)"

cat >probe.py <<'PYEOF'
import os, subprocess
def other(path, data):
    # another process makes the file: its create is its own thread's
    subprocess.run(["/bin/sh", "-c", "echo %s > %s" % (data, path)], check=True)
def read(path):
    with open(path) as f:
        return f.read().strip()
# 1. a create refused by its directory's mode (the sandbox's root holds no capability)
os.mkdir("locked", 0o555)
try:
    os.close(os.open("locked/f", os.O_CREAT | os.O_WRONLY, 0o644))
    print("LOCKED-CREATED")
except OSError as e:
    print("LOCKED", e.errno)
os.chmod("locked", 0o755)
other("locked/f", "one")
print("READ1", read("locked/f"))
# 2. O_EXCL lost to another process (made deterministic: it took the name first,
#    after moat's decision could not see it; here simply a name made since)
try:
    os.close(os.open("lock", os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY, 0o644))
    print("DIRCREATE-OPENED")
except OSError as e:
    print("DIRCREATE", e.errno)
other("lock", "two")
print("READ2", read("lock"))
# 3. a file whose name ends as procfs marks an unlinked one
other("'odd (deleted)'", "three")
print("READ3", read("odd (deleted)"))
# 4. an unlinked file reopened through its fd link
fd = os.open("gone.txt", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"four")
os.unlink("gone.txt")
print("READ4", read("/proc/self/fd/%d" % fd))
# 5. creates in a tight loop, none read: the kernel's event of each is not a read
os.mkdir("made")
for i in range(2000):
    with open("made/f%d" % i, "w") as f:
        f.write("x")
PYEOF

out=$(timeout 120 "$MOAT" run -q --output-in-workspace --audit s.moat -- "$PY" probe.py 2>&1)
rc=$?
"$MOAT" audit dump --json s.moat >s.json 2>/dev/null
[ $rc -eq 0 ] && grep -q '^READ1 one' <<<"$out" && grep -q '^READ2 two' <<<"$out" &&
	grep -q '^LOCKED 13' <<<"$out"
ok $? "the program ran: the create in the mode-0555 directory failed (EACCES), both reads worked" \
	"rc $rc: $out"

native() { jq -c "select(.type==\"sys\" and .decision==\"native\" and .resolved==\"$WORK/$1\")" s.json; }
[ -n "$(native locked/f)" ]
ok $? "the read after a create refused by the directory's mode is recorded" \
	"$(jq -c "select(.type==\"sys\" and (.resolved // \"\" | endswith(\"locked/f\")))" s.json)"

[ -n "$(native lock)" ]
ok $? "the read after an O_CREAT|O_DIRECTORY the kernel refused is recorded ($(grep DIRCREATE <<<"$out"))" \
	"$(jq -c "select(.type==\"sys\" and (.resolved // \"\" | endswith(\"/lock\")))" s.json)"
[ -n "$(native "odd (deleted)")" ] && grep -q '^READ3 three' <<<"$out"
ok $? "a read of a file named 'odd (deleted)' is recorded by its name" \
	"$(grep -F 'odd (deleted)' s.json)"

[ -n "$(native gone.txt)" ] && grep -q '^READ4 four' <<<"$out"
ok $? "a read of an unlinked file through its /proc fd link is recorded by the path it had" \
	"$(grep -F 'gone.txt' s.json)"
n=$(jq -r 'select(.type=="sys" and .decision=="native") | .resolved' s.json | grep -c '/made/f')
[ "$n" -eq 0 ]
ok $? "2000 creates in a loop leave no native (read-only) record of the files they made ($n)"
finish
