#!/usr/bin/env bash
# Invariant 4 (deny by default) for directories deeper than PATH_MAX. procfs cannot
# print such a cwd or dirfd, so moat names it component by component (vfs_dir_vpath())
# and walks from there, deciding every component again. The sandbox controls the deep
# tree: from a deep cwd and from a deep dirfd, a hidden .env and a hidden directory
# (--hide '**/vault') stay unreadable (and unlisted where the supervisor lists: in
# unnamespaced mode), also while another thread keeps
# renaming the directories between the workspace and the cwd (so the path moat climbs
# changes under it) and exchanging the tree with a twin that holds the secrets at the
# same depth. Controls: a visible file in the same deep directory reads, and one is
# created there (checked on the host), so the cases reach the new path at all.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
DEPTH=45 # 45 components of 100 bytes: deeper than PATH_MAX (4096) from any workspace

# deep_tree ROOT: ROOT/a{100}/.../a{100} holding a visible file, a hidden .env and a
# hidden vault/ with a secret (and deep levels inside it)
deep_tree() {
	"$PY" - "$1" "$SECRET" "$DEPTH" <<'PY'
import os, sys
root, secret, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(root, exist_ok=True)
fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
for i in range(depth):
    os.mkdir("a" * 100, dir_fd=fd)
    nfd = os.open("a" * 100, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
def put(name, text):
    f = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(f, text.encode() + b"\n")
    os.close(f)
put("visible.txt", "visible")
put(".env", secret)
os.mkdir("vault", dir_fd=fd)
v = os.open("vault", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
os.mkdir("b" * 100, dir_fd=v)
f = os.open("secret", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=v)
os.write(f, secret.encode() + b"\n")
PY
}

# The program run in the sandbox: climbs by relative chdir (RACE=1: with a thread
# renaming the first level back and forth, and exchanging the tree with its twin), then
# tries every way at the secrets from the deep cwd and from a deep dirfd.
PROBE='
import ctypes, os, sys, threading
depth, race = int(sys.argv[1]), sys.argv[2] == "1"
libc = ctypes.CDLL(None, use_errno=True)
for i in range(depth):
    os.chdir("a" * 100)
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
stop = False
flips = 0
def flip():
    global flips
    while not stop:
        # renameat2(AT_FDCWD, "/ws/t/a..", AT_FDCWD, "/ws/t/x..", 0) and back; exchange
        # the tree with its twin (which holds the same secrets at the same place)
        for a, b, fl in ((b"t/" + b"a" * 100, b"t/" + b"x" * 100, 0),
                         (b"t/" + b"x" * 100, b"t/" + b"a" * 100, 0),
                         (b"t", b"twin", 2), (b"t", b"twin", 2)):
            flips += libc.syscall(316, ws, a, ws, b, fl) == 0
ws = os.open(sys.argv[3], os.O_RDONLY | os.O_DIRECTORY)
if race:
    th = threading.Thread(target=flip); th.start()
for it in range(200 if race else 1):
    for how, fn in (("cwd .env", lambda: open(".env").read()),
                    ("cwd vault/secret", lambda: open("vault/secret").read()),
                    ("dirfd .env", lambda: os.read(os.open(".env", os.O_RDONLY, dir_fd=dfd), 100).decode()),
                    ("dirfd vault/secret", lambda: os.read(os.open("vault/secret", os.O_RDONLY, dir_fd=dfd), 100).decode()),
                    ("cwd ../a*/.env", lambda: open("../" + "a" * 100 + "/.env").read()),
                    ("listdir cwd", lambda: " ".join(sorted(os.listdir(".")))),
                    ("listdir dirfd", lambda: " ".join(sorted(os.listdir(dfd)))),
                    ("listdir vault", lambda: " ".join(os.listdir("vault")))):
        try:
            r = fn()
        except OSError as e:
            r = "error " + (e.strerror or "")
        if not race or "moat-secret" in r or "vault" in r or ".env" in r:
            print(how + ":", r.strip())
stop = True
if race:
    th.join()
    print("renames:", "some" if flips > 0 else "none")
try:
    print("visible:", open("visible.txt").read().strip())
    with open("created.txt", "w") as f:
        f.write("made deep\n")
    print("created")
except OSError as e:
    print("visible: error", e.strerror)
'

plan 9
for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	for race in 0 1; do
		make_workspace
		deep_tree "$W/t"
		[ $race = 1 ] && deep_tree "$W/twin"
		out=$(cd "$W/t" && timeout 120 "$MOAT" run -q --mode "$mode" --hide '**/vault' -- \
			"$PY" -c "$PROBE" "$DEPTH" "$race" "$W" 2>&1)
		what="from a cwd deeper than PATH_MAX"
		[ $race = 1 ] && what="$what, while a thread renames and exchanges its ancestors"
		leaks=$(echo "$out" | grep -E 'moat-secret|\.env|vault' | grep -v 'error No such file')
		# namespaced, a directory is listed by the kernel, which shows a hidden name
		# (as an empty stub where the covering reaches: docs/threat-model.md), never
		# what it holds
		[ "$mode" = namespaced ] && leaks=$(echo "$leaks" | grep -v '^listdir \(cwd\|dirfd\):')
		no_secret <(echo "$out") "$SECRET" && [ -z "$leaks" ]
		ok $? "$mode: $what, the hidden .env and vault stay unreadable and unlisted" "$(echo "$out" | head -c 1500)"
		# the control: on the host, the created file is in the deep directory (in the
		# tree or its twin: the exchange may have moved it)
		found=$(find "$W/t" "$W/twin" -name created.txt 2>/dev/null | wc -l)
		echo "$out" | grep -qx 'visible: visible' && echo "$out" | grep -qx created && [ "$found" = 1 ] &&
			{ [ $race = 0 ] || echo "$out" | grep -qx 'renames: some'; }
		ok $? "$mode: $what, a visible file reads and one is created there (control; host: $found)" "$(echo "$out" | head -c 1500)"
	done
done

# The covering names paths by string: a .env already deeper than PATH_MAX at start
# cannot be covered, so the run must not rely on the kernel's view (the keeper installs
# the emulating filter). Else the native stat of the namespaced fast path shows the
# host's file, and an open continued after its check could be swapped to it.
if have_mode namespaced; then
	make_workspace
	deep_tree "$W/t"
	out=$(cd "$W/t" && timeout 120 "$MOAT" run -q --mode namespaced -- "$PY" -c '
import os, sys
for i in range(int(sys.argv[1])):
    os.chdir("a" * 100)
try:
    print("stat .env: size", os.stat(".env").st_size)
except OSError as e:
    print("stat .env: error", e.strerror)
' "$DEPTH" 2>&1)
	[ "$out" = "stat .env: error No such file or directory" ]
	ok $? "namespaced: a .env deeper than PATH_MAX at start is not in the kernel's view (stat)" "$out"
else
	skip "namespaced: a .env deeper than PATH_MAX at start" "moat cannot start in namespaced mode here"
fi
finish
