#!/usr/bin/env bash
# --cow: the sandbox writes, deletes and renames in its workspace; after --discard (or
# no action) the host directory is byte-identical to before; after --commit it equals
# what the sandbox saw at the end (a listing with modes, sha256 and link targets taken
# inside, compared with the host's); the --export tar applied to a copy gives the same
# tree, and its .sha256 list checks. Every way the sandbox reaches the workspace (its
# start cwd, a chdir and relative paths, /proc/self/cwd, an fd) goes through the
# overlay: a discard leaves nothing of any of them. A hard link of the host is never
# written through.
. "$MOAT_SRC/tests/lib/tap.sh"
MODES="namespaced unnamespaced"
plan 21

need_cow
command -v python3 >/dev/null || skip_all "python3 is needed to apply the export"

cd "$TMP"
LIST='find . -mindepth 1 | LC_ALL=C sort | while IFS= read -r f; do
	if [ -L "$f" ]; then echo "$f link $(readlink "$f")"
	elif [ -f "$f" ]; then echo "$f file $(stat -c %a "$f") $(sha256sum < "$f" | cut -d" " -f1)"
	else echo "$f $(stat -c %F:%a "$f")"; fi; done'
WORK='set -e
echo new > n.txt
echo mod >> a.txt
rm c.txt
mv sub/b.txt sub/b2.txt
mv d1 d2
rm -rf gone; mkdir gone; echo y > gone/y
chmod 600 a.txt; chmod 755 sub/s.sh
ln -sf other link
mkdir -p new/deep; echo deep > new/deep/f
cd sub && echo rel > rel.txt && cd ..
echo viaproc > /proc/self/cwd/viaproc.txt
exec 3< sub
python3 -c "import os; fd = os.open(\"fdrel.txt\", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=3); os.write(fd, b\"fd\\n\"); os.close(fd)"
echo changed > hl
'"$LIST"

mk_tree() {
	rm -rf "$1" && mkdir -p "$1/sub" "$1/d1/in" "$1/gone/deep"
	( cd "$1" && echo a > a.txt && echo b > sub/b.txt && echo c > c.txt &&
	  echo s > sub/s.sh && echo 1 > d1/in/f && echo g > gone/deep/g && ln -s a.txt link &&
	  ln -f "$TMP/outside/hl" hl )
}
list() { ( cd "$1" && sh -c "$LIST" ); }
mkdir -p outside
overlays() { grep -c " $TMP/ws " /proc/self/mountinfo; }

for m in $MODES; do
	echo outside > outside/hl
	mk_tree ws; list ws > before.txt

	( cd ws && "$MOAT" run -q --mode "$m" --cow --discard -- sh -c "$WORK" ) > in.txt 2> err.txt
	list ws > after.txt
	ok $(cmp -s before.txt after.txt && grep -q viaproc in.txt && echo 0 || echo 1) \
		"--cow --discard: the host workspace is as before, though the sandbox changed it [$m]" \
		"$(diff before.txt after.txt; cat err.txt; head -3 in.txt)"
	ok $([ "$(cat outside/hl)" = outside ] && echo 0 || echo 1) \
		"--cow --discard: a host hard link out of the workspace is untouched [$m]"

	( cd ws && "$MOAT" run -q --mode "$m" --cow -- sh -c "$WORK" ) > in.txt 2> err.txt
	list ws > after.txt
	ok $(cmp -s before.txt after.txt && echo 0 || echo 1) \
		"--cow with no action drops the changes [$m]" "$(diff before.txt after.txt; cat err.txt)"

	( cd ws && "$MOAT" run -q --mode "$m" --cow --commit --export "$TMP/e-$m.tar" \
		--report "$TMP/r-$m.json" -- sh -c "$WORK" ) > in.txt 2> err.txt
	st=$?
	list ws > after.txt
	ok $([ $st -eq 0 ] && [ -s in.txt ] && cmp -s in.txt after.txt && echo 0 || echo 1) \
		"--cow --commit: the host workspace is what the sandbox saw at the end [$m]" \
		"status $st; $(diff in.txt after.txt; cat err.txt)"
	ok $([ "$(cat outside/hl)" = outside ] && [ "$(cat ws/hl)" = changed ] && echo 0 || echo 1) \
		"--cow --commit replaces a hard-linked name, never writes through it [$m]" \
		"outside: $(cat outside/hl)"
	ok $(jq -e '.cow.action == "commit" and .cow.failed == 0 and
		([.cow.changes[] | select(.path == "c.txt")][0].kind == "delete") and
		([.cow.changes[] | select(.path == "n.txt")][0].sha256 | length) == 64' "r-$m.json" \
		>/dev/null && echo 0 || echo 1) "the report lists the change set with sha256 [$m]" \
		"$(jq -c .cow "r-$m.json" 2>&1 | head -c 600)"

	mk_tree copy
	python3 "$MOAT_SRC/tests/live/vfs/cow-apply.py" "e-$m.tar" copy 2> err.txt
	list copy > applied.txt
	ok $(cmp -s in.txt applied.txt && echo 0 || echo 1) \
		"--export: the tar applied to a copy gives the tree the sandbox saw [$m]" \
		"$(diff in.txt applied.txt; cat err.txt)"
	ok $( (cd copy && sha256sum --quiet -c "$TMP/e-$m.tar.sha256") >/dev/null 2>&1 && echo 0 || echo 1) \
		"--export: FILE.sha256 checks against the applied tree [$m]"
done
# The layer is on the --disk tmpfs: the quota covers what the sandbox writes there.
for m in $MODES; do
	mk_tree ws
	( cd ws && "$MOAT" run -q --mode "$m" --cow --disk 16M --discard -- sh -c \
		'dd if=/dev/zero of=big bs=1M count=32 2>&1; true' ) > dd.txt 2>&1
	ok $(grep -q "No space left" dd.txt && [ ! -e ws/big ] && echo 0 || echo 1) \
		"--cow --disk 16M: writing 32 MiB to the workspace fails with ENOSPC, the host gets nothing [$m]" \
		"$(cat dd.txt)"
done
# --cow-dir keeps the layer from one run to the next, for one run at a time.
mk_tree ws; mkdir -p cd
( cd ws && "$MOAT" run -q --cow --cow-dir "$TMP/cd" -- sh -c 'echo kept > kept.txt' &&
  "$MOAT" run -q --cow --cow-dir "$TMP/cd" --commit -- cat kept.txt ) > kept.out 2>&1
ok $([ "$(cat kept.out)" = kept ] && [ "$(cat ws/kept.txt 2>/dev/null)" = kept ] &&
	[ -z "$(ls -A cd/upper)" ] && echo 0 || echo 1) \
	"--cow-dir: the layer is kept for the next run, and emptied by its commit" "$(cat kept.out)"
( cd ws && "$MOAT" run -q --cow --cow-dir "$TMP/cd" -- sleep 3 ) &
track_pid $!
sleep 1
( cd ws && "$MOAT" run -q --cow --cow-dir "$TMP/cd" -- true ) 2> busy.txt
st=$?
ok $([ $st -eq 125 ] && grep -q "another run" busy.txt && echo 0 || echo 1) \
	"--cow-dir: a second run on the same layer at once is refused" "status $st; $(cat busy.txt)"
wait
ok $([ "$(overlays)" -eq 0 ] && echo 0 || echo 1) "no overlay is left in the host's mount table"
