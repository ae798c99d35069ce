#!/usr/bin/env bash
# Issue 3 acceptance: `moat policy check` names FILE:LINE: of a wrong directive and exits
# 125, passes a good file with 0; unnamespaced mode refuses remaps and tmpfs with a
# message that names the namespaced mode (exit 125), and never starts the command.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 10
cd "$TMP"

printf 'moat-policy 1\n# comment\nro-bind /usr\nhide **/.env\ntmpfs /scratch 64M\nfile /etc/hosts @/etc/hosts\nchdir /usr\n' >good.pol
"$MOAT" policy check good.pol >out 2>&1
ok $? "a good policy file passes with exit 0" "$(cat out)"

check_bad() { # check_bad NAME LINE CONTENT...
	local name=$1 line=$2; shift 2
	printf '%s\n' "$@" >bad.pol
	"$MOAT" policy check bad.pol >out 2>&1
	local rc=$?
	[ $rc -eq 125 ] && grep -q "bad.pol:$line:" out
	ok $? "$name is reported as bad.pol:$line: with exit 125 (rc=$rc)" "$(cat out)"
}
check_bad "an unknown directive" 4 'moat-policy 1' '# c' 'ro-bind /usr' 'bindd /x'
check_bad "a missing argument" 3 'moat-policy 1' '' 'hide'
check_bad "a wrong header" 1 'moat-policy 7' 'ro-bind /usr'
check_bad "a bad tmpfs size" 2 'moat-policy 1' 'tmpfs /scratch lots'

# The same error stops moat run before the command runs.
printf 'moat-policy 1\nbindd /x\n' >bad.pol
"$MOAT" run --policy bad.pol -- touch "$TMP/ran" >out 2>&1
rc=$?
[ $rc -eq 125 ] && [ ! -e "$TMP/ran" ] && grep -q 'bad.pol:2:' out
ok $? "moat run --policy with a bad line exits 125 without running the command (rc=$rc)" "$(cat out)"

if ! have_mode unnamespaced; then
	for i in 1 2 3 4; do skip "unnamespaced refusal $i" "unnamespaced mode cannot start here"; done
	finish
fi
mkdir w
"$MOAT" run --mode unnamespaced --bind "$TMP/w:/workspace" -- touch "$TMP/ran" >out 2>&1
rc=$?
[ $rc -eq 125 ] && [ ! -e "$TMP/ran" ] && grep -qi 'namespaced mode' out
ok $? "unnamespaced --bind SRC:DST (DST != SRC) is refused naming the namespaced mode" "rc=$rc $(cat out)"

"$MOAT" run --mode unnamespaced --ro-bind "/usr:/opt/usr" -- touch "$TMP/ran" >out 2>&1
rc=$?
[ $rc -eq 125 ] && [ ! -e "$TMP/ran" ] && grep -qi 'namespaced mode' out
ok $? "unnamespaced --ro-bind SRC:DST is refused the same way" "rc=$rc $(cat out)"

"$MOAT" run --mode unnamespaced --tmpfs /scratch -- touch "$TMP/ran" >out 2>&1
rc=$?
[ $rc -eq 125 ] && [ ! -e "$TMP/ran" ] && grep -qi 'namespaced mode' out
ok $? "unnamespaced --tmpfs is refused naming the namespaced mode" "rc=$rc $(cat out)"

printf 'moat-policy 1\nbind %s:/workspace\n' "$TMP/w" >remap.pol
"$MOAT" run --mode unnamespaced --policy remap.pol -- touch "$TMP/ran" >out 2>&1
rc=$?
[ $rc -eq 125 ] && [ ! -e "$TMP/ran" ] && grep -qi 'namespaced mode' out
ok $? "a remap in a policy file is refused in unnamespaced mode too" "rc=$rc $(cat out)"
finish
