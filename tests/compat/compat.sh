#!/usr/bin/env bash
# Differential compatibility: each case runs the same command natively and under moat
# (the default profile, and --profile none --ro-bind / --bind WORK; namespaced and
# unnamespaced) and compares the exit status, stdout and the files it leaves in its
# work directory (type, mode, symlink target, sha256 of content). A difference that
# the policy decides is listed in the case, with the rule that causes it.
#   compat.sh CASE...     (no CASE: every case)
# Every run of a case uses the same work directory path, made afresh by the case's
# setup (run natively), so that paths in outputs agree.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

PY=/usr/bin/python3
ENVPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
W=$TMP/work
VARIANTS=(default:namespaced default:unnamespaced none:namespaced none:unnamespaced)
FIXED_DATE='2026-01-01T00:00:00Z'

# --- the cases: case_NAME_setup (native, in $W), case_NAME_cmd (a sh -c script, run
# in $W), optional case_NAME_need (tools; missing ones skip the case), case_NAME_ignore
# (an extended regex of listing paths whose content is not compared: timestamps in them),
# case_NAME_todo, or case_NAME_todo_PROFILE / case_NAME_todo_MODE for those variants only
# (a known gap another change closes: TAP TODO while it differs), and
# case_NAME_policy_PROFILE or case_NAME_policy_MODE="REGEX|RULE: why": a difference under
# that profile (default, none) or in that mode (namespaced, unnamespaced) that the
# policy decides, accepted when the run's output shows it (REGEX).

case_pipeline_cmd='seq 1 2000 | awk "{ s += \$1; print \$1 * 3 }" | sort -rn | head -5 | tee top.txt | wc -l; cat top.txt | tr 0-9 a-j'

case_umask_cmd='umask 002; mkdir d002; touch f002; '"$PY"' -c "import os; os.mkdir(\"p002\"); open(\"q002\", \"w\").close(); os.mkfifo(\"r002\")"
umask 077; mkdir d077; touch f077; '"$PY"' -c "import os; os.mkdir(\"p077\"); open(\"q077\", \"w\").close()"
ls -l | cut -c1-10'

case_tar_setup() {
	mkdir -p src/sub && echo one >src/a.txt && echo two >src/sub/b.txt && printf '#!/bin/sh\n' >src/run.sh
	chmod 0755 src/run.sh; chmod 0640 src/a.txt; chmod 0700 src/sub; ln -s a.txt src/link; ln -s sub src/dirlink
}
case_tar_cmd='tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf a.tar src && sha256sum a.tar | cut -c1-16 && mkdir out && tar -xf a.tar -C out && tar -tvf a.tar | cut -c1-10,11-11 | sort | uniq -c'
case_tar_ignore='^out/'   # extracted files carry the extraction time only in mtime, which is not listed

case_git_need=git
case_git_setup() { mkdir proj && printf 'hello\n' >proj/a.txt && printf 'x\n' >proj/b.txt; }
case_git_cmd='cd proj && export GIT_AUTHOR_DATE='"$FIXED_DATE"' GIT_COMMITTER_DATE='"$FIXED_DATE"' &&
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A && git -c user.name=t -c user.email=t@e commit -q -m first &&
echo more >>a.txt && git diff --stat && git -c user.name=t -c user.email=t@e commit -qam second && git log --format="%H %s" && git status --short | wc -l'
case_git_ignore='^proj/\.git/(index|logs/)'

case_make_need="make gcc"
case_make_setup() {
	for i in 1 2 3 4 5 6; do printf 'int f%d(void) { return %d; }\n' $i $i >f$i.c; done
	printf '#include <stdio.h>\nint f1(void),f2(void),f3(void),f4(void),f5(void),f6(void);\nint main(void){printf("%%d\\n",f1()+f2()+f3()+f4()+f5()+f6());return 0;}\n' >main.c
	printf 'OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >Makefile
}
case_make_cmd='make -s -j4 && ./prog && make -s && echo again-ok'

case_pytest_need=pytest-3
case_pytest_setup() {
	mkdir tests && printf 'import os, tempfile\ndef test_add():\n    assert 1 + 1 == 2\ndef test_tmp(tmp_path):\n    (tmp_path / "x").write_text("y")\n    assert (tmp_path / "x").read_text() == "y"\ndef test_home():\n    assert os.path.isdir(os.path.expanduser("~"))\ndef test_fail():\n    assert 0, "expected"\n' >tests/test_a.py
}
case_pytest_ignore='\.pyc$'   # compiled files hold the source's mtime
case_pytest_cmd='pytest-3 -q -p no:cacheprovider tests 2>&1 | grep -E "passed|failed" | sed "s/ in [0-9.]*s//"'

case_mp_policy_none='Read-only file system|ro-bind / (read-only): /dev/shm is the host'"'"'s, read-only; the default profile gives a private one'
case_mp_cmd="$PY"' -c "
import multiprocessing as mp
from multiprocessing import shared_memory
def sq(x): return x * x
if __name__ == \"__main__\":
    with mp.Pool(3) as p: print(sum(p.map(sq, range(100))))
    m = shared_memory.SharedMemory(create=True, size=64); m.buf[:5] = b\"hello\"
    n = shared_memory.SharedMemory(m.name); print(bytes(n.buf[:5]).decode()); n.close(); m.close(); m.unlink()
    q = mp.Queue(); pr = mp.Process(target=q.put, args=(42,)); pr.start(); print(q.get()); pr.join(); print(pr.exitcode)
    l = mp.Lock(); l.acquire(); l.release(); print(\"lock ok\")
"'

case_sqlite_need=sqlite3
case_sqlite_cmd='T=/tmp/moat-compat-$$.db; for db in ws.db $T; do sqlite3 $db "create table t(x); begin; insert into t values(1),(2),(3); commit; pragma journal_mode=wal; insert into t values(4); select sum(x) from t;"; done; sqlite3 $T "select count(*) from t"; rm -f $T $T-wal $T-shm; ls /tmp/moat-compat-$$.db* 2>/dev/null | wc -l'
case_sqlite_policy_none='unable to open database "/tmp/|ro-bind / (read-only): /tmp is the host'"'"'s, read-only; the default profile gives a writable one'
case_sqlite_ignore='^ws\.db'   # the WAL header holds random salts

case_proc_cmd='grep -E "^(Name|Umask|Threads|State):" /proc/self/status; ls /proc/self/fd | wc -l; readlink /proc/self/fd/1 | cut -c1-5; '"$PY"' -c "import os; print(sorted(os.listdir(\"/proc/self/fd\")), os.readlink(\"/proc/self/cwd\") == os.getcwd())"'

case_venv_need=python3-venv
case_venv_setup() {
	# a trivial wheel, built offline with the standard library
	"$PY" - <<'PYW'
import base64, hashlib, zipfile
files = {
    "moatcompat/__init__.py": b"VALUE = 42\n",
    "moatcompat-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: moatcompat\nVersion: 0.1\n",
    "moatcompat-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: moat-compat\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = []
for n, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    rec.append(f"{n},sha256={h},{len(d)}")
rec.append("moatcompat-0.1.dist-info/RECORD,,")
files["moatcompat-0.1.dist-info/RECORD"] = ("\n".join(rec) + "\n").encode()
with zipfile.ZipFile("moatcompat-0.1-py3-none-any.whl", "w") as z:
    for n, d in files.items():
        z.writestr(zipfile.ZipInfo(n, (1980, 1, 1, 0, 0, 0)), d)
PYW
}
# the venv without its own copy of pip (ensurepip unpacks thousands of files: minutes
# under an ASan build of moat); the system's pip installs into it with --python
case_venv_cmd="$PY"' -m venv --without-pip venv && '"$PY"' -m pip --python venv/bin/python install -q --no-index --disable-pip-version-check --no-compile ./moatcompat-0.1-py3-none-any.whl && venv/bin/python -c "import moatcompat, sys; print(moatcompat.VALUE, sys.prefix == sys.base_prefix)"'
case_venv_ignore='\.pyc$|/RECORD$|/direct_url\.json$|^venv/bin/'   # compiled files hold mtimes; pip's scripts and records name the venv's path, the same here

# an sdist built here with setuptools (offline), installed by pip into a venv that sees
# the system's setuptools (--no-build-isolation: no download of build requirements)
case_sdist_need="python3-venv python3-setuptools"
case_sdist_setup() {
	mkdir -p src/moatsdist && echo 'VALUE = 43' >src/moatsdist/__init__.py &&
		printf 'from setuptools import setup\nsetup(name="moatsdist", version="0.1", packages=["moatsdist"])\n' >src/setup.py &&
		(cd src && "$PY" setup.py -q sdist -d .. >/dev/null 2>&1) && rm -rf src
}
case_sdist_cmd="$PY"' -m venv --without-pip --system-site-packages venv && '"$PY"' -m pip --python venv/bin/python install -q --no-index --no-build-isolation --no-cache-dir --disable-pip-version-check --no-compile ./moatsdist-0.1.tar.gz && venv/bin/python -c "import moatsdist, sys; print(moatsdist.VALUE, sys.prefix == sys.base_prefix)"'
case_sdist_ignore="$case_venv_ignore"'|\.tar\.gz$'   # the sdist is built afresh for each run: gzip stamps its time

# another user, as root: the full id map of a namespaced run started by root lets its
# root drop to nobody (a caller that is not root gets EPERM natively and under moat)
case_users_need="setpriv su"
case_users_cmd='setpriv --reuid=65534 --regid=65534 --clear-groups id; echo "setpriv: $?"; su nobody -s /bin/sh -c id; echo "su: $?"; '"$PY"' -c "import subprocess; print(subprocess.run([\"id\", \"-u\"], user=65534, group=65534, extra_groups=[], capture_output=True, text=True).stdout.strip())" 2>&1 | tail -1'
case_users_policy_unnamespaced='setresuid failed: Operation not permitted|unnamespaced mode drops every capability (README, Modes): root cannot change ids or groups'

case_npm_need="node npm"
case_npm_setup() {
	mkdir pkgsrc && printf '{"name":"moat-compat-pkg","version":"1.0.0","main":"index.js"}\n' >pkgsrc/package.json &&
		echo 'module.exports = 42;' >pkgsrc/index.js &&
		(cd pkgsrc && npm pack --silent >/dev/null 2>&1) && mv pkgsrc/moat-compat-pkg-1.0.0.tgz pkg.tgz && rm -rf pkgsrc
}
case_npm_cmd='npm init -y >/dev/null && npm install --no-audit --no-fund --offline --silent ./pkg.tgz && node -e "console.log(require(\"moat-compat-pkg\"))" && node -e "console.log(Object.keys(require(\"./package.json\").dependencies))"'

# acceptance: as root with the caller's real home (hidden, then given a private one),
# npm init + install of a local tarball ends well within 30 s under the default profile
case_npm_extra() {
	local mode=namespaced t0 rc
	$have_ns || mode=unnamespaced
	fresh_case npm
	t0=$SECONDS
	(cd "$W" && HOME=$(getent passwd "$(id -u)" | cut -d: -f6) timeout 30 "$MOAT" run -q --mode $mode -- \
		sh -c 'npm init -y >/dev/null && npm install --no-audit --no-fund --silent ./pkg.tgz' </dev/null >"$TMP/npm.out" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && [ -f "$W/node_modules/moat-compat-pkg/index.js" ]
	ok $? "npm init -y && npm install ./pkg.tgz with the caller's own HOME ($mode): done in $((SECONDS - t0)) s (limit 30)" "rc=$rc $(head -c 1500 "$TMP/npm.out")"
}

# a tree deeper than PATH_MAX (4096), made by relative mkdir and cd steps: files made,
# read, linked, renamed and listed in its deepest directory, relative to the cwd (bash:
# dash's cd names the whole logical path and fails there natively too); getcwd() (glibc
# climbs by itself past PATH_MAX); then rm -rf of the whole tree from the top
case_deep_cmd='exec bash -c '"'"'top=$PWD; n=$(printf "d%.0s" {1..120})
for i in {1..40}; do mkdir $n && cd $n || exit 1; done
echo deep >f.txt; cat f.txt; ln -s f.txt l; cat l; mkdir -p x/y/z && echo z >x/y/z/zz && mv x/y/z x/zz && cat x/zz/zz && rm -r x
'"$PY"' -c "
import os
open(\"p.txt\", \"w\").write(\"py\")
print(sorted(os.listdir(\".\")), os.stat(\"p.txt\").st_size, open(\"../\" + \"d\" * 120 + \"/f.txt\").read().strip())
try:
    print(len(os.getcwd()))
except OSError as e:
    print(\"getcwd:\", e.strerror)
fd = os.open(\"..\", os.O_RDONLY | os.O_DIRECTORY)
print(sorted(os.listdir(fd))[0][:4], os.path.exists(\"/proc/self/fd/%d\" % fd))
"
ls -A | tr "\n" " "; echo; rm f.txt l; ls -A | wc -w
cd "$top" && rm -rf $n && echo removed; ls -A | wc -w'"'"''

# a trailing slash on every call by name: a lookup follows the last symlink and wants a
# directory; mkdir, mknod, symlink, link, unlink, rmdir, rename and O_CREAT act on the
# name itself and refuse a slash each in its own way (fs/namei.c), which moat's own
# versions of them must answer alike (the calls it makes for the sandbox); so for a
# path without a last name (".", "..", "/")
case_slashes_setup() {
	mkdir emp full && echo one >a.txt && echo two >full/x && ln -s emp le && ln -s a.txt lf &&
		ln -s nowhere ld && cp "$MOAT_SRC/tests/lib/calls.py" . && cat >slashes.py <<'PYS'
import os, stat
from calls import t
t("link new/", lambda: os.link("a.txt", "n1/"))
t("link old/", lambda: os.link("a.txt/", "n1"))
t("symlink new/", lambda: os.symlink("x", "n2/"))
t("mkfifo new/", lambda: os.mkfifo("n3/"))
t("creat new/", lambda: os.open("n4/", os.O_CREAT | os.O_WRONLY, 0o600))
t("mkdir new/", lambda: os.mkdir("n5/"))
t("mkdir dangling/", lambda: os.mkdir("ld/"))
t("mkdir file/", lambda: os.mkdir("a.txt/"))
t("symlink dangling/", lambda: os.symlink("x", "ld/"))
t("link dangling/", lambda: os.link("a.txt", "ld/"))
t("mkfifo link/", lambda: os.mkfifo("lf/"))
t("creat file/", lambda: os.open("a.txt/", os.O_CREAT | os.O_RDONLY))
t("creat dir/", lambda: os.open("emp/", os.O_CREAT | os.O_RDONLY))
t("creat dangling/", lambda: os.open("ld/", os.O_CREAT | os.O_WRONLY, 0o600))
t("rmdir link/", lambda: os.rmdir("le/"))
t("rmdir file/", lambda: os.rmdir("a.txt/"))
t("unlink link/", lambda: os.unlink("le/"))
t("unlink filelink/", lambda: os.unlink("lf/"))
t("unlink dir/", lambda: os.unlink("emp/"))
t("unlink file/", lambda: os.unlink("a.txt/"))
t("rename file new/", lambda: os.rename("a.txt", "n6/"))
t("rename file/ new", lambda: os.rename("a.txt/", "n6"))
t("rename link/ new", lambda: os.rename("le/", "n6"))
t("rename dir link/", lambda: os.rename("n5", "le/"))
t("rename dir dangling/", lambda: os.rename("n5", "ld/"))
t("rename dir file/", lambda: os.rename("n5", "a.txt/"))
t("rename dir full/", lambda: os.rename("n5", "full/"))
t("rename dir/ new/", lambda: os.rename("n5/", "n7/"))
t("stat link/ is a directory", lambda: stat.S_ISDIR(os.lstat("le/").st_mode))
t("stat filelink/", lambda: stat.S_ISDIR(os.lstat("lf/").st_mode))
t("readlink link/", lambda: os.readlink("le/"))
t("link dir dir/..", lambda: os.link("emp", "emp/.."))
t("unlink .", lambda: os.unlink("."))
t("unlink ..", lambda: os.unlink("emp/.."))
t("unlink /", lambda: os.unlink("/"))
t("rmdir dir/..", lambda: os.rmdir("emp/.."))
t("mkdir dir/..", lambda: os.mkdir("emp/.."))
t("rename dir/.. new", lambda: os.rename("emp/..", "n8"))
print(sorted(os.listdir(".")), sorted(os.listdir("emp")), os.path.lexists("nowhere"))
PYS
}
case_slashes_cmd="$PY -B slashes.py"

# calls that name a file by an fd and an empty name (AT_EMPTY_PATH: an O_PATH fd too,
# AT_FDCWD for the cwd), and a unix socket bound where a name already is (a file, a
# directory, a dangling symlink: EADDRINUSE, nothing made at the link's target)
case_byfd_setup() {
	mkdir d && echo one >f.txt && ln -s target dangling && cat >byfd.py <<'PYS'
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
SYS_fchmodat2, AT_EMPTY_PATH = 452, 0x1000
def r(name, ret):
    print(name, ret, os.strerror(ctypes.get_errno()) if ret < 0 else "")
    ctypes.set_errno(0)
fd = os.open("f.txt", os.O_RDONLY)
op = os.open("f.txt", os.O_PATH)
r("fchmodat2 fd", libc.syscall(SYS_fchmodat2, fd, b"", 0o640, AT_EMPTY_PATH))
print(oct(os.stat("f.txt").st_mode))
r("fchmodat2 O_PATH", libc.syscall(SYS_fchmodat2, op, b"", 0o600, AT_EMPTY_PATH))
print(oct(os.stat("f.txt").st_mode))
r("fchownat O_PATH", libc.fchownat(op, b"", os.getuid(), os.getgid(), AT_EMPTY_PATH))
r("fchownat fd", libc.fchownat(fd, b"", -1, -1, AT_EMPTY_PATH))
r("fchownat no flag", libc.fchownat(fd, b"", -1, -1, 0))
r("fchmodat2 no flag", libc.syscall(SYS_fchmodat2, fd, b"", 0o600, 0))
os.chdir("d")
r("fchmodat2 cwd", libc.syscall(SYS_fchmodat2, -100, b"", 0o711, AT_EMPTY_PATH))
os.chdir("..")
print(oct(os.stat("d").st_mode))
for name in ("f.txt", "d/", "dangling", "new/"):
    try:
        socket.socket(socket.AF_UNIX).bind(name)
        print("bind", name, "ok")
    except OSError as e:
        print("bind", name, e.strerror)
print(sorted(os.listdir(".")), os.path.lexists("target"))
PYS
}
case_byfd_cmd="$PY byfd.py"

# O_TMPFILE's flags as build_open_flags() checks them (with O_DIRECTORY, without O_CREAT,
# for writing: EINVAL before any lookup), and O_EXCL's meaning with it: the file never
# gets a name (linkat refuses it); without O_EXCL linkat names it
case_tmpfile_setup() {
	cat >tmpfile.py <<'PYS'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
BIT = os.O_TMPFILE & ~os.O_DIRECTORY
def t(name, flags):
    try:
        fd = os.open(".", flags, 0o600)
    except OSError as e:
        print(name, e.strerror)
        return
    os.write(fd, name.encode())
    r = libc.linkat(fd, b"", -100, name.encode(), 0x1000)
    print(name, "opened, linkat", r, os.strerror(ctypes.get_errno()) if r else "")
    ctypes.set_errno(0)
t("plain", os.O_TMPFILE | os.O_RDWR)
t("excl", os.O_TMPFILE | os.O_RDWR | os.O_EXCL)
t("creat", os.O_TMPFILE | os.O_RDWR | os.O_CREAT)
t("rdonly", os.O_TMPFILE | os.O_RDONLY)
t("nodir", BIT | os.O_RDWR)
print(sorted(os.listdir(".")))
PYS
}
case_tmpfile_cmd="$PY tmpfile.py"

# user.* xattrs by name, which moat gets and sets itself: flags, a value past
# XATTR_SIZE_MAX (E2BIG), buffers too small (ERANGE) and size queries, a symlink
# without following it (EPERM for user.*)
case_xattr_setup() {
	echo one >f.txt && ln -s f.txt lnk && cp "$MOAT_SRC/tests/lib/calls.py" . &&
		cat >xattr.py <<'PYS'
import ctypes, os
from calls import t
libc = ctypes.CDLL(None, use_errno=True)
t("set", lambda: os.setxattr("f.txt", "user.a", b"1"))
t("create, exists", lambda: os.setxattr("f.txt", "user.a", b"2", os.XATTR_CREATE))
t("replace, missing", lambda: os.setxattr("f.txt", "user.b", b"2", os.XATTR_REPLACE))
t("get", lambda: os.getxattr("f.txt", "user.a"))
t("get via link", lambda: os.getxattr("lnk", "user.a"))
t("set on link itself", lambda: os.setxattr("lnk", "user.c", b"1", follow_symlinks=False))
t("past XATTR_SIZE_MAX", lambda: os.setxattr("f.txt", "user.big", b"x" * 70000))
t("unknown namespace", lambda: os.setxattr("f.txt", "bogus.a", b"1"))
t("set long", lambda: os.setxattr("f.txt", "user.long", b"abcdef"))
buf = ctypes.create_string_buffer(2)
print("get, small buffer", libc.getxattr(b"f.txt", b"user.long", buf, 2), ctypes.get_errno())
print("get, size query", libc.getxattr(b"f.txt", b"user.long", None, 0))
print("list, size query", libc.listxattr(b"f.txt", None, 0))
print("list, small buffer", libc.listxattr(b"f.txt", buf, 2), ctypes.get_errno())
t("remove", lambda: os.removexattr("f.txt", "user.a"))
t("remove, missing", lambda: os.removexattr("f.txt", "user.a"))
t("list", lambda: sorted(os.listxattr("f.txt")))
t("list, missing file", lambda: os.listxattr("nope"))
PYS
}
case_xattr_cmd="$PY -B xattr.py"

# a unix socket's name is the string bind() was given, which getsockname(), a peer's
# getpeername() and a datagram's sender address read back: a name of the cwd (and
# one of 100 characters) reads the same under moat, which once bound through its own
# fd table ("/proc/self/fd/N/NAME")
case_unixnames_setup() {
	cat >unixnames.py <<'PYS'
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1] if len(sys.argv) > 1 else "srv")
s.listen(1)
print("listener", s.getsockname())
if len(sys.argv) > 1:
    sys.exit(0)
c = socket.socket(socket.AF_UNIX)
c.connect("srv")
a, _ = s.accept()
print("client's peer", c.getpeername(), "accepted", a.getsockname())
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d.bind("dg")
e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
e.bind("x" * 100)
e.sendto(b"hi", "dg")
m, sender = d.recvfrom(8)
print("datagram from", sender, "to", d.getsockname())
PYS
}
case_unixnames_cmd="$PY unixnames.py"
# namespaced, started by root with nothing asking for moat's own creates, the kernel
# binds the program's own name (checked, then continued): an absolute one too
case_unixnames_extra() {
	extra_setup unixnames "absolute name" || return
	local out
	out=$(cd "$W" && "$MOAT" run -q -- "$PY" unixnames.py "$W/abs.sock" 2>&1)
	[ "$out" = "listener $W/abs.sock" ]
	ok $? "unixnames [default:namespaced]: a socket bound by an absolute name reads that name" "$out"
}

# Python's forkserver and a Listener in a directory of its own: the address each
# client connects to is what getsockname() said (multiprocessing.connection)
case_forkserver_setup() {
	cat >fsrv.py <<'PYS'
import multiprocessing as mp, os, threading
from multiprocessing.connection import Listener, Client
def sq(x):
    return x * x
if __name__ == "__main__":
    mp.set_start_method("forkserver")
    with mp.Pool(2) as p:
        print(sum(p.map(sq, range(10))))
    os.mkdir("ldir")
    l = Listener(os.path.join("ldir", "s"), "AF_UNIX")
    t = threading.Thread(target=lambda: l.accept().send("hi"))
    t.start()
    c = Client(l.address)
    print(c.recv())
    t.join()
    l.close()
PYS
}
case_forkserver_cmd="timeout 60 $PY fsrv.py"
# --cow: the workspace an overlay, the binds still the kernel's
case_forkserver_extra() {
	extra_setup forkserver "--cow" || return
	local out
	out=$(cd "$W" && timeout 120 "$MOAT" run -q --cow -- sh -c "$case_forkserver_cmd" 2>&1)
	[ "$out" = "$(cat "$TMP/res/forkserver.native.out")" ]
	ok $? "forkserver [default:namespaced --cow]: the same stdout as native" "$out"
}
# where moat binds the socket itself (unnamespaced; a mapping of / keeps every call by
# name emulated) it binds the last name only, which the client then misses
case_forkserver_todo_unnamespaced='moat binds a unix socket by its last name only (README, Network)'
case_forkserver_todo_none="$case_forkserver_todo_unnamespaced"

# O_PATH opens: an fd that names an object without opening it (no read, no listing, no
# O_PATH lost from its flags), of a symlink, a FIFO or a device too, and of a file no one
# may read (which the sandbox's root, without capabilities, could not open for reading)
case_opath_setup() {
	mkdir d && touch d/f && chmod 000 d/f && ln -s d/f l && mkfifo p &&
		cp "$MOAT_SRC/tests/lib/calls.py" . && cat >opath.py <<'PYS'
import fcntl, os, stat
from calls import t
d = os.open("d", os.O_PATH | os.O_DIRECTORY)
t("O_PATH kept in the flags", lambda: bool(fcntl.fcntl(d, fcntl.F_GETFL) & os.O_PATH))
t("list an O_PATH dir", lambda: os.listdir(d))
t("O_PATH of a mode-000 file below it", lambda: os.close(os.open("f", os.O_PATH, dir_fd=d)))
t("stat below it", lambda: oct(os.stat("f", dir_fd=d).st_mode))
f = os.open("d/f", os.O_PATH)
t("read an O_PATH file", lambda: os.read(f, 1))
l = os.open("l", os.O_PATH | os.O_NOFOLLOW)
t("O_PATH | O_NOFOLLOW of a symlink is the link", lambda: stat.S_ISLNK(os.fstat(l).st_mode))
t("readlinkat(fd, \"\")", lambda: os.readlink("", dir_fd=l))
t("... | O_DIRECTORY", lambda: os.open("l", os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY))
t("O_PATH of a FIFO (no wait)", lambda: stat.S_ISFIFO(os.fstat(os.open("p", os.O_PATH)).st_mode))
t("O_PATH of /dev/null", lambda: stat.S_ISCHR(os.fstat(os.open("/dev/null", os.O_PATH)).st_mode))
t("O_PATH | O_CREAT creates nothing", lambda: os.open("new", os.O_PATH | os.O_CREAT, 0o644))
os.fchdir(d)
t("fchdir to it", lambda: os.path.basename(os.getcwd()))
PYS
}
case_opath_cmd="$PY -B opath.py"
# where moat opens the object itself (unnamespaced; a mapping of / keeps every call by
# name emulated) it can hand over no O_PATH file (seccomp's ADDFD refuses them)
case_opath_todo_unnamespaced='moat gives an O_PATH open an ordinary read-only fd (docs/threat-model.md, O_PATH)'
case_opath_todo_none="$case_opath_todo_unnamespaced"

ALL_CASES=(pipeline umask tar git make pytest mp sqlite proc venv sdist users npm deep slashes byfd tmpfile xattr unixnames forkserver opath)

# --- the machinery

# fresh_case CASE: a fresh $W set up as CASE's, for a check of its own (case_CASE_extra)
fresh_case() { rm -rf "$W"; mkdir -p "$W"; (cd "$W" && "case_${1}_setup"); }
# extra_setup CASE WHAT: fresh_case for a namespaced check; false, the check skipped,
# where namespaced mode cannot start
extra_setup() {
	$have_ns || { skip "$1: $2" "moat cannot start in namespaced mode here"; return 1; }
	fresh_case "$1"
}

have_tool() {
	case $1 in
	python3-venv) "$PY" -c 'import ensurepip, venv' 2>/dev/null ;;
	python3-setuptools) "$PY" -c 'import setuptools' 2>/dev/null ;;
	*) command -v "$1" >/dev/null ;;
	esac
}

# listing DIR IGNORE: one line per entry: type, mode, path, link target or content hash
listing() {
	(cd "$1" && find . -mindepth 1 \( -path ./.home -o -path ./.tmp \) -prune -o -printf '%P\t%y\t%m\n' | LC_ALL=C sort |
	while IFS=$'\t' read -r p t m; do
		h=-
		if [ "$t" = l ]; then h="-> $(readlink "$p")"
		elif [ "$t" = f ] && ! { [ -n "$2" ] && [[ $p =~ $2 ]]; }; then h=$(sha256sum <"$p" | cut -c1-16)
		fi
		echo "$t $m $p $h"
	done)
}

# run_variant CASE VARIANT: fresh $W, setup, run; results in $TMP/res/CASE.VARIANT.*
run_variant() {
	local c=$1 v=$2 setup="case_${1}_setup" cmdvar="case_${1}_cmd" ignorevar="case_${1}_ignore" out=$TMP/res/$1.${2/:/-}
	local profile=${v%%:*} mode=${v#*:} rc
	rm -rf "$W" "$TMP/home" "$TMP/caller-home"; mkdir -p "$W/.home" "$W/.tmp" "$TMP/home" "$TMP/caller-home"
	if declare -F "$setup" >/dev/null; then (cd "$W" && "$setup") || { echo "setup failed" >"$out.err"; return 1; }; fi
	case $profile in
	native)
		# the environment moat gives, and no fd of this script's beyond 0-2
		(cd "$W" && env -i PATH=$ENVPATH HOME=$TMP/home LANG=C.UTF-8 TERM=dumb TMPDIR=/tmp \
			timeout 120 "$PY" -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' \
			sh -c "${!cmdvar}" </dev/null >"$out.out" 2>"$out.err"); rc=$? ;;
	default)
		# the caller's home is outside the work directory: the run gets a private one
		(cd "$W" && HOME=$TMP/caller-home timeout 120 "$MOAT" run -q --mode "$mode" -- \
			sh -c "${!cmdvar}" </dev/null >"$out.out" 2>"$out.err"); rc=$? ;;
	none)
		# / read-only: HOME and TMPDIR where the run may write (kept out of the listing)
		(cd "$W" && timeout 120 "$MOAT" run -q --mode "$mode" --profile none --ro-bind / --bind "$W" \
			--setenv HOME "$W/.home" --setenv TMPDIR "$W/.tmp" -- \
			sh -c "${!cmdvar}" </dev/null >"$out.out" 2>"$out.err"); rc=$? ;;
	esac
	echo "$rc" >"$out.rc"
	listing "$W" "${!ignorevar:-}" >"$out.files"
}

compare_case() {
	local c=$1 needvar="case_${1}_need" todovar="case_${1}_todo" t missing= n=${#VARIANTS[@]}
	for t in ${!needvar:-}; do have_tool "$t" || missing+=" $t"; done
	if [ -n "$missing" ]; then
		for v in "${VARIANTS[@]}"; do skip "$c [$v]" "not installed:$missing"; done
		declare -F "case_${c}_extra" >/dev/null && skip "$c: extra check" "not installed:$missing"
		return
	fi
	local t0=$SECONDS
	run_variant "$c" native
	local base=$TMP/res/$c.native
	for v in "${VARIANTS[@]}"; do
		local mode=${v#*:} r=$TMP/res/$c.${v/:/-} diffs= policyvar
		if [ "$mode" = unnamespaced ] && ! $have_unns || [ "$mode" = namespaced ] && ! $have_ns; then
			skip "$c [$v]" "moat cannot start in $mode mode here"; continue
		fi
		run_variant "$c" "$v"
		cmp -s "$base.rc" "$r.rc" || diffs+="exit status: native $(cat "$base.rc"), moat $(cat "$r.rc")"$'\n'
		cmp -s "$base.out" "$r.out" || diffs+="stdout:"$'\n'"$(diff "$base.out" "$r.out" | head -20)"$'\n'
		cmp -s "$base.files" "$r.files" || diffs+="files:"$'\n'"$(diff "$base.files" "$r.files" | head -20)"$'\n'
		policyvar="case_${c}_policy_${v%%:*}"
		[ -n "${!policyvar:-}" ] || policyvar="case_${c}_policy_${mode}"
		todovar="case_${c}_todo_${v%%:*}"
		[ -n "${!todovar:-}" ] || todovar="case_${c}_todo_${mode}"
		[ -n "${!todovar:-}" ] || todovar="case_${c}_todo"
		if [ -z "$diffs" ]; then
			pass "$c [$v]: same exit status ($(cat "$r.rc")), stdout and files as native"
		elif [ -n "${!policyvar:-}" ] && grep -qE -- "${!policyvar%%|*}" "$r.err" "$r.out"; then
			pass "$c [$v]: differs by policy, as expected: ${!policyvar#*|}"
		elif [ -n "${!todovar:-}" ]; then
			echo "not ok $((_tap_n + 1)) - $c [$v] # TODO ${!todovar}"; _tap_n=$((_tap_n + 1))
			printf '%s\n' "$diffs" | sed 's/^/# /'
		else
			fail "$c [$v]: differs from native" "$diffs--- moat stderr:
$(head -c 1500 "$r.err")
--- native stderr:
$(head -c 600 "$base.err")"
		fi
	done
	declare -F "case_${c}_extra" >/dev/null && "case_${c}_extra"
	echo "# $c: $((SECONDS - t0)) s"
}

cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=("${ALL_CASES[@]}")
for c in "${cases[@]}"; do
	declare -p "case_${c}_cmd" >/dev/null 2>&1 || { echo "compat.sh: unknown case '$c'" >&2; exit 2; }
done
mkdir -p "$TMP/res"
have_ns=false; have_unns=false
have_mode namespaced && have_ns=true
have_mode unnamespaced && have_unns=true
n=$(( ${#cases[@]} * ${#VARIANTS[@]} ))
for c in "${cases[@]}"; do declare -F "case_${c}_extra" >/dev/null && n=$((n + 1)); done
plan $n
for c in "${cases[@]}"; do compare_case "$c"; done
finish
