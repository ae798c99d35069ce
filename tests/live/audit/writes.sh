#!/usr/bin/env bash
# The audit stream where --audit continues creates, write opens, mkdir, rmdir, unlink
# and exec after the check (namespaced, no --report, --cow or -v; creates made by moat
# where read-only opens are recorded from fanotify): a program creating N
# files, writing them, making and removing directories, unlinking and exec'ing N times
# has each call in `moat audit dump --json` with its path, the files it leaves are on the
# host with their bytes, and a create a rule refuses (a read-only mapping, a hidden name)
# is a denial in the stream and leaves nothing on the host. With --report the same calls
# are still performed by moat (emulated), and the stream says so.
. "$(dirname "$0")/lib.sh"

(cd "$WORK" && "$MOAT" run -q --mode namespaced -- true) >/dev/null 2>&1 ||
	skip_all "moat cannot start in namespaced mode here"
plan 10
N=25
cd "$WORK" || exit 1
echo secret >.env # hidden by the default profile's **/.env
cat >probe.sh <<'SHEOF'
#!/bin/sh
n=$1
mkdir out
i=0
while [ "$i" -lt "$n" ]; do
	echo "data $i" >"out/f$i"
	/bin/true
	i=$((i + 1))
done
i=0
while [ "$i" -lt "$n" ]; do
	[ $((i % 2)) -eq 0 ] && rm "out/f$i"
	i=$((i + 1))
done
mkdir gone && rmdir gone
echo x >/etc/moat-writes-test 2>/dev/null && echo "ETC WRITTEN"
echo x >.env 2>/dev/null && echo "ENV WRITTEN"
echo done
SHEOF
chmod +x probe.sh

run() { timeout 120 "$MOAT" run -q --mode namespaced --output-in-workspace "$@" -- /bin/sh probe.sh "$N" \
	2>"$TMP/err"; }
sys_of() { "$MOAT" audit dump --json "$1" 2>/dev/null | jq -c 'select(.type=="sys")'; }

out=$(run --audit a.moat)
rc=$?
sys_of a.moat >a.json
[ "$out" = done ] && [ "$rc" -eq 0 ] && [ ! -e /etc/moat-writes-test ] && [ "$(cat .env)" = secret ]
ok $? "--audit: the program ran, wrote nothing to /etc and left the hidden .env alone" \
	"exit $rc; out: $out; stderr: $(head -c 600 "$TMP/err")"

# From outside: what the program left, byte for byte.
good=0
for i in $(seq 0 $((N - 1))); do
	if [ $((i % 2)) -eq 0 ]; then [ ! -e "out/f$i" ] && good=$((good + 1))
	else [ "$(cat "out/f$i" 2>/dev/null)" = "data $i" ] && good=$((good + 1)); fi
done
[ "$good" -eq "$N" ] && [ ! -e gone ]
ok $? "--audit: the host holds the odd files with their bytes, not the even ones, nor gone/ ($good of $N)"

count() { jq -c "select($1)" a.json | wc -l; }
created=0 unlinked=0
for i in $(seq 0 $((N - 1))); do
	[ "$(count ".syscall==\"openat\" and .path==\"out/f$i\" and (.flags | test(\"O_CREAT\")) and .resolved==\"$WORK/out/f$i\" and .decision!=\"denied\"")" -eq 1 ] &&
		created=$((created + 1))
	[ $((i % 2)) -eq 0 ] &&
		[ "$(count ".syscall==\"unlinkat\" and .path==\"out/f$i\" and .resolved==\"$WORK/out/f$i\" and .decision!=\"denied\"")" -eq 1 ] &&
		unlinked=$((unlinked + 1))
done
[ "$created" -eq "$N" ]
ok $? "--audit: each of the $N creates is in the stream with its path ($created)" \
	"$(jq -c 'select(.path | tostring | startswith("out/"))' a.json | head -5)"
# Where read-only opens are native and recorded from the kernel's open events (root),
# moat makes the creates itself (no open is continued there: an event could not be told
# apart from the continued open's); elsewhere they are continued.
fan=$("$MOAT" audit dump --json a.moat 2>/dev/null |
	jq -r 'select(.type=="hdr") | .features[] | select(.name=="native_opens_from_fanotify") | .present')
[ "$fan" = true ] && want=emulated || want=continued
cont=$(count ".syscall==\"openat\" and (.path | tostring | startswith(\"out/f\")) and .decision==\"$want\"")
[ "$cont" -eq "$N" ]
ok $? "--audit: the creates were checked and $want ($cont of $N; native opens from fanotify: $fan)"
[ "$unlinked" -eq $(((N + 1) / 2)) ]
ok $? "--audit: each unlink is in the stream with its path ($unlinked of $(((N + 1) / 2)))"
execs=$(count '.syscall=="execve" and .resolved=="/usr/bin/true" and .decision!="denied"')
[ "$execs" -eq "$N" ]
ok $? "--audit: each of the $N execs of /bin/true is in the stream ($execs)"
[ "$(count '.syscall=="mkdir" and .path=="gone" and .decision!="denied"')" -eq 1 ] &&
	[ "$(count '.syscall=="rmdir" and .path=="gone" and .decision!="denied"')" -eq 1 ]
ok $? "--audit: the mkdir and rmdir of gone/ are in the stream" "$(jq -c 'select(.path=="gone")' a.json)"
[ "$(count '.path=="/etc/moat-writes-test" and .decision=="denied" and .errno==30')" -eq 1 ]
ok $? "--audit: the refused create in /etc is a denial (EROFS) in the stream" \
	"$(jq -c 'select(.path=="/etc/moat-writes-test")' a.json)"
[ "$(count '.path==".env" and .decision=="denied"')" -eq 1 ]
ok $? "--audit: the refused write open of the hidden .env is a denial in the stream" \
	"$(jq -c 'select(.path==".env")' a.json)"

# Kept as they are: with --report moat performs the creates itself (recorded emulated).
rm -rf out
out=$(run --audit b.moat --report r.json)
sys_of b.moat >b.json
n=$(jq -c 'select(.syscall=="openat" and (.path | tostring | startswith("out/f")) and .decision=="emulated" and .result>=0)' b.json | wc -l)
[ "$out" = done ] && [ "$n" -eq "$N" ]
ok $? "--audit --report: the creates are performed by moat and recorded so ($n of $N)" \
	"out: $out; $(head -c 400 "$TMP/err")"
finish
