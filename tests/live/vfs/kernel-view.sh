#!/usr/bin/env bash
# Calls moat answers itself, against the kernel's answers in the sandbox's own view.
# Each program in kernel-view/ runs by nsenter in a live sandbox's mount and pid
# namespaces (the kernel's answers, where each mapping is a mount) and under moat,
# namespaced (default, -v: moat performs creates, --strict-hide: every call by name
# emulated) and unnamespaced (the same mappings as its view's, without mounts); every
# line must be the kernel's:
# - resolve.py: openat2, which moat always resolves itself, each resolve flag over 21
#   paths from two dirfds (RESOLVE_NO_XDEV refuses crossing a mapping by a name, "..",
#   an absolute symlink or a magic link);
# - names.py: renames, links and removals across the mounts and of mount points, in the
#   order the kernel checks (the parents' mounts, then the mount's writability, then
#   the objects);
# - creates.py: mkdir, mknod, symlink, link, O_CREAT, bind and metadata changes where a
#   mount refuses them or a name is there (EEXIST before EROFS, procfs's ENOENT first);
# - meta.py: the stat family, statx, access, readlink, xattrs, statvfs and chdir over
#   the spellings of a path (trailing slashes, dots, symlinks, /proc links, names and
#   paths too long), which moat answers itself under --strict-hide and unnamespaced.
# names.py runs namespaced (default, -v, --strict-hide), creates.py unnamespaced too,
# meta.py where moat answers (--strict-hide, unnamespaced).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
[ "$(id -u)" -eq 0 ] || skip_all "nsenter into the sandbox's namespaces needs root"
command -v nsenter >/dev/null || skip_all "needs nsenter (util-linux)"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

W=$(mktemp -d "$TMP/ws.XXXXXX")
mkdir "$W/sub"
echo inner >"$W/sub/inner.txt"
echo top >"$W/a.txt"
ln -s /etc "$W/abs"
ln -s sub "$W/rel"
ln -s a.txt "$W/lnk"
ln -s .. "$W/sub/up"
ln -s /etc "$W/sub/abs"
cp "$MOAT_SRC"/tests/live/vfs/kernel-view/*.py "$MOAT_SRC/tests/lib/calls.py" "$W/"

# the kernel's answers: a sandbox that waits, told apart from every other sleep by its
# length, and each program run by nsenter in its namespaces
mark="3$RANDOM.$RANDOM"
(cd "$W" && exec "$MOAT" run -q -- sleep "$mark") &
moat_pid=$!
pid=
for _ in $(seq 100); do
	pid=$(pgrep -f -x "sleep $mark" | head -1)
	[ -n "$pid" ] && break
	sleep 0.1
done
[ -n "$pid" ] || { kill "$moat_pid"; skip_all "the waiting sandbox did not start"; }
for prog in resolve names creates meta; do
	nsenter -t "$pid" -m -p -- sh -c 'cd "$1" && exec "$2" -B "$3.py"' sh "$W" "$PY" "$prog" \
		>"$TMP/$prog.kernel" 2>&1
done
kill "$pid"
wait "$moat_pid"
for prog in resolve names creates meta; do
	[ "$(wc -l <"$TMP/$prog.kernel")" -ge 20 ] ||
		skip_all "nsenter gave no answers for $prog: $(head -3 "$TMP/$prog.kernel")"
done

variants=("resolve namespaced" "resolve unnamespaced" "names namespaced" "names namespaced -v"
	  "names namespaced --strict-hide" "creates namespaced" "creates namespaced -v"
	  "creates namespaced --strict-hide" "creates unnamespaced"
	  "meta namespaced --strict-hide" "meta unnamespaced")
total=0
for v in "${variants[@]}"; do
	total=$((total + $(wc -l <"$TMP/${v%% *}.kernel")))
done
plan "$total"
for v in "${variants[@]}"; do
	read -r prog mode opt <<<"$v"
	n=$(wc -l <"$TMP/$prog.kernel")
	if ! have_mode "$mode"; then
		for i in $(seq "$n"); do skip "$v: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	# shellcheck disable=SC2086
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" $opt -- "$PY" -B "$prog.py" 2>&1)
	while IFS= read -r line; do
		# the call: "DIR PATH" (resolve), all but the answer (names)
		if [ "$prog" = resolve ]; then key=$(cut -d' ' -f1,2 <<<"$line"); else key=${line% *}; fi
		grep -qF -x -- "$line" <<<"$out"
		ok $? "$v: $key as the kernel in the sandbox's namespace" \
			"kernel: $line
moat:   $(grep -F -- "$key " <<<"$out" | head -1)"
	done <"$TMP/$prog.kernel"
done
finish
