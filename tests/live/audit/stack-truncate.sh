#!/usr/bin/env bash
# The supervisor reads the modules on a denied call's stack; the sandbox can write some
# of them (a library copied into the workspace) and truncate one after moat has read it.
# moat must survive, and both denials must be in the stream. Both modes.
. "$(dirname "$0")/lib.sh"
: "${FIX_TRUNC:?}" "${FIX_TRUNC_MOD:?}"
# An older moat has no --output-in-workspace (and writes there anyway).
OUTFLAG=
"$MOAT" run --help | grep -q -- --output-in-workspace && OUTFLAG=--output-in-workspace
# The build tree is not mapped by the default profile: run from the workspace.
cp "$FIX_TRUNC" ./trunc-fix && cp "$FIX_TRUNC_MOD" ./lib.so || exit 1
plan 4
for mode in namespaced unnamespaced; do
	rm -f t.moat mod.so
	"$MOAT" run -q --mode "$mode" $OUTFLAG --audit t.moat -- ./trunc-fix ./lib.so \
		>out.txt 2>err.txt
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q "^survived -1 -1$" out.txt; then
		pass "$mode: moat survives the truncation of a module it read for a stack"
	else fail "$mode: moat survives the truncation of a module" "exit $rc; $(cat out.txt err.txt)"; fi
	# Both denials, each with a stack through the library.
	n=$("$MOAT" audit dump --json t.moat 2>/dev/null | jq -s '[.[] | select(.type=="sys" and
		.decision=="denied" and (.path // "" | endswith("shadow")) and
		any(.stack[]?; (.module // "") | endswith("/mod.so")))] | length')
	[ "$n" = 2 ] && "$MOAT" audit verify t.moat >/dev/null 2>&1
	ok $? "$mode: both denials are in the stream, with a frame in the library" "found $n; $("$MOAT" audit verify t.moat 2>&1 | tail -2)"
done
finish
