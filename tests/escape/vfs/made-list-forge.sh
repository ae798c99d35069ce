#!/usr/bin/env bash
# A run killed before its teardown leaves the mount points it made on the host; a later
# run's sweep removes them from the list the dead run kept (vfs/store.c). That sweep runs
# as the caller, root here, and removes what a list names: a list a sandbox could write
# would let it delete empty files and directories anywhere on the host. Two walls: the
# lists live in moat's state directory, never in /tmp beside the private directory where
# a sandbox given the host's /tmp can make a lookalike; and whatever a list says, only an
# empty object of ours born within two minutes after the dead run's private directory
# goes, which no file older than a lookalike the forger made is. Checked on the host: the
# victims stay; a control list for an object made inside that window is honoured, so the
# sweep did read the lists.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 3
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
own_state_dir
W=$(mktemp -d "$TMP/ws.XXXXXX")
cd "$W" || exit 1

# "f DEV INO BTIME_NS PATH", as vfs_note_made() writes it, for an existing object
record() {
	local t=f
	[ -d "$1" ] && t=d
	printf '%s %s %s %s' "$t" "$(stat -c '%d %i' "$1")" \
		"$(date -d "$(stat -c %w "$1")" +%s%N)" "$1"
}
# a sweep: any run, once the lookalike is older than the sweep's 10 s grace
sweep() {
	touch -d '-1 min' "$1"
	timeout 60 "$MOAT" run -q -- true
}
if [ "$(stat -c %w "$W")" = - ]; then
	skip_all "this file system keeps no birth time (the sweep then undoes no list)"
fi

# 1. A sandbox given the host's /tmp makes a private-directory lookalike there, with a
# list in it naming an empty file it can see.
mkdir "$TMP/v1" && : >"$TMP/v1/empty"
rec=$(record "$TMP/v1/empty")
L1=/tmp/moat-vfs-$(head -c 64 /dev/urandom | tr -dc 'A-Za-z0-9' | head -c 6)
out=$(timeout 60 "$MOAT" run -q --bind /tmp -- sh -c \
	"mkdir '$L1' && printf '%s\\0' '$rec' > '$L1/made' && printf '%s\\0' '$rec' > '$L1/made-${L1##*/}' && echo planted" 2>&1)
sweep "$L1"
[ "$out" = planted ] && [ -e "$TMP/v1/empty" ] && [ ! -e "$L1" ]
ok $? "a list a sandbox writes beside a lookalike private directory in /tmp removes nothing (victim: $(ls "$TMP/v1" | tr "\n" " "); lookalike swept: $([ -e "$L1" ] && echo no || echo yes))" "$out"

# 2. A list in the state directory itself (as a sandbox that was given that directory
# could write), for a lookalike made now, naming an empty file and an empty directory
# born before it.
mkdir -p "$TMP/v2/dir" && : >"$TMP/v2/empty"
sleep 1.1
L2=$(mktemp -d /tmp/moat-vfs-XXXXXX)
{ printf '%s\0' "$(record "$TMP/v2/dir")"; printf '%s\0' "$(record "$TMP/v2/empty")"; } \
	>"$MOAT_COVER_CACHE/made-${L2##*/}"
out=$(sweep "$L2" 2>&1)
[ -e "$TMP/v2/empty" ] && [ -d "$TMP/v2/dir" ] && [ ! -e "$L2" ] &&
	[ ! -e "$MOAT_COVER_CACHE/made-${L2##*/}" ]
ok $? "a list in the state directory cannot name what is older than its run's private directory (victims: $(ls "$TMP/v2" | tr "\n" " "))" "$out"

# 3. Control: the same for objects made just after the lookalike, as a run's keeper makes
# its mount points, go.
L3=$(mktemp -d /tmp/moat-vfs-XXXXXX)
mkdir -p "$W/made/dir" && : >"$W/made/empty"
{ printf '%s\0' "$(record "$W/made")"; printf '%s\0' "$(record "$W/made/dir")"
  printf '%s\0' "$(record "$W/made/empty")"; } >"$MOAT_COVER_CACHE/made-${L3##*/}"
out=$(sweep "$L3" 2>&1)
[ ! -e "$W/made" ] && [ ! -e "$L3" ]
ok $? "control: a list for objects born just after its private directory is undone ($(ls -A "$W" | tr "\n" " "))" "$out"
finish
