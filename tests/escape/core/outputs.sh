#!/usr/bin/env bash
# moat's own outputs (--report, --audit) are never written through a name the sandbox
# can change: run from the workspace as the README shows, the sandbox replaces r.json
# and the stream with symbolic links to a host file outside the workspace, or the stream
# with an older, intact one. Checked from outside, in both modes: the host file is
# untouched, the report and the stream are where the user asked, and the stream is this
# run's (`audit verify --run-id` with the report's run_id).
. "$MOAT_SRC/tests/lib/tap.sh"
command -v jq >/dev/null || skip_all "needs jq"
W="$TMP/ws"
H="$TMP/host"
mkdir -p "$W" "$H"
cd "$W" || exit 1

# An older moat has no --output-in-workspace (and writes in the workspace anyway): run
# it without, so that the test shows what it does.
OUTFLAG=
"$MOAT" run --help | grep -q -- --output-in-workspace && OUTFLAG=--output-in-workspace

plan 16
for mode in namespaced unnamespaced; do
	printf 'host secret\n' >"$H/victim"
	printf 'host stream\n' >"$H/victim2"
	chmod 600 "$H/victim" "$H/victim2"
	before=$(stat -c '%s %Y %a' "$H/victim" "$H/victim2"; sha256sum "$H/victim" "$H/victim2")
	rm -f r.json a.moat

	# Without --output-in-workspace a stream the sandbox could alter is refused.
	"$MOAT" run -q --mode "$mode" --audit a.moat -- true 2>"$TMP/err"
	rc=$?
	if [ "$rc" -eq 125 ] && grep -q -- "--output-in-workspace" "$TMP/err" && [ ! -e a.moat ]; then
		pass "$mode: --audit in the workspace is refused unless asked for"
	else fail "$mode: --audit in the workspace is refused unless asked for" "exit $rc: $(cat "$TMP/err")"; fi
	rm -f a.moat

	# The sandbox swaps both names for links to host files while it runs.
	"$MOAT" run -q --mode "$mode" $OUTFLAG --report r.json --audit a.moat -- \
		/bin/sh -c "rm -f r.json a.moat; ln -s '$H/victim' r.json; ln -s '$H/victim2' a.moat;
			    cat /etc/shadow 2>/dev/null; exit 3" 2>"$TMP/err"
	rc=$?
	after=$(stat -c '%s %Y %a' "$H/victim" "$H/victim2"; sha256sum "$H/victim" "$H/victim2")
	[ "$before" = "$after" ]
	ok $? "$mode: a link planted as r.json/a.moat during the run leaves the host files untouched" \
		"before: $before
after: $after"
	id=$(jq -r .run_id r.json 2>/dev/null)
	if [ "$rc" -eq 3 ] && [ -f r.json ] && [ ! -L r.json ] && [ "$(jq -r .exit_status r.json)" = 3 ] &&
	   [ -n "$id" ] && [ "$id" != null ]; then
		pass "$mode: the report is at r.json, a regular file, with the run's status and run id"
	else fail "$mode: the report is at r.json" "exit $rc; $(ls -l r.json 2>&1); $(cat "$TMP/err")"; fi
	# moat says it found the name replaced: the sandbox did swap it.
	if [ -f a.moat ] && [ ! -L a.moat ] && grep -q "put its own copy back" "$TMP/err" &&
	   "$MOAT" audit verify --run-id "$id" a.moat >"$TMP/v" 2>&1; then
		pass "$mode: the stream is at a.moat, intact, of this run"
	else fail "$mode: the stream is at a.moat, intact, of this run" "$(ls -l a.moat 2>&1); $(cat "$TMP/v" "$TMP/err")"; fi
	cp a.moat "$TMP/old.moat"

	# The sandbox puts an older, clean stream (of the run above) in place of its own.
	cp "$TMP/old.moat" old.moat
	"$MOAT" run -q --mode "$mode" $OUTFLAG --report r.json --audit a.moat -- \
		/bin/sh -c "cp old.moat b; mv -f b a.moat; cat /etc/shadow 2>/dev/null; exit 0" \
		2>"$TMP/err"
	id2=$(jq -r .run_id r.json 2>/dev/null)
	if [ -n "$id2" ] && [ "$id2" != "$id" ] && grep -q "put its own copy back" "$TMP/err" &&
	   "$MOAT" audit verify --run-id "$id2" a.moat >"$TMP/v" 2>&1 && ! cmp -s a.moat old.moat; then
		pass "$mode: a stream swapped for an older one is put back: a.moat is this run's"
	else fail "$mode: a stream swapped for an older one is put back" "ids $id / $id2; $(cat "$TMP/v")"; fi
	"$MOAT" audit verify --run-id "$id2" old.moat >"$TMP/v" 2>&1
	[ $? -eq 1 ] && grep -q "another run" "$TMP/v"
	ok $? "$mode: verify --run-id refuses an intact stream of another run" "$(cat "$TMP/v")"
	rm -f old.moat b

	# A link left as r.json before the run (by an earlier run) is refused, not followed.
	rm -f r.json a.moat
	ln -s "$H/victim" r.json
	"$MOAT" run -q --mode "$mode" $OUTFLAG --report r.json -- true 2>"$TMP/err"
	rc=$?
	after=$(stat -c '%s %Y %a' "$H/victim" "$H/victim2"; sha256sum "$H/victim" "$H/victim2")
	if [ "$rc" -eq 125 ] && [ "$before" = "$after" ] && [ -L r.json ]; then
		pass "$mode: a link at r.json before the run is refused and not followed"
	else fail "$mode: a link at r.json before the run is refused" "exit $rc; $(cat "$TMP/err")"; fi
	rm -f r.json
	ln -s "$H/victim2" a.moat
	"$MOAT" run -q --mode "$mode" $OUTFLAG --audit a.moat -- true 2>"$TMP/err"
	rc=$?
	after=$(stat -c '%s %Y %a' "$H/victim" "$H/victim2"; sha256sum "$H/victim" "$H/victim2")
	if [ "$rc" -eq 125 ] && [ "$before" = "$after" ]; then
		pass "$mode: a link at a.moat before the run is refused, the host file not truncated"
	else fail "$mode: a link at a.moat before the run is refused" "exit $rc; $(cat "$TMP/err")"; fi
	rm -f a.moat
done
finish
