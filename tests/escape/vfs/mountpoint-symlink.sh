#!/usr/bin/env bash
# The keeper makes the mount points of mappings whose destination the host lacks. Below
# a read-write mapping of a host directory (the workspace) an earlier run may have left
# a symlink on the way to such a destination. Followed from the keeper's own root, whose
# /oldroot is the host's, it would have the keeper (the host's root, when root starts
# moat) make a directory or an empty file wherever the link says on the host, for as
# long as the run lasts (an empty /etc/nologin keeps users out), and put the mount
# there instead of in the view. Destinations are resolved as the sandbox sees them
# (RESOLVE_IN_ROOT in the view): a link that leads out of the view is refused with a
# message naming the destination, one inside it is followed there. Checked on the
# host, during the run and after it.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 4
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
W=$(mktemp -d "$TMP/ws.XXXXXX")
cd "$W" || exit 1
mkdir -p "$TMP/victim" "$W/sub"
echo hello >"$TMP/src.txt"

# run_watch ARGS...: moat run ARGS -- sleep 2, in the background; meanwhile every 50 ms
# whatever appears in $TMP/victim is noted in $TMP/seen. Sets out and rc.
run_watch() {
	: >"$TMP/seen"
	timeout 60 "$MOAT" run -q "$@" -- sleep 2 >"$TMP/out" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		ls -A "$TMP/victim" >>"$TMP/seen"
		sleep 0.05
	done
	wait "$pid"
	rc=$?
	out=$(cat "$TMP/out")
}

ln -s "/oldroot$TMP/victim" "$W/abs"
run_watch --tmpfs "$W/abs/evil"
[ $rc -eq 125 ] && [ ! -s "$TMP/seen" ] && [ -z "$(ls -A "$TMP/victim")" ] &&
	grep -q "$W/abs/evil: a symlink on the way leads out of the sandbox's view" <<<"$out"
ok $? "--tmpfs through a workspace symlink to /oldroot/...: nothing made on the host, refused and named (rc $rc; seen: $(sort -u "$TMP/seen" | tr '\n' ' '))" "$out"

run_watch --ro-bind "$TMP/src.txt:$W/abs/nologin"
[ $rc -eq 125 ] && [ ! -s "$TMP/seen" ] && [ -z "$(ls -A "$TMP/victim")" ]
ok $? "the same for a file mount point: no empty file made on the host (rc $rc; seen: $(sort -u "$TMP/seen" | tr '\n' ' '))" "$out"

ln -s "../../../../../../../../../oldroot$TMP/victim" "$W/up"
run_watch --tmpfs "$W/up/evil"
[ $rc -eq 125 ] && [ ! -s "$TMP/seen" ] && [ -z "$(ls -A "$TMP/victim")" ]
ok $? "a relative symlink climbing out of the view: refused too (rc $rc; seen: $(sort -u "$TMP/seen" | tr '\n' ' '))" "$out"

ln -s sub "$W/rel"
out=$(timeout 60 "$MOAT" run -q --tmpfs "$W/rel/x" -- stat -c %a "$W/sub/x" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = 1777 ] && [ -z "$(ls -A "$W/sub")" ]
ok $? "a symlink that stays in the view is followed there, and its mount point goes after the run (rc $rc)" "$out"
finish
