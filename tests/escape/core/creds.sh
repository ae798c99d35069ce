#!/usr/bin/env bash
# No confused deputy (docs/architecture.md invariant 7): the supervisor performs the sandbox's file
# operations with the caller's credentials, so the kernel refuses what the caller could
# not do. Each case runs as a caller with no capabilities (the sandbox's root in
# namespaced mode, or 65534 after setpriv) against workspace files set up from outside,
# and checks the files from outside afterwards. The native answer of a capless process
# is the reference (setpriv dropping every capability).
. "$MOAT_SRC/tests/lib/tap.sh"

plan 31
[ "$(id -u)" = 0 ] || skip_all "needs root: the cases need files of several owners"
command -v python3 >/dev/null || skip_all "python3 is needed"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is needed"
cd "$TMP" || exit 1

# A capless root, natively: the reference for what the kernel refuses.
capless() { setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"; }

setup() {
	rm -rf w && mkdir w && chmod 755 w
	echo secret > w/zero && chmod 000 w/zero                     # root's, mode 000
	echo secret > w/rootonly && chmod 600 w/rootonly             # root's, 0600
	echo theirs > w/theirs && chown 65534:65534 w/theirs && chmod 644 w/theirs
	echo mine > w/mine && chmod 755 w/mine
	mkdir w/pub && chmod 1777 w/pub
	mkdir w/closed && chmod 755 w/closed
	mkdir w/shut && touch w/shut/inside && chmod 000 w/shut           # root's, mode 000
	cp probe.py w/probe.py
}

cat > probe.py <<'PYEOF'
import os, sys
what, path = sys.argv[1], sys.argv[2]
try:
    if what == "read":
        open(path).read()
    elif what == "access":
        sys.exit(0 if os.access(path, os.R_OK) else 13)
    elif what == "chown":
        os.chown(path, 65534, 65534)
    elif what == "chmod":
        os.chmod(path, 0o4777)
    elif what == "fchmod":
        fd = os.open(path, os.O_RDONLY)
        os.fchmod(fd, 0o4777)
    elif what == "setcap":
        # cap_setuid,cap_setgid,cap_dac_override+ep as a v2 security.capability value
        v = bytes.fromhex("01000002c200000000000000" + "00" * 8)
        os.setxattr(path, "security.capability", v)
    elif what == "create":
        open(path, "w").write("x")
    elif what == "stat":
        os.stat(path)
    elif what == "umask":
        # stats between umask changes: what a create is given must be the umask of its
        # moment, not one a stat saw (creds.h, CREDS_FIXED)
        # Links, renames and chmods take them too (they give no new inode a mode).
        for m, name in ((0o077, "u077"), (0o027, "u027"), (0o002, "u002")):
            os.umask(m)
            for _ in range(20):
                os.stat(path)
                os.access(path, os.R_OK)
            open(os.path.join(path, name), "w").close()
            os.link(os.path.join(path, name), os.path.join(path, name + "l"))
            os.rename(os.path.join(path, name + "l"), os.path.join(path, name + "r"))
            os.chmod(os.path.join(path, name + "r"), os.stat(os.path.join(path, name)).st_mode)
            os.mkdir(os.path.join(path, name + "d"))
    elif what == "nodump":
        # non-dumpable: its /proc entries are root's and only a ptrace-capable reader
        # gets in, so the supervisor must read them as itself, not as this caller
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
            raise OSError(ctypes.get_errno(), "prctl")
        d = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(100):
            os.close(os.open(os.path.join(path, "mine"), os.O_RDONLY))
            os.close(os.open("mine", os.O_RDONLY, dir_fd=d))
            # stats too: their answer is written into this caller's memory
            if os.stat(os.path.join(path, "mine")).st_size != 5 or \
               os.stat("mine", dir_fd=d).st_size != 5:
                raise OSError(5, "stat")
    print("ok")
except OSError as e:
    print(os.strerror(e.errno))
    sys.exit(e.errno)
PYEOF

# in_sandbox MODE CMD...: run CMD under moat with the workspace w (the current dir).
in_sandbox() {
	local mode=$1; shift
	(cd w && "$MOAT" run -q --mode "$mode" -- "$@" 2>&1)
}
# Whether the sandbox's root holds none of the capabilities that override file modes
# and owners (CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID) in MODE. Unnamespaced
# mode as root keeps them until the command drops them: then it may do all of this
# natively, and there is no deputy to confuse.
capless_sandbox() {
	local eff
	eff=$(cd w && "$MOAT" run -q --mode "$1" -- sh -c 'grep CapEff /proc/self/status' 2>/dev/null)
	eff=${eff##*:	}
	[ -n "$eff" ] && [ $(( 0x$eff & 0x1f )) = 0 ]
}

for mode in namespaced unnamespaced; do
	setup
	# The supervisor itself: its own seccomp filter on every thread, no_new_privs, and
	# none of the capabilities it no longer needs (CAP_SYS_ADMIN, CAP_NET_ADMIN,
	# CAP_SYS_MODULE, CAP_MKNOD) in its effective and bounding sets, nor but
	# CAP_SYS_ADMIN (raised around a send of credentials: confine.c) in its permitted
	# one, read from outside while it runs.
	(cd w && exec "$MOAT" run -q --mode $mode -- sleep 3) >/dev/null 2>&1 &
	mp=$!
	sleep 1.5
	st=""
	for t in /proc/$mp/task/*; do st+="$(grep -E '^(Seccomp|NoNewPrivs|CapPrm|CapEff|CapBnd):' $t/status | tr '\n' ' ')
"; done
	wait $mp
	bad=$(echo "$st" | awk 'NF { if ($10 != 2 || $8 != 1) print "unconfined thread: " $0 }')
	admin=$(( (1 << 21) | (1 << 12) | (1 << 16) | (1 << 27) ))
	for caps in $(echo "$st" | awk 'NF { print $4, $6 }'); do
		[ $(( 0x$caps & admin )) = 0 ] || bad+=" caps $caps"
	done
	for caps in $(echo "$st" | awk 'NF { print $2 }'); do
		[ $(( 0x$caps & admin & ~(1 << 21) )) = 0 ] || bad+=" permitted $caps"
	done
	[ -n "$st" ] && [ -z "$bad" ]
	ok $? "$mode: every supervisor thread runs under its own filter without admin capabilities" \
		"$st $bad"
	if ! capless_sandbox $mode; then
		for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
			skip "$mode: confused deputy case $i" "the sandbox's root holds file capabilities in this mode"
		done
		continue
	fi

	# reading a mode-000 file: a capless root cannot, natively or under moat
	ref=$(cd w && capless python3 probe.py read zero)
	out=$(in_sandbox $mode python3 probe.py read zero)
	[ "$out" = "$ref" ] && [ "$out" = "Permission denied" ]
	ok $? "$mode: a capless root cannot read a mode-000 file (native: $ref)" "sandbox: $out"

	# access(2) answers for the caller, not for the supervisor
	ref=$(cd w && capless python3 probe.py access zero; echo "rc=$?")
	out=$(in_sandbox $mode python3 probe.py access zero; echo "rc=$?")
	[ "$out" = "$ref" ]
	ok $? "$mode: access(R_OK) of a mode-000 file answers as natively ($ref)" "sandbox: $out"

	# stat below a mode-000 directory needs CAP_DAC_READ_SEARCH, which the caller
	# lacks and the supervisor holds
	ref=$(cd w && capless python3 probe.py stat shut/inside)
	out=$(in_sandbox $mode python3 probe.py stat shut/inside)
	[ "$out" = "$ref" ] && [ "$out" = "Permission denied" ]
	ok $? "$mode: a capless root cannot stat below a mode-000 directory (native: $ref)" \
		"sandbox: $out"

	# the umask of each create, with stats in between (unnamespaced: the stats take the
	# run's fixed credentials without reading the caller's status, creates do not)
	rm -rf w/um && mkdir w/um
	out=$(in_sandbox $mode python3 probe.py umask "$PWD/w/um")
	got=$(cd w/um && stat -c %n=%a u077 u077d u027 u027d u002 u002d 2>&1 | tr '\n' ' ')
	[ "$out" = ok ] && [ "$got" = "u077=600 u077d=700 u027=640 u027d=750 u002=664 u002d=775 " ]
	ok $? "$mode: each create takes the umask of its moment, stats in between" \
		"sandbox: $out; host: $got"

	# chown to another uid needs CAP_CHOWN: the host file keeps its owner
	out=$(in_sandbox $mode python3 probe.py chown mine)
	[ "$(stat -c %u:%g w/mine)" = 0:0 ] && [ "$out" = "Operation not permitted" ]
	ok $? "$mode: chown of a workspace file to another uid fails (EPERM), owner unchanged" \
		"sandbox: $out; host: $(stat -c %u:%g w/mine)"

	# chmod of a file someone else owns needs CAP_FOWNER
	out=$(in_sandbox $mode python3 probe.py chmod theirs)
	[ "$(stat -c %a w/theirs)" = 644 ] && [ "$out" = "Operation not permitted" ]
	ok $? "$mode: chmod of another user's file fails (EPERM), mode unchanged" \
		"sandbox: $out; host: $(stat -c %a w/theirs)"

	# the same through an fd (fchmod is decided on the fd, performed on it)
	out=$(in_sandbox $mode python3 probe.py fchmod theirs)
	[ "$(stat -c %a w/theirs)" = 644 ] && [ "$out" = "Operation not permitted" ]
	ok $? "$mode: fchmod of another user's file fails (EPERM), mode unchanged" \
		"sandbox: $out; host: $(stat -c %a w/theirs)"

	# file capabilities on a binary it owns need CAP_SETFCAP
	out=$(in_sandbox $mode python3 probe.py setcap mine)
	got=$(python3 -c 'import os,sys
try: print(os.getxattr(sys.argv[1], "security.capability").hex())
except OSError: print("none")' w/mine)
	[ "$got" = none ] && [ "$out" = "Operation not permitted" ]
	ok $? "$mode: setting security.capability fails (EPERM), none on the host" \
		"sandbox: $out; host: $got"

	# creating in a directory the caller cannot write (root's 0755, caller 65534 or,
	# unnamespaced, the caller is root: then a capless root owns it and may)
	if [ $mode = namespaced ]; then
		out=$(in_sandbox $mode setpriv --reuid=65534 --regid=65534 --clear-groups \
			python3 probe.py create closed/new)
		[ ! -e w/closed/new ] && [ "$out" = "Permission denied" ]
		ok $? "$mode: 65534 cannot create in root's 0755 directory (nothing on the host)" \
			"sandbox: $out; host: $(ls w/closed)"

		out=$(in_sandbox $mode setpriv --reuid=65534 --regid=65534 --clear-groups \
			python3 probe.py read rootonly)
		[ "$out" = "Permission denied" ]
		ok $? "$mode: 65534 cannot read root's 0600 file (EACCES)" "sandbox: $out"

		out=$(in_sandbox $mode setpriv --reuid=65534 --regid=65534 --clear-groups \
			python3 probe.py create pub/by-nobody)
		[ "$out" = ok ] && [ "$(stat -c %u:%g w/pub/by-nobody 2>&1)" = 65534:65534 ]
		ok $? "$mode: a file 65534 creates belongs to 65534 on the host" \
			"sandbox: $out; host: $(stat -c %u:%g w/pub/by-nobody 2>&1)"

		# A run of continued opens or emulated stats leaves the notifier thread acting
		# for its caller (dispatch.c lazy_creds()); what it reads of the caller's /proc must still
		# be read with the supervisor's own authority.
		out=$(in_sandbox $mode setpriv --reuid=65534 --regid=65534 --clear-groups \
			python3 probe.py nodump "$PWD/w")
		[ "$out" = ok ]
		ok $? "$mode: a non-dumpable 65534 opens and stats files by path and by dirfd" "sandbox: $out"

		# The run's credentials are taken as fixed until a thread changes its ids
		# (creds.h, CREDS_FIXED; setresuid is notified and ends it): root's chmods
		# first, so that the notifier thread holds root's status, then 65534's, which
		# must be decided as 65534's.
		out=$(in_sandbox $mode sh -c 'for i in 1 2 3 4 5; do chmod 755 mine; done
			exec setpriv --reuid=65534 --regid=65534 --clear-groups python3 probe.py chmod rootonly')
		[ "$out" = "Operation not permitted" ] && [ "$(stat -c %a w/rootonly)" = 600 ]
		ok $? "$mode: after root's calls, 65534 (setpriv) cannot chmod root's file" \
			"sandbox: $out; host: $(stat -c %a w/rootonly)"
	else
		out=$(in_sandbox $mode python3 probe.py nodump "$PWD/w")
		[ "$out" = ok ]
		ok $? "$mode: a non-dumpable caller opens and stats files by path and by dirfd" "sandbox: $out"
		for c in create-closed read-rootonly create-owner setid-after-root; do
			skip "$mode: 65534 case $c" "unnamespaced mode has no other ids to take"
		done
	fi
done

# A notifier thread keeps its last caller's credentials from one change by name to the
# next (dispatch.c, lazy_change()); a new caller's are taken in full before its change.
# 65534's chmods and links of root's 0600 file, interleaved with root's own chmods of it
# in the same sandbox, never run as root: none succeeds, and the mode is root's last.
if "$MOAT" run -q --mode namespaced -- true >/dev/null 2>&1; then
	setup
	cat > w/interleave.py <<'PYEOF'
import os
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setgid(65534); os.setuid(65534)
    done = 0
    for i in range(200):
        for op in (lambda: os.chmod("rootonly", 0o777),
                   lambda: os.link("rootonly", "link-%d" % i)):
            try:
                op(); done += 1
            except OSError:
                pass
    os.write(w, str(done).encode()); os._exit(0)
os.close(w)
for i in range(200):
    os.chmod("rootonly", 0o640 if i % 2 else 0o600)
os.waitpid(pid, 0)
print("65534 did", os.read(r, 100).decode() or "nothing: it died")
PYEOF
	out=$(in_sandbox namespaced python3 interleave.py)
	[ "$out" = "65534 did 0" ] && [ "$(stat -c %a w/rootonly)" = 640 ] && ! ls w | grep -q '^link-'
	ok $? "namespaced: 65534's chmods and links between root's own never run as root" \
		"sandbox: $out; host: $(stat -c %a w/rootonly) $(ls w | grep -c '^link-') links"
	# the same under --audit, whose record follows each change (keeps_caller())
	cp w/interleave.py interleave.py && setup && cp interleave.py w/
	out=$(cd w && "$MOAT" run -q --mode namespaced --audit "$TMP/interleave.moat" -- \
		python3 interleave.py 2>&1)
	[ "$out" = "65534 did 0" ] && [ "$(stat -c %a w/rootonly)" = 640 ] && ! ls w | grep -q '^link-' &&
		[ -s "$TMP/interleave.moat" ]
	ok $? "namespaced --audit: 65534's chmods and links between root's own never run as root" \
		"sandbox: $out; host: $(stat -c %a w/rootonly) $(ls w | grep -c '^link-') links"
else
	skip "namespaced: interleaved callers" "moat cannot start in namespaced mode here"
	skip "namespaced --audit: interleaved callers" "moat cannot start in namespaced mode here"
fi

# Started by 65534, namespaced: its sandbox holds that one id and no capability, so the
# same shortcut applies (CREDS_FIXED), and the same umask check holds, with --report
# making the creates moat's rather than the kernel's.
NB=$TMP/nb
rm -rf "$NB" && mkdir -p "$NB/w/um" "$NB/out" "$NB/home" && cp probe.py "$NB/w/" &&
	chown -R 65534:65534 "$NB" && chmod 711 "$TMP"
nb() { (cd "$NB/w" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$NB/home" \
	"$MOAT" run -q --mode namespaced --report "$NB/out/r.json" -- "$@" 2>&1); }
if ! nb true >/dev/null; then
	skip "started by 65534: each create takes the umask of its moment" "moat started by 65534 cannot run here"
else
	out=$(nb python3 probe.py umask "$NB/w/um")
	got=$(cd "$NB/w/um" && stat -c %n=%a u077 u077d u027 u027d u002 u002d 2>&1 | tr '\n' ' ')
	made=$(grep -o '"[^"]*um/u0[0-9]*d\?"' "$NB/out/r.json" 2>/dev/null | sort -u | wc -l)
	[ "$out" = ok ] && [ "$got" = "u077=600 u077d=700 u027=640 u027d=750 u002=664 u002d=775 " ] &&
		[ "$made" = 6 ]
	ok $? "started by 65534: each create takes the umask of its moment, stats and links between" \
		"sandbox: $out; host: $got; creates in the report: $made"
fi
finish
