#!/usr/bin/env bash
# The escape cases of tests/escape/ that apply inside a container, run under podman with
# moat-runtime; the same command under plain runc is the control that shows each trick
# really reaches its target when nothing stops it. Checked from outside the container:
# podman's output, the host's test servers' counts, the host directory bound into it.
#
# Applies here: hidden-file aliases (.., //, relative, /proc/{self,1,PID}/root,
# /proc/self/cwd, symlinks and chains, hard link, rename of the file and of its
# directory, copy, openat2 with and without a dirfd), the TOCTOU path swap
# (tests/escape/vfs/toctou.c, static), connects to a port the policy does not name in
# every address form, the TOCTOU sockaddr swap (tests/escape/net/
# toctou-connect.c, static), and writes below a read-only path by every route.
#
# Does not apply to a container, and why:
# - core/caps, creds, id-valid, pid-args: the container's capabilities, credentials and
#   argv are set by runc from config.json; moat-runtime delegates them, moat's own
#   launcher (what those cases check) does not run.
# - core/dev-tty, terminal, pty: podman run without -t gives the container no tty.
# - core/sysv-ipc: runc gives the container its own IPC namespace.
# - core/teardown, exec-race, outputs: moat run's child handling and report files;
#   the container's fail-closed end is tests/oci/podman.sh (killing the supervisor).
# - vfs/cow-commit, broad-bind: --cow and --bind are moat run options (mounts are the
#   engine's here). vfs/proc-keeper: the keeper is moat run's; a container's /proc is
#   its own pid namespace's. vfs/continue-race: read-only opens are never continued in
#   a container (no mount namespace of moat's covers the hidden files).
# - net/scm-rights, scm-credentials, unix-denied, listen-autobind, socket-types:
#   host unix sockets and abstract names are not in the container's mount and network
#   view to begin with (--network host shares only IP).
# vfs/fifo, inotify-hidden, fd-meta, fd-meta-race, meta-deputy, net/blocking-send,
# udp-unspec and live/net/dns need a program beyond busybox: tests/oci/escape-more.sh.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/oci/lib.sh"
need podman runc conmon

build_openat2
make_rootfs "$TMP/rootfs"
R="$TMP/rootfs"
for a in cp mv mkdir rm kill; do ln -sf busybox "$R/bin/$a"; done
mkdir "$R/hush" "$R/data"
echo HIDDEN >"$R/hush/.env" # toctou.c tells the files apart by their first word
echo ALLOWED >"$R/etc/allow"
TOCTOU_OK=1
build_static "$R/bin/toctou" "$MOAT_SRC/tests/escape/vfs/toctou.c" || TOCTOU_OK=
build_static "$R/bin/toctou-connect" "$MOAT_SRC/tests/escape/net/toctou-connect.c" || TOCTOU_OK=
podman_image

ALIASES=(direct dotdot slashes relative proc-self-root proc-1-root proc-pid-root
	proc-cwd symlink symlink-dir symlink-chain symlink-via-proc hardlink copy
	rename-dir rename-file)
[ -n "$OPENAT2_BIN" ] && ALIASES+=(openat2 openat2-dirfd)
ADDRS=(127.0.0.1 127.1 ::ffff:127.0.0.1)
plan $((${#ALIASES[@]} + ${#ADDRS[@]} + 6))

# One line "NAME:CONTENT" per alias. The renames come last and put things back, so
# that under runc each alias finds the file where the one before left it.
cat >"$TMP/aliases.sh" <<'SH'
p() { n=$1; shift; printf '%s:' "$n"; "$@" 2>/dev/null | tr -d '\n'; echo; }
p direct cat /secret/.env
p dotdot cat /tmp/../secret/.env
p slashes cat //secret//./.env
p relative sh -c 'cd /secret && cat .env'
p proc-self-root cat /proc/self/root/secret/.env
p proc-1-root cat /proc/1/root/secret/.env
p proc-pid-root sh -c 'sleep 5 & cat /proc/$!/root/secret/.env; kill $!'
p proc-cwd sh -c 'cd /secret && cat /proc/self/cwd/.env'
p symlink sh -c 'ln -s /secret/.env /tmp/l1 && cat /tmp/l1'
p symlink-dir sh -c 'ln -s /secret /tmp/l2 && cat /tmp/l2/.env'
p symlink-chain sh -c 'ln -s /secret/.env /tmp/l3b && ln -s /tmp/l3b /tmp/l3 && cat /tmp/l3'
p symlink-via-proc sh -c 'ln -s /proc/self/root/secret /tmp/l4 && cat /tmp/l4/.env'
p hardlink sh -c 'ln /secret/.env /tmp/h && cat /tmp/h'
p copy sh -c 'cp /secret/.env /tmp/c && cat /tmp/c'
p openat2 /bin/openat2 /secret/.env
p openat2-dirfd sh -c 'cd /secret && /bin/openat2 .env'
p rename-dir sh -c 'mv /secret /tmp/sd && cat /tmp/sd/.env; mv /tmp/sd /secret'
p rename-file sh -c 'mv /secret/.env /tmp/moved && cat /tmp/moved'
SH
script=$(cat "$TMP/aliases.sh")
ctl=$(timeout 120 "${P[@]}" "${RUN[@]}" --runtime runc "$IMG" sh -c "$script" 2>&1)
out=$(timeout 120 "${P[@]}" "${RUN[@]}" --runtime "$MOAT_RUNTIME" "$IMG" sh -c "$script" 2>"$TMP/err")
for a in "${ALIASES[@]}"; do
	c=$(grep "^$a:" <<<"$ctl")
	m=$(grep "^$a:" <<<"$out")
	[ "$c" = "$a:TOKEN=topsecret" ] && [ -n "$m" ] && ! grep -q topsecret <<<"$m"
	ok $? "hidden /secret/.env through $a: runc reads it, moat-runtime does not" \
		"runc: '$c' moat-runtime: '$m' $(diag "")"
done

# TOCTOU: a thread flips the path between /etc/allow and /hush/.env while openat loops.
if [ -n "$TOCTOU_OK" ]; then
	ctl=$(timeout 120 "${P[@]}" "${RUN[@]}" --runtime runc "$IMG" /bin/toctou /etc/allow /hush/.env 20000 2>&1)
	out=$(timeout 300 "${P[@]}" "${RUN[@]}" --runtime "$MOAT_RUNTIME" "$IMG" \
		/bin/toctou /etc/allow /hush/.env 20000 2>"$TMP/err")
	grep -qE 'hidden=[1-9]' <<<"$ctl" && grep -q 'hidden=0 ' <<<"$out" &&
		grep -qE 'allowed=[1-9]' <<<"$out"
	ok $? "20000 racing opens never reach the hidden file (runc: $ctl; moat-runtime: $out)" \
		"$(diag "$out")"
else
	skip "20000 racing opens never reach the hidden file" "no static C toolchain (cc -static -pthread) here to build toctou.c"
fi

# Network: the policy names port A; B gets nothing, in any address form.
start_server tcp A && start_server tcp B ||
	skip_all "cannot start the test servers"
policy="moat-policy 1; allow-net 127.0.0.1:$PORT_A"
for addr in "${ADDRS[@]}"; do
	b0=$(cat "$TMP/B.log")
	timeout 60 "${P[@]}" "${RUN[@]}" --runtime runc "$IMG" \
		sh -c "echo hi | nc -w 2 $addr $PORT_B" >/dev/null 2>&1
	b1=$(cat "$TMP/B.log")
	out=$(mrun --annotation run.moat.policy="$policy" "$IMG" \
		sh -c "echo hi | nc -w 2 $addr $PORT_A; echo hi | nc -w 2 $addr $PORT_B")
	b2=$(cat "$TMP/B.log")
	[ "$b1" -gt "$b0" ] && [ "$b2" = "$b1" ]
	ok $? "connect to $addr:<not allowed>: runc reaches the server, moat-runtime does not" \
		"accepts of B: before $b0, after runc $b1, after moat-runtime $b2 $(diag "$out")"
done
a0=$(cat "$TMP/A.log")
out=$(mrun --annotation run.moat.policy="$policy" "$IMG" sh -c "echo hi | nc -w 2 127.0.0.1 $PORT_A")
[ "$(cat "$TMP/A.log")" -gt "$a0" ]
ok $? "... while the allowed port is reached" "$(diag "$out")"
if [ -n "$TOCTOU_OK" ]; then
	b0=$(cat "$TMP/B.log")
	out=$(mrun --annotation run.moat.policy="$policy" "$IMG" \
		/bin/toctou-connect "$PORT_A" "$PORT_B" 3000)
	[ "$(cat "$TMP/B.log")" = "$b0" ] && grep -qE 'connected=[1-9]' <<<"$out"
	ok $? "3000 racing connects never reach the port not allowed ($out)" \
		"accepts of B: $b0 -> $(cat "$TMP/B.log") $(diag "$out")"
else
	skip "3000 racing connects never reach the port not allowed" "no static C toolchain here to build toctou-connect.c"
fi

# Read-only: a host directory bound in at /data, `ro-bind /data`; every route to write
# below it is tried, and the host directory is looked at afterwards. runc, with no
# policy, writes through every route (the control).
WRITES='echo x >/data/new; echo x >/proc/self/root/data/viaproc; ln -s /data /tmp/d;
echo x >/tmp/d/vialink; mkdir /data/dir; echo x >/tmp/t; mv /tmp/t /data/moved;
ln /data/keep /data/hard; : >/data/keep;
cd /data && echo x >relative; true'
routes="new viaproc vialink dir moved hard relative"
for who in runc moat; do
	rm -rf "$TMP/vol.$who"
	mkdir "$TMP/vol.$who"
	echo KEEP >"$TMP/vol.$who/keep"
done
timeout 60 "${P[@]}" "${RUN[@]}" --runtime runc -v "$TMP/vol.runc:/data" "$IMG" \
	sh -c "$WRITES" >/dev/null 2>&1
out=$(mrun -v "$TMP/vol.moat:/data" --annotation "run.moat.policy=moat-policy 1; ro-bind /data" \
	"$IMG" sh -c "$WRITES")
got_runc=$(cd "$TMP/vol.runc" && ls | tr '\n' ' ')
got_moat=$(cd "$TMP/vol.moat" && ls | tr '\n' ' ')
missing=
for r in $routes; do [ -e "$TMP/vol.runc/$r" ] || missing="$missing $r"; done
[ -z "$missing" ] && [ ! -s "$TMP/vol.runc/keep" ]
ok $? "control: under runc every route writes into the bound directory" "missing:$missing; has: $got_runc"
[ "$got_moat" = "keep " ] && [ "$(cat "$TMP/vol.moat/keep")" = KEEP ]
ok $? "ro-bind /data: no route creates, renames, links or truncates anything there" \
	"host directory: $got_moat keep: $(cat "$TMP/vol.moat/keep") $(diag "$out")"
out=$(mrun -v "$TMP/vol.moat:/data" --annotation "run.moat.policy=moat-policy 1; ro-bind /data" \
	"$IMG" cat /data/keep)
[ "$out" = KEEP ]
ok $? "... and it still reads" "$(diag "$out")"
finish
