#!/usr/bin/env bash
# The escape cases of tests/escape/ that need more than busybox, run inside a container
# under podman with moat-runtime: a FIFO (hidden, and the supervisor kept free while an
# open waits: vfs/fifo.sh), inotify on a directory holding a hidden file
# (vfs/inotify-hidden.sh), fd-based metadata changes and their race (vfs/fd-meta.sh,
# fd-meta-race.sh), metadata calls the supervisor must not make for a caller that may not
# (vfs/meta-deputy.sh), a blocking send (net/blocking-send.sh), DNS to a nameserver no
# rule names (live/net/dns.sh) and UDP with AF_UNSPEC (net/udp-unspec.sh). Their programs
# are tests/oci/probe.c and tests/escape/vfs/fd-meta-race.c, linked statically by meson
# and copied into the image. Each case also runs under plain runc, the control that shows
# the trick reaches its target when nothing stops it (for the two liveness cases: that
# the call really waited). Every effect is checked from outside: the host directories
# bound in, the host's FIFO writer, the host's test servers, the clock.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/oci/lib.sh"
. "$MOAT_SRC/tests/lib/inotify.sh"
need podman runc conmon
[ -x "${OCI_PROBE:-}" ] && [ -x "${OCI_FD_META_RACE:-}" ] ||
	skip_all "the static test programs were not built (meson found no static libc: libc6-dev)"

make_rootfs "$TMP/rootfs"
R="$TMP/rootfs"
for a in mkfifo nslookup timeout; do ln -sf busybox "$R/bin/$a"; done
cp "$OCI_PROBE" "$R/bin/probe"
cp "$OCI_FD_META_RACE" "$R/bin/fd-meta-race"
podman_image
plan 22

# rrun ARGS...: the control, under plain runc, stdout and stderr together.
rrun() { timeout 60 "${P[@]}" "${RUN[@]}" --runtime runc "$@" 2>&1; }
pol() { printf 'run.moat.policy=moat-policy 1; %s' "$1"; }

# --- the container's own seccomp profile ---------------------------------------------
# openat allowed by default and refused only with O_CREAT: libseccomp cannot hold that
# refusal beside moat's notify, and leaving openat out of the notify set would let every
# open run natively, unseen by moat. The container must not run at all (its
# hidden file would be read) - under runc it reads it.
cat >"$TMP/condprofile.json" <<'JSON'
{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["openat"],
 "action": "SCMP_ACT_ERRNO", "args": [{"index": 2, "value": 64, "valueTwo": 64,
 "op": "SCMP_CMP_MASKED_EQ"}]}]}
JSON
ctl=$(rrun --security-opt seccomp="$TMP/condprofile.json" "$IMG" cat /secret/.env)
out=$(mrun --security-opt seccomp="$TMP/condprofile.json" "$IMG" sh -c 'cat /secret/.env; echo ran')
[ "$ctl" = "TOKEN=topsecret" ] && ! grep -q topsecret <<<"$out" && ! grep -q '^ran' <<<"$out" &&
	grep -q 'refuses it on argument conditions' "$TMP/err"
ok $? "a profile allowing openat by default and refusing it on a condition: the container does not start (runc reads the hidden file: $ctl)" \
	"$(diag "$out")"

# --- FIFO -----------------------------------------------------------------------------
# A FIFO named .env (hidden by the container profile) in a host directory bound at
# /hush. A writer on the host opens it without blocking, which succeeds only once a
# reader has it open: it sees the container's reader under runc, and must see none
# under moat-runtime - neither the program's nor one of the supervisor's own.
fifo_writer() {
	"$PY" -c '
import errno, os, sys, time
end = time.time() + float(sys.argv[3])
while time.time() < end:
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno != errno.ENXIO:
            raise
        time.sleep(0.01)
        continue
    os.write(fd, b"FIFOTOKEN\n")
    os.close(fd)
    open(sys.argv[2], "a").write("reader\n")
    break
' "$@" &
	track_pid $!
}
for who in runc moat; do
	rm -rf "$TMP/fifo.$who"
	mkdir "$TMP/fifo.$who"
	mkfifo "$TMP/fifo.$who/.env"
	: >"$TMP/fifo.$who.log"
done
fifo_writer "$TMP/fifo.runc/.env" "$TMP/fifo.runc.log" 30
ctl=$(rrun -v "$TMP/fifo.runc:/hush" "$IMG" timeout 20 cat /hush/.env)
fifo_writer "$TMP/fifo.moat/.env" "$TMP/fifo.moat.log" 8
out=$(mrun -v "$TMP/fifo.moat:/hush" "$IMG" sh -c 'timeout 5 cat /hush/.env; echo rc $?')
sleep 8.5 # the writer's whole window, so that a late reader would be seen
grep -q FIFOTOKEN <<<"$ctl" && [ -s "$TMP/fifo.runc.log" ] &&
	! grep -q FIFOTOKEN <<<"$out" && grep -q '^rc [1-9]' <<<"$out" && [ ! -s "$TMP/fifo.moat.log" ]
ok $? "hidden FIFO /hush/.env: runc opens it and reads the host's token; under moat-runtime nobody opens it" \
	"runc: '$ctl' (writer: $(cat "$TMP/fifo.runc.log")) moat-runtime: '$out' (writer: $(cat "$TMP/fifo.moat.log")) $(diag "")"

# One thread waits in a FIFO open while the other's stat()s, a file write (seen from the
# host) and the matching open go on; an open that waits on the notifier thread would
# stall them all.
for who in runc moat; do rm -rf "$TMP/fw.$who"; mkdir "$TMP/fw.$who"; done
ctl=$(rrun -v "$TMP/fw.runc:/w" "$IMG" probe fifo-wait /w)
t0=$(date +%s)
out=$(mrun -v "$TMP/fw.moat:/w" "$IMG" probe fifo-wait /w)
took=$(($(date +%s) - t0))
max=$(sed -n 's/^blocked 1 stats 50 max_ms \([0-9]*\) read x$/\1/p' <<<"$out")
grep -q '^blocked 1 ' <<<"$ctl" && [ -n "$max" ] && [ "$max" -lt 1000 ] && [ "$took" -lt 30 ] &&
	[ -s "$TMP/fw.moat/marker" ]
ok $? "a FIFO open that waits holds up no other call (max ${max:-?} ms, ${took}s; runc: $ctl)" "$(diag "$out")"

# --- inotify --------------------------------------------------------------------------
# The container watches /w (holding the hidden .env) and /w/sub; the host appends to
# both files while the watches stand.
inotify_run() { # WHO: prints the probe's output
	local who=$1 d="$TMP/ino.$1"
	rm -rf "$d"
	mkdir -p "$d/sub"
	echo v >"$d/sub/visible"
	echo TOKEN=x >"$d/.env"
	if [ "$who" = runc ]; then
		rrun -v "$d:/w" "$IMG" probe inotify /w >"$TMP/ino.$who.out" &
	else
		mrun -v "$d:/w" "$IMG" probe inotify /w >"$TMP/ino.$who.out" &
	fi
	inotify_provoke "$d" $! 300
	cat "$TMP/ino.$who.out"
}
ctl=$(inotify_run runc)
out=$(inotify_run moat)
grep -q '^events.* \.env' <<<"$ctl" && grep -q '^events' <<<"$out" && ! grep -q '\.env' <<<"$out"
ok $? "no inotify event names the hidden .env (runc's watch does: $(grep '^events' <<<"$ctl"))" "$(diag "$out")"
grep -q '^watch dir error' <<<"$out"
ok $? "the watch on the directory holding .env is refused" "$(diag "$out")"
grep -q '^watch sub ok' <<<"$out" && grep -q '^events.* visible' <<<"$out"
ok $? "a watch on a directory with no hidden entry works and reports (control)" "$(diag "$out")"

# --- metadata through an fd -----------------------------------------------------------
# /ro is `ro-bind`: a file opened read-only there must keep mode, owner and xattrs
# through fchmod, fchown, fsetxattr and fremovexattr.
meta_state() { stat -c '%a %u %g' "$1"; getfattr -d "$1" 2>/dev/null | grep -v '^#'; }
for who in runc moat; do
	rm -rf "$TMP/ro.$who"
	mkdir "$TMP/ro.$who"
	echo data >"$TMP/ro.$who/f"
	chmod 644 "$TMP/ro.$who/f"
	setfattr -n user.keep -v 1 "$TMP/ro.$who/f" 2>/dev/null
done
before=$(meta_state "$TMP/ro.moat/f")
ctl=$(rrun -v "$TMP/ro.runc:/ro" "$IMG" probe fdmeta /ro/f)
out=$(mrun -v "$TMP/ro.moat:/ro" --annotation "$(pol "ro-bind /ro")" "$IMG" probe fdmeta /ro/f)
after=$(meta_state "$TMP/ro.moat/f")
[ "$(meta_state "$TMP/ro.runc/f")" != "$before" ] && [ "$before" = "$after" ]
ok $? "fd-based metadata changes leave the ro-bind file as it was (under runc it changes: $(meta_state "$TMP/ro.runc/f" | tr '\n' ' '))" \
	"$before -> $after $(diag "$out")"
grep -q '^fchmod refused' <<<"$out" && ! grep -q changed <<<"$out"
ok $? "every fd-based change is refused inside" "$(diag "$out")"

# The race: the number of the fd flips between a read-write file and the ro-bind one
# while fchmod and fsetxattr loop on it.
for who in runc moat; do
	rm -rf "$TMP/race.$who"
	mkdir -p "$TMP/race.$who/w" "$TMP/race.$who/ro"
	echo w >"$TMP/race.$who/w/own"
	echo data >"$TMP/race.$who/ro/f"
	chmod 644 "$TMP/race.$who/w/own" "$TMP/race.$who/ro/f"
done
ctl=$(rrun -v "$TMP/race.runc/w:/w" -v "$TMP/race.runc/ro:/ro" "$IMG" fd-meta-race /w/own /ro/f 5000)
out=$(timeout 300 "${P[@]}" "${RUN[@]}" --runtime "$MOAT_RUNTIME" -v "$TMP/race.moat/w:/w" \
	-v "$TMP/race.moat/ro:/ro" --annotation "$(pol "ro-bind /ro")" "$IMG" \
	fd-meta-race /w/own /ro/f 20000 2>"$TMP/err")
m=$(stat -c %a "$TMP/race.moat/ro/f")
x=$(getfattr --only-values -n user.race "$TMP/race.moat/ro/f" 2>/dev/null)
[ "$(stat -c %a "$TMP/race.runc/ro/f")" != 644 ] && [ "$m" = 644 ] && [ -z "$x" ]
ok $? "20000 racing fchmod/fsetxattr never change the ro-bind file (runc: $ctl, mode $(stat -c %a "$TMP/race.runc/ro/f"))" \
	"mode $m, user.race '$x' $(diag "$out")"
grep -qE 'ok=[1-9]' <<<"$out" && grep -qE 'refused=[1-9]' <<<"$out"
ok $? "both files were raced: some calls changed the read-write one, some were refused ($out)" "$(diag "$out")"

# --- the supervisor as a deputy -------------------------------------------------------
# The supervisor acts with its own privileges; a container user who may not change a
# file must not get it done through moat. A root-owned file and a device node in a
# directory bound in, touched by uid 1000 (no capabilities): mode, owner, times and the
# security.* / trusted.* xattrs must stay, as the kernel keeps them under runc. Root
# with the engine's default capabilities changes them under runc (the control).
dep_state() {
	stat -c '%a %u %g %X %Y %.9Z' "$1"
	getfattr -d -m '^(security|trusted)\.' "$1" 2>/dev/null | grep -v '^#'
}
for who in runc runc1000 moat; do
	d="$TMP/dep.$who"
	rm -rf "$d"
	mkdir "$d"
	chmod 755 "$d"
	cp /bin/busybox "$d/f"
	chmod 755 "$d/f"
	mknod "$d/nul" c 1 3 && chmod 666 "$d/nul"
done
before_f=$(dep_state "$TMP/dep.moat/f")
before_n=$(dep_state "$TMP/dep.moat/nul")
ctl=$(rrun -v "$TMP/dep.runc:/d" "$IMG" probe deputy /d/f)
ctl1000=$(rrun --user 1000:1000 -v "$TMP/dep.runc1000:/d" "$IMG" sh -c 'probe deputy /d/f; probe deputy /d/nul')
out=$(mrun --user 1000:1000 -v "$TMP/dep.moat:/d" "$IMG" sh -c 'probe deputy /d/f; probe deputy /d/nul')
[ "$(dep_state "$TMP/dep.runc/f")" != "$before_f" ] &&
	[ "$(dep_state "$TMP/dep.moat/f")" = "$before_f" ] && [ "$(dep_state "$TMP/dep.moat/nul")" = "$before_n" ]
ok $? "uid 1000 changes no mode, owner, time or security/trusted xattr through moat (root under runc does: $(grep -c changed <<<"$ctl") changes)" \
	"file: $before_f -> $(dep_state "$TMP/dep.moat/f"); node: $before_n -> $(dep_state "$TMP/dep.moat/nul") $(diag "$out")"
[ "$(grep -c refused <<<"$out")" -ge 12 ] && ! grep -q changed <<<"$out" && ! grep -q changed <<<"$ctl1000"
ok $? "inside, every attempt is refused, as the kernel refuses uid 1000 under runc" \
	"runc uid 1000: $ctl1000 $(diag "$out")"

# --- a blocking send ------------------------------------------------------------------
# One thread blocks on a peer that does not read (a unix stream or datagram socketpair,
# a full listen backlog: all the container's own) while the other's stat()s must be
# answered at once; once drained, the blocked call completes.
BLOCK='for k in stream dgram backlog; do echo "kind $k"; probe block $k /tmp; done'
ctl=$(rrun "$IMG" sh -c "$BLOCK")
t0=$(date +%s)
out=$(mrun "$IMG" sh -c "$BLOCK")
took=$(($(date +%s) - t0))
for k in stream dgram backlog; do
	c=$(grep -A2 "^kind $k" <<<"$ctl")
	m=$(grep -A2 "^kind $k" <<<"$out")
	max=$(sed -n 's/^blocked 1 stats 200 max_ms //p' <<<"$m")
	grep -q '^blocked 1 ' <<<"$c" && [ -n "$max" ] && [ "$max" -lt 1000 ] &&
		grep -q '^unblocked [0-9]' <<<"$m" && [ "$took" -lt 45 ]
	ok $? "$k: stat is answered while a call waits for its peer, which then completes (max ${max:-?} ms; runc: $(tr '\n' ' ' <<<"$c"))" \
		"$(diag "$out")"
done

# --- DNS ------------------------------------------------------------------------------
# The host's DNS servers log every question. A policy that names no nameserver: a
# question sent straight to one (sendto, connect+send) reaches nobody; the one allowed
# server answers; the container's resolver configuration cannot reach the host's port 53.
start_server dns E || skip_all "cannot start the test DNS server"
start_server udp U && start_server udp V && start_server tcp A || skip_all "cannot start the test servers"
if start_server dns D 53 2>/dev/null; then on53=1; else on53=0; fi
NAME=secret-not-allowed.moat-test.example
ctl=$(rrun "$IMG" sh -c "probe dns control-$NAME 127.0.0.1 $PORT_E sendto; probe dns control2-$NAME 127.0.0.1 $PORT_E connect")
out=$(mrun --annotation "$(pol "allow-net 127.0.0.1:$PORT_A")" "$IMG" \
	sh -c "probe dns $NAME 127.0.0.1 $PORT_E sendto; probe dns $NAME 127.0.0.1 $PORT_E connect")
grep -q "^control-$NAME" "$TMP/E.log" && grep -q "^control2-$NAME" "$TMP/E.log" &&
	! grep -q "^$NAME" "$TMP/E.log" && [ "$(grep -c '^error' <<<"$out")" = 2 ]
ok $? "a question sent straight to a nameserver no rule names reaches it under runc, not under moat-runtime" \
	"server saw: $(tr '\n' ' ' <"$TMP/E.log") runc: $ctl $(diag "$out")"
out=$(mrun --annotation "$(pol "allow-net udp:127.0.0.1:$PORT_E")" "$IMG" \
	probe dns allowed.moat-test.example 127.0.0.1 "$PORT_E" sendto)
grep -q '^rcode 0 answers 1' <<<"$out" && grep -q '^allowed.moat-test.example' "$TMP/E.log"
ok $? "... while a nameserver the policy allows answers" "$(diag "$out")"
if [ $on53 = 1 ]; then
	echo "nameserver 127.0.0.1" >"$TMP/resolv.conf"
	ctl=$(rrun -v "$TMP/resolv.conf:/etc/resolv.conf:ro" "$IMG" nslookup "c53-$NAME")
	out=$(mrun -v "$TMP/resolv.conf:/etc/resolv.conf:ro" --annotation "$(pol "allow-net 127.0.0.1:$PORT_A")" \
		"$IMG" nslookup "$NAME")
	grep -q "^c53-$NAME" "$TMP/D.log" && ! grep -q "^$NAME" "$TMP/D.log"
	ok $? "the resolver (resolv.conf: 127.0.0.1, port 53) reaches the host's server under runc only" \
		"port 53 saw: $(tr '\n' ' ' <"$TMP/D.log") $(diag "$out")"
else
	skip "the resolver (resolv.conf, port 53) reaches the host's server under runc only" \
		"cannot bind the host's 127.0.0.1:53 here (in use)"
fi
! grep -q "^$NAME" "$TMP/E.log" "$TMP/D.log" 2>/dev/null
ok $? "the host's DNS servers never saw the name that is not allowed" "$(cat "$TMP/E.log" "$TMP/D.log" 2>/dev/null)"

# --- UDP ------------------------------------------------------------------------------
# UDP over IPv4 takes sin_family AF_UNSPEC for AF_INET: sendto, sendmsg and sendmmsg
# with it, and a plain AF_INET sendto, to a port no rule names.
ctl=$(rrun "$IMG" probe udp "$PORT_U" "$PORT_V")
n_runc=$(grep -c . "$TMP/V.log")
: >"$TMP/V.log"
: >"$TMP/U.log"
out=$(mrun --annotation "$(pol "allow-net udp:127.0.0.1:$PORT_U")" "$IMG" probe udp "$PORT_U" "$PORT_V")
[ "$n_runc" -ge 4 ] && [ ! -s "$TMP/V.log" ]
ok $? "AF_INET and AF_UNSPEC datagrams to a port not allowed: runc delivers $n_runc, moat-runtime none" \
	"$(cat "$TMP/V.log") runc: $ctl $(diag "$out")"
[ "$(grep -c ' error ' <<<"$out")" = 4 ]
ok $? "... the four sends fail inside" "$(diag "$out")"
grep -q '^allowed$' "$TMP/U.log"
ok $? "... while the allowed server got its datagram" "$(cat "$TMP/U.log") $(diag "$out")"
finish
