#!/usr/bin/env bash
# Emulated calls apply the caller's umask and ids as the kernel would (the supervisor
# acts with the caller's credentials), and root in a namespaced sandbox can become
# another user. Every mode a case prints is compared with the same script run natively.
. "$MOAT_SRC/tests/lib/tap.sh"

plan 10
command -v python3 >/dev/null || skip_all "python3 is needed"
cd "$TMP" || exit 1

# Creations under two umasks: mkdir, open(O_CREAT) with 0666 and 0777, mkfifo, a unix
# socket's bind (sock.c), O_TMPFILE made visible with linkat; then the modes, listed.
cat > creates.py <<'PYEOF'
import os, socket, stat, sys
for um in (0o002, 0o077, 0o027):
    d = "u%03o" % um
    os.umask(um)
    os.mkdir(d, 0o777)
    os.close(os.open(d + "/f666", os.O_CREAT | os.O_WRONLY, 0o666))
    os.close(os.open(d + "/f777", os.O_CREAT | os.O_WRONLY, 0o777))
    os.mkfifo(d + "/fifo", 0o666)
    os.mkdir(d + "/sub", 0o2775)
    s = socket.socket(socket.AF_UNIX)
    s.bind(d + "/sock")
    s.close()
for root, dirs, files in sorted(os.walk(".")):
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        if n.endswith(".py"):
            continue
        print(p, oct(stat.S_IMODE(os.lstat(p).st_mode)))
PYEOF

mkdir native && cp creates.py native/ && (cd native && python3 creates.py) > native.txt 2>&1
for mode in namespaced unnamespaced; do
	rm -rf w && mkdir w && cp creates.py w/
	(cd w && "$MOAT" run -q --mode $mode -- python3 creates.py) > sandbox.txt 2>&1
	# and the modes as the host sees them, not as the sandbox reports them
	(cd w && python3 -c 'import os, stat
for root, dirs, files in sorted(os.walk(".")):
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        if not n.endswith(".py"): print(p, oct(stat.S_IMODE(os.lstat(p).st_mode)))') > host.txt
	if cmp -s native.txt sandbox.txt && cmp -s native.txt host.txt; then
		pass "$mode: modes of created files follow the caller's umask, as natively"
	else
		fail "$mode: modes of created files follow the caller's umask, as natively" \
			"$(diff native.txt host.txt; diff native.txt sandbox.txt)"
	fi
done

# the shell's umask builtin, the everyday case
for mode in namespaced unnamespaced; do
	rm -rf w && mkdir w
	(cd w && "$MOAT" run -q --mode $mode -- sh -c 'umask 002; mkdir d; touch f') >/dev/null 2>&1
	got=$(cd w && stat -c '%a' d f | tr '\n' ' ')
	[ "$got" = "775 664 " ]
	ok $? "$mode: umask 002; mkdir d; touch f give 775 and 664" "host: $got"
done

# root in a namespaced sandbox can become another user and set groups (full id map)
if [ "$(id -u)" != 0 ]; then
	for i in 1 2 3 4 5 6; do skip "namespaced: other users, case $i" "moat runs as root only"; done
	finish
fi
command -v setpriv >/dev/null || { for i in 1 2 3 4 5 6; do skip "namespaced: other users, case $i" "no setpriv"; done; finish; }
rm -rf w && mkdir w && chmod 1777 w
out=$(cd w && "$MOAT" run -q --mode namespaced -- setpriv --reuid=65534 --regid=65534 --clear-groups id -u 2>&1)
[ "$out" = 65534 ]
ok $? "namespaced: setpriv --reuid=65534 runs id as 65534" "$out"

out=$(cd w && "$MOAT" run -q --mode namespaced -- python3 -c '
import subprocess
r = subprocess.run(["id", "-u"], user=65534, group=65534, extra_groups=[], capture_output=True, text=True)
print(r.stdout.strip(), r.returncode)' 2>&1)
[ "$out" = "65534 0" ]
ok $? "namespaced: Python subprocess.run(user=65534) works" "$out"

out=$(cd w && "$MOAT" run -q --mode namespaced -- setpriv --groups=4,100 id -G 2>&1)
[ "$out" = "0 4 100" ]
ok $? "namespaced: root sets its supplementary groups (setgroups allowed)" "$out"

(cd w && "$MOAT" run -q --mode namespaced -- setpriv --reuid=65534 --regid=65534 --clear-groups \
	sh -c 'echo x > made-by-nobody; mkdir dir-by-nobody') >/dev/null 2>&1
got=$(cd w && stat -c '%u:%g' made-by-nobody dir-by-nobody 2>&1 | tr '\n' ' ')
[ "$got" = "65534:65534 65534:65534 " ]
ok $? "namespaced: what 65534 creates is owned by 65534 on the host" "$got"

# 65534 holds no capability after the switch: the kernel (through the supervisor)
# refuses it root's 0600 file
echo secret > w/rootonly && chmod 600 w/rootonly
out=$(cd w && "$MOAT" run -q --mode namespaced -- setpriv --reuid=65534 --regid=65534 \
	--clear-groups sh -c 'cat rootonly; echo rc=$?' 2>&1)
echo "$out" | grep -q "Permission denied" && echo "$out" | grep -q rc=1 && ! echo "$out" | grep -q secret
ok $? "namespaced: 65534 gets EACCES on root's 0600 file" "$out"

# Supplementary groups take part in the emulated calls' permission checks: 65534 with
# group 4000 creates and reads in root's 0770 directory of group 4000, and without it
# gets EACCES, natively and under moat alike, and the host holds the same files.
cat > grp.sh <<'SHEOF'
for gs in --groups=4000 --clear-groups; do
	setpriv --reuid=65534 --regid=65534 $gs sh -c 'echo x > g/f-$1 && cat g/f-$1; echo "rc=$?"' \
		sh "${gs#--}" 2>&1 | sed 's/.*Permission denied$/Permission denied/'
done
SHEOF
for d in nat w; do
	mkdir -p $d && rm -rf $d/g && mkdir $d/g && chown 0:4000 $d/g && chmod 770 $d/g && cp grp.sh $d/
done
ref=$(cd nat && sh grp.sh)
out=$(cd w && "$MOAT" run -q --mode namespaced -- sh grp.sh 2>&1)
host_ref=$(cd nat && stat -c '%U:%G %a %n' g/* 2>&1)
host=$(cd w && stat -c '%U:%G %a %n' g/* 2>&1)
[ "$ref" = "$(printf 'x\nrc=0\nPermission denied\nrc=2')" ] && [ "$out" = "$ref" ] && [ "$host" = "$host_ref" ]
ok $? "namespaced: a supplementary group grants 65534 root's 0770 directory, as natively" \
	"native: $ref / $host_ref
moat: $out / $host"
finish
