#!/usr/bin/env bash
# --cow --commit acts for the sandbox on the host directory: it must never be steered
# out of it. The sandbox replaces a host directory of the workspace with a symlink to a
# directory outside, replaces a host symlink to outside with a directory of its own and
# writes into it, and leaves a symlink pointing at a host file outside; then the commit
# runs. Checked from outside: the outside directory and file are exactly as before, the
# workspace holds the links and directories the sandbox made, nothing more.
. "$MOAT_SRC/tests/lib/tap.sh"
MODES="namespaced unnamespaced"
plan 6

need_cow

cd "$TMP"
for m in $MODES; do
	rm -rf ws out && mkdir -p ws/sub out && echo keep > out/target && echo s > ws/sub/s
	ln -s "$TMP/out" ws/link2out
	before=$(cd out && find . -printf '%p %s %m\n' | sort; cat target)
	( cd ws && "$MOAT" run -q --mode "$m" --cow --commit -- sh -c "
		rm -rf sub && ln -s '$TMP/out' sub
		rm link2out && mkdir link2out && echo planted > link2out/target && echo new > link2out/new
		ln -s '$TMP/out/target' tgt" ) 2> err.txt
	after=$(cd out && find . -printf '%p %s %m\n' | sort; cat target)
	ok $([ "$before" = "$after" ] && echo 0 || echo 1) \
		"--commit writes nothing out of the workspace through links the sandbox or the host made [$m]" \
		"$(diff <(echo "$before") <(echo "$after"); cat err.txt)"
	ok $([ -L ws/sub ] && [ "$(readlink ws/sub)" = "$TMP/out" ] && [ -d ws/link2out ] &&
		[ ! -L ws/link2out ] && [ "$(cat ws/link2out/target)" = planted ] && echo 0 || echo 1) \
		"the host directory and link are replaced by what the sandbox made, not followed [$m]" \
		"$(ls -la ws ws/link2out 2>&1; cat err.txt)"
	ok $([ -L ws/tgt ] && [ "$(cat out/target)" = keep ] && echo 0 || echo 1) \
		"a symlink to a host file is committed as a link, its target untouched [$m]"
done
finish
