#!/usr/bin/env bash
# System trees ("system SRC:DST", the default profile's /usr, /etc, /lib...): a "**"
# glob anchored above one does not reach into it, in the supervisor's decision and in
# the covering of the kernel's view alike. The two must agree, or a continued open or a
# native stat would show what the decision hides (or the decision refuse what the
# kernel shows). Checked from outside by content and by the kernel's own stat:
#  - the decision: cat under --strict-hide (every call by name decided and emulated),
#    unnamespaced, and the fast path (namespaced, opens continued);
#  - the kernel's view: stat in namespaced mode, which the kernel answers natively; a
#    covered path is an empty stub of mode 0444 (a directory: 0555), a visible one has
#    the host's size. The stubs are openable so that an open of one meets its fanotify
#    mark (EPERM, reported) rather than a mode check the supervisor never hears of.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 12
mkdir "$TMP/cwd"
S=$(mktemp -d "$TMP/sys.XXXXXX")     # stands for a system tree
mkdir -p "$S/sub" "$S/a/b"
echo SYSENV >"$S/.env"
echo SYSKEY-1 >"$S/sub/id_rsa"
echo DEEP-SECRET >"$S/a/b/deep.env"   # hidden by a glob anchored inside the tree
W=$(mktemp -d "$TMP/ws.XXXXXX")
echo WSENV >"$W/.env"
R=$(mktemp -d "$TMP/ro.XXXXXX")
echo ROENV >"$R/.env"
cat >"$TMP/sys.moat" <<EOF
moat-policy 1
system $S
hide $S/**/deep.env
EOF

# unmapped paths: unnamespaced mode cannot remap
run() { (cd "$TMP/cwd" && "$MOAT" run -q --policy "$TMP/sys.moat" --bind "$W" --ro-bind "$R" \
	"$@" 2>/dev/null); }
# what each path gives to cat: its content, or "-" when it cannot be read
reads() {
	run "$@" -- sh -c 'for p in "$@"; do c=$(cat "$p" 2>/dev/null) || c=-; printf "%s " "$c"; done' \
		sh "$S/.env" "$S/sub/id_rsa" "$S/a/b/deep.env" "$W/.env" "$R/.env"
}
want="SYSENV SYSKEY-1 - - - "

modes=(namespaced)
have_mode unnamespaced && modes+=(unnamespaced)
if ! have_mode namespaced; then
	for i in $(seq 12); do skip "case $i" "moat cannot start in namespaced mode here"; done
	finish
fi

out=$(reads)
[ "$out" = "$want" ]
ok $? "fast path: a \"**\" glob from / does not reach into a system tree, one anchored in it does ($out)"
out=$(reads --strict-hide)
[ "$out" = "$want" ]
ok $? "--strict-hide (the decision alone): the same ($out)"
out=$(reads --audit "$TMP/a.audit")
[ "$out" = "$want" ]
ok $? "--audit: the same ($out)"
if have_mode unnamespaced; then
	out=$(reads --mode unnamespaced)
	[ "$out" = "$want" ]
	ok $? "unnamespaced: the same ($out)"
else
	skip "unnamespaced: the same" "moat cannot start in unnamespaced mode here"
fi

# The kernel's view, namespaced: stat is native there. "%s %a": size and mode.
kstat() { run -- stat -c '%s %a' "$1" 2>&1; }
out=$(kstat "$S/.env")
[ "$out" = "$(stat -c '%s %a' "$S/.env")" ]
ok $? "kernel view: the system tree's .env is the host file, no stub over it ($out)"
out=$(kstat "$S/sub/id_rsa")
[ "$out" = "$(stat -c '%s %a' "$S/sub/id_rsa")" ]
ok $? "kernel view: its sub/id_rsa is the host file ($out)"
out=$(kstat "$S/a/b/deep.env")
[ "$out" = "0 444" ]
ok $? "kernel view: the match of the glob anchored in the system tree is covered ($out)"
out=$(kstat "$W/.env")
[ "$out" = "0 444" ]
ok $? "kernel view: the workspace's .env is covered ($out)"
out=$(kstat "$R/.env")
[ "$out" = "0 444" ]
ok $? "kernel view: a read-only mapping's .env is covered (read wholly) ($out)"

# The default profile itself: a key shipped by a package under /usr (an example, public)
# reads as on the host, decided and natively; /etc/ssl/private is hidden by path.
k=$(find /usr/share -xdev \( -name '*key*.pem' -o -name '*.key' \) -type f -readable -print -quit 2>/dev/null)
if [ -n "$k" ]; then
	out=$(cd "$TMP/cwd" && "$MOAT" run -q -- sh -c "cat '$k' | cksum; stat -c '%s' '$k'" 2>&1)
	[ "$out" = "$(cksum <"$k")
$(stat -c %s "$k")" ]
	ok $? "default profile: $k (a package's example key under /usr) reads as on the host" "$out"
else
	skip "default profile: a package's example key under /usr" "none on this host"
fi
if [ -d /etc/ssl/private ]; then
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --strict-hide -- ls -d /etc/ssl/private 2>&1)
	echo "$out" | grep -q 'No such file'
	ok $? "default profile: /etc/ssl/private is hidden ($out)"
	out=$(cd "$TMP/cwd" && "$MOAT" run -q -- stat -c '%a' /etc/ssl/private 2>&1)
	[ "$out" = 555 ]
	ok $? "default profile, kernel view: /etc/ssl/private is covered ($out)"
else
	skip "default profile: /etc/ssl/private is hidden" "no /etc/ssl/private here"
	skip "default profile, kernel view: /etc/ssl/private is covered" "no /etc/ssl/private here"
fi
finish
