#!/usr/bin/env bash
# Invariant 1 after a CONTINUE in unnamespaced mode: there is no mount namespace, so the
# kernel opens a continued path in the host's tree, and Landlock is its only wall. A
# read-only open is continued only where Landlock's read set was carved to hold nothing
# the policy hides or denies for reading (interposer/launch/landlock.h); the fixture
# (tests/escape/vfs/toctou.c) flips the path between an allowed file and a hidden or
# denied one, and the bytes read are compared with the secret. Whatever the kernel
# reaches after the swap must be a file the policy shows, or Landlock's EACCES.
#
# Opens are continued only where the read set can be had: the default profile maps the
# host's shared /tmp (whose other entries are hidden), and a tree the sandbox writes
# may hold no hidden file; those runs stay emulated, as the report says. The control
# runs (test hooks) continue every allowed open with the read set as wide as the
# mappings, and must read the secret: that is what the carving prevents.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
: "${TOCTOU:?TOCTOU must point at the fixture (meson sets it)}"

if ! have_mode unnamespaced; then
	skip_all "moat cannot start in unnamespaced mode here"
fi
plan 14
W=$(mktemp -d "$TMP/ws.XXXXXX")
R=$(mktemp -d "$TMP/ro.XXXXXX")
mkdir "$R/sub" "$R/deep" "$R/deep/er"
echo ALLOWED >"$R/okay"
echo HIDDEN >"$R/.env"
echo ALLOWED >"$R/sub/aa"
echo HIDDEN >"$R/sub/bb"
echo ALLOWED >"$R/deep/er/xx"
echo HIDDEN >"$R/deep/er/yy"
cp "$TOCTOU" "$W/toctou"
sys=()
for d in /usr /bin /sbin /lib /lib64 /etc; do [ -e "$d" ] && sys+=(--ro-bind "$d"); done
# no shared /tmp: the run's read set can be carved
map=(--mode unnamespaced --profile none "${sys[@]}" --bind "$W" --ro-bind "$R" --chdir "$W"
	--hide '/**/.env' --deny "$R/sub/bb" --hide "$R/deep/er/yy")

race() { # race [OPTIONS...] -- ALLOWED HIDDEN N: the fixture's output line
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	(cd "$W" && "$MOAT" run -q --report "$TMP/race.json" "${opts[@]}" -- "$W/toctou" "$1" "$2" "$3" 2>&1)
}
opens() { jq -r '.features.read_only_opens // "unknown"' "$TMP/race.json" 2>/dev/null; }
clean() { echo "$1" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '; }

out=$(race "${map[@]}" -- "$R/okay" "$R/.env" 30000)
where=$(jq -r '.features.continued_opens.where // "none"' "$TMP/race.json" 2>/dev/null)
clean "$out" && [ "$(opens)" = continued ] && [ "$where" = landlock-read-set ]
ok $? "a \"**/.env\" match in a read-only mapping: continued opens never read it (opens: $(opens) in $where; $out)"
out=$(race "${map[@]}" -- "$R/sub/aa" "$R/sub/bb" 30000)
clean "$out" && [ "$(opens)" = continued ]
ok $? "a file denied by a rule: continued opens never read it (opens: $(opens); $out)"
out=$(race "${map[@]}" -- "$R/deep/er/xx" "$R/deep/er/yy" 30000)
clean "$out" && [ "$(opens)" = continued ]
ok $? "a literal hide two directories down: never read (opens: $(opens); $out)"
# the direct case, no race: the supervisor refuses, and says so with -v
err=$(cd "$W" && "$MOAT" run -v "${map[@]}" -- cat "$R/.env" "$R/sub/bb" 2>&1 >"$TMP/direct.out")
! grep -q HIDDEN "$TMP/direct.out" && grep -q "denied open.*$R/.env" <<<"$err" &&
	grep -q "denied open.*$R/sub/bb" <<<"$err"
ok $? "the direct opens fail, and -v names both (${err//$'\n'/ | })"
# a swap to a magic link of a host file the command inherited: outside the read set
# (the fixture wants paths of one length: a relative one, from the workspace)
echo HIDDEN-host-log >"$TMP/host.log"
echo ALLOWED >"$W/okay-allowed.xx"
out=$(cd "$W" && "$MOAT" run -q --report "$TMP/race.json" "${map[@]}" -- "$W/toctou" \
	okay-allowed.xx /proc/self/fd/2 30000 2>>"$TMP/host.log")
clean "$out" && [ "$(opens)" = continued ]
ok $? "a swap to /proc/self/fd/2 (a host file outside the view) never reads it (opens: $(opens); $out)"
rm "$W/okay-allowed.xx"
# what the carving must not take: files beside a hidden one, and an exec of a file the
# run made in the tree it writes
out=$(cd "$W" && "$MOAT" run -q --report "$TMP/race.json" "${map[@]}" -- sh -c \
	"cat $R/okay $R/sub/aa $R/deep/er/xx && cp /bin/true ./t && ./t && echo ran" 2>&1)
[ "$out" = "$(printf 'ALLOWED\nALLOWED\nALLOWED\nran')" ] && [ "$(opens)" = continued ]
ok $? "the allowed files beside a hidden one read, an executable the run made runs (${out//$'\n'/ })"

# A hidden file in the tree the sandbox writes: no carving there (what the run creates
# beside it could not be executed), so every open stays emulated.
echo ALLOWED >"$W/okay"
echo HIDDEN >"$W/.env"
out=$(race "${map[@]}" -- "$W/okay" "$W/.env" 30000)
clean "$out" && [ "$(opens)" = emulated ]
ok $? "a .env in the workspace: opens emulated, never read (opens: $(opens); $out)"
rm "$W/.env" "$W/okay"
# The default profile maps the host's /tmp: emulated too.
echo HIDDEN >"$W/.env"
echo ALLOWED >"$W/okay"
out=$(race --mode unnamespaced -- "$W/okay" "$W/.env" 30000)
clean "$out" && [ "$(opens)" = emulated ]
ok $? "default profile (the host's /tmp): opens emulated, the .env never read (opens: $(opens); $out)"
rm "$W/.env" "$W/okay"

# A mapping of / brings the host's device nodes and procfs beneath one rule: emulated.
out=$(race --mode unnamespaced --profile none --ro-bind / --hide "$R/.env" -- "$R/okay" "$R/.env" 30000)
clean "$out" && [ "$(opens)" = emulated ]
ok $? "--ro-bind / (the host's devices and procfs below it): opens emulated (opens: $(opens); $out)"

if ! grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
	for i in $(seq 5); do skip "control case $i" "a build without test_hooks"; done
	finish
fi
# Controls: every allowed open continued, Landlock's read set as wide as the mappings.
out=$(MOAT_TEST_SKIP_COVER=1 race "${map[@]}" -- "$R/okay" "$R/.env" 30000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: with the .env in Landlock's read set, the race reads it ($out)"
out=$(MOAT_TEST_SKIP_COVER=1 race "${map[@]}" -- "$R/sub/aa" "$R/sub/bb" 30000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: with the denied file in it, the race reads it ($out)"
out=$(MOAT_TEST_SKIP_COVER=1 race "${map[@]}" -- "$R/deep/er/xx" "$R/deep/er/yy" 30000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: with the literal hide in it, the race reads it ($out)"
# Over the reading budget: no read set, every open emulated.
out=$(MOAT_TEST_COVER_BUDGET=1 race "${map[@]}" -- "$R/okay" "$R/.env" 30000)
clean "$out" && [ "$(opens)" = emulated ]
ok $? "over the reading budget: opens emulated, the .env never read (opens: $(opens); $out)"
echo ALLOWED >"$W/okay"
echo HIDDEN >"$W/.env"
out=$(MOAT_TEST_SKIP_COVER=1 race "${map[@]}" -- "$W/okay" "$W/.env" 30000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: continued in the workspace, its .env is read ($out)"
finish
