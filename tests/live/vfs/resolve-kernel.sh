#!/usr/bin/env bash
# openat2 is always moat's: the supervisor resolves the path in the view, resolve flags
# included. Its answers must be the kernel's in the sandbox's own mount namespace, where
# each mapping is a mount (RESOLVE_NO_XDEV refuses crossing one, by a name, "..", an
# absolute symlink or a magic link). The kernel's answers come from the same program run
# by nsenter in a live sandbox's mount and pid namespaces; moat's from that program run
# under moat, namespaced and unnamespaced (whose view has the same mappings, no mounts).
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
cp "$MOAT_SRC/tests/live/vfs/resolve-kernel.py" "$W/prog.py"

# a sandbox that waits, told apart from every other sleep by its length
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
kernel=$(nsenter -t "$pid" -m -p -- sh -c 'cd "$1" && exec "$2" prog.py' sh "$W" "$PY" 2>&1)
kill "$pid"
wait "$moat_pid"
n=$(echo "$kernel" | wc -l)
[ "$n" -ge 40 ] || skip_all "nsenter gave no answers: $(echo "$kernel" | head -3)"

plan $((n * 2))
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq "$n"); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" -- "$PY" prog.py 2>&1)
	while IFS= read -r line; do
		key=${line%% NO_XDEV=*}
		got=$(echo "$out" | grep -F -x -- "$line")
		[ -n "$got" ]
		ok $? "$mode: openat2 from $key as the kernel in the sandbox's namespace" \
			"kernel: $line
moat:   $(echo "$out" | grep -F -- "$key NO_XDEV=" | head -1)"
	done <<<"$kernel"
done
finish
