#!/usr/bin/env bash
# A hidden name that is a symlink on the host (a workspace .env pointing into a secrets
# directory) cannot be covered: a bind mount onto a symlink follows it
# (spawn.c cover_path()). Reads through it are decided by the target's own path
# (docs/threat-model.md), but the link itself is a name the policy hides, which the
# sandbox must not remove or replace: moat's own check refuses an unlink of it. Where
# the kernel decides removals instead (native creates, plain run) or performs them after
# moat's check (--audit continues them), nothing in the view stops the unlink of a link
# that is no mount point, and the sandbox then puts a file of its own at the hidden name,
# which the host reads later. So where the covering meets a hidden symlink, removals and
# creates stay with moat (spawn.c, SPAWN_COVER_LINKS). Each case checks the host's link
# after the run; cases 2 and 3 failed before.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

plan 5
W=$(mktemp -d "$TMP/ws.XXXXXX")
S=$(mktemp -d "$TMP/secrets.XXXXXX")
echo SECRET >"$S/env"
reset_link() { rm -rf "$W/.env" "$W/lnk" "$W/d" "$W/dreal" "$W/dsym"; ln -s "$S/env" "$W/.env"; ln -s "$S/env" "$W/lnk"; }
intact() { [ -L "$W/$1" ] && [ "$(readlink "$W/$1")" = "$S/env" ]; }

# 1. Control: moat performs the removal (--report asks for the change set): refused.
reset_link
out=$( (cd "$W" && "$MOAT" run -q --mode namespaced --report "$TMP/r.json" -- \
	sh -c 'rm -f .env; echo planted > .env') 2>&1)
intact .env
ok $? "control, removals by moat: the hidden .env symlink stays" "$out"

# 2. A plain run started by root: removals and creates are native.
reset_link
if [ "$(id -u)" -ne 0 ]; then
	skip "native removal of a hidden symlink" "native creates need moat started by root"
else
	out=$( (cd "$W" && "$MOAT" run -q --mode namespaced -- \
		sh -c 'rm -f .env; echo planted > .env') 2>&1)
	intact .env
	ok $? "native creates: the hidden .env symlink is neither removed nor replaced" "$out"
	echo "# host .env after the run: $(ls -l "$W/.env" 2>&1)"
fi

# 3. --audit continues an allowed unlink: the kernel walks the path again, and a parent
# swapped to a symlink meanwhile makes it the hidden link. The racer swaps d between its
# own directory (holding a file lnk) and a symlink to the workspace, and unlinks d/lnk.
reset_link
racer='
import os, threading, time
stop = time.time() + 8
def swap():
    while time.time() < stop:
        for a, b in (("d", "dreal"), ("dsym", "d"), ("d", "dsym"), ("dreal", "d")):
            try: os.rename(a, b)
            except OSError: pass
os.mkdir("d"); os.symlink(".", "dsym")
t = threading.Thread(target=swap); t.start()
while time.time() < stop:
    try:
        if os.path.isdir("d") and not os.path.islink("d"):
            open("d/lnk", "w").close()
        os.unlink("d/lnk")
    except OSError: pass
t.join()
'
out=$( (cd "$W" && "$MOAT" run -q --mode namespaced --hide "$W/lnk" --audit "$TMP/a.moat" -- \
	"$PY" -c "$racer") 2>&1)
intact lnk
ok $? "--audit, continued unlinks raced with a swapped parent: the hidden lnk symlink stays" "$out"
echo "# host lnk after the run: $(ls -l "$W/lnk" 2>&1)"

# 4. The same race with removals performed by moat (--report): the link stays.
reset_link
out=$( (cd "$W" && "$MOAT" run -q --mode namespaced --hide "$W/lnk" --report "$TMP/r.json" -- \
	"$PY" -c "$racer") 2>&1)
intact lnk
ok $? "control, removals by moat under the same race: the hidden lnk symlink stays" "$out"

# 5. A hidden symlink in a read-only mapping is refused by its mount (EROFS): creates
# stay native there (the witness: a new file may take a hidden name natively, which
# moat's own check refuses).
if [ "$(id -u)" -ne 0 ]; then
	skip "a hidden symlink in a read-only mapping keeps native creates" "native creates need moat started by root"
else
	rm -rf "$W/.env" "$W/lnk" "$W/new"
	R=$(mktemp -d "$TMP/ro.XXXXXX")
	ln -s "$S/env" "$R/.env"
	out=$( (cd "$W" && "$MOAT" run -q --mode namespaced --ro-bind "$R" -- \
		sh -c "rm -f $R/.env; mkdir new && echo own > new/.env") 2>&1)
	[ -L "$R/.env" ] && [ "$(cat "$W/new/.env" 2>/dev/null)" = own ]
	ok $? "a hidden symlink in a read-only mapping stays, and creates stay native" "$out"
fi
finish
