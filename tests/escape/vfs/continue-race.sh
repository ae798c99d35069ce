#!/usr/bin/env bash
# Invariant 1 after a CONTINUE: namespaced mode answers an allowed read-only open with
# SECCOMP_USER_NOTIF_FLAG_CONTINUE, and the kernel then reads the path from the
# caller's memory again. tests/escape/vfs/toctou.c flips that path between an allowed
# file and a hidden one; whatever the kernel opens after the swap must hold nothing
# hidden, because the mount namespace covers every hidden or read-denied path with an
# empty stub. The bytes read are compared with the secret itself.
#
# Opens are continued once the covering has read every tree a "**" glob can match in
# (vfs/cover.c): the workspace, tmpfs, the home and read-only mappings; the default
# profile's system trees are out of the globs' reach (a "system" mapping). Most cases
# run without a profile, the rules anchored in the workspace; the default profile's own
# "**/.env" is raced in the workspace and in a --ro-bind mapping, with and without
# --audit, and with a covering over its budget (opens must then stay emulated).
#
# Started by root, read-only opens do not even reach the supervisor (the fanotify marks
# on the stubs report an open of one, stubwatch.h): the swap then meets the kernel's own
# walk, and the same covering is the only guard. The cases below that run without
# --audit check that path (the report says which one ran); MOAT_TEST_NO_FANOTIFY runs
# the continued opens a run started by another user gets.
#
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
: "${TOCTOU:?TOCTOU must point at the fixture (meson sets it)}"

plan 24
mkdir "$TMP/cwd"
W=$(mktemp -d "$TMP/ws.XXXXXX")
echo ALLOWED >"$W/okay"
echo HIDDEN >"$W/hush"
mkdir "$W/deep"
echo ALLOWED >"$W/deep/a.txt"
echo HIDDEN >"$W/deep/k.pem"   # not hidden by the default profile: the rule below does
cp "$TOCTOU" "$W/toctou"
# the fixture is a dynamic executable: the system trees, read-only
sys=()
for d in /usr /bin /lib /lib64; do [ -e "$d" ] && sys+=(--ro-bind "$d"); done
map=(--profile none "${sys[@]}" --bind "$W:/workspace" --chdir /workspace)

if ! have_mode namespaced; then
	for i in $(seq 24); do skip "namespaced case $i" "moat cannot start in namespaced mode here"; done
	finish
fi

race() { # race RULES... -- ALLOWED HIDDEN N [rw|path]: the fixture's output line
	local rules=() out
	while [ "$1" != -- ]; do rules+=("$1"); shift; done
	shift
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --report "$TMP/race.json" "${map[@]}" "${rules[@]}" -- \
		/workspace/toctou "$@" 2>&1)
	echo "$out"
}
# how the last race() handled read-only opens: native, continued or emulated
opens() { jq -r '.features.read_only_opens // "unknown"' "$TMP/race.json" 2>/dev/null; }

# No audit, every "**" anchored where the sandbox writes: read-only opens are continued.
for rule in "--hide=/workspace/**/hush" "--deny=/workspace/**/hush" "--hide=/workspace/hush"; do
	out=$(race "$rule" -- /workspace/okay /workspace/hush 50000)
	echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
	ok $? "namespaced, $rule: 50000 racing opens never read the hidden bytes ($out)"
done

out=$(race "--hide=/workspace/**/k.pem" -- /workspace/deep/a.txt /workspace/deep/k.pem 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced, a glob match in a subdirectory is covered too ($out)"

# O_PATH opens are checked, then continued too (moat could hand over no O_PATH fd): a
# swap reaches at most a stub, unseen by its fanotify mark, and each fd is then opened
# for reading through /proc/self/fd/N, which meets the stub's refusal.
out=$(race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000 path)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced: 50000 racing O_PATH opens, each read through /proc/self/fd, never read the hidden bytes ($out)"

# A magic link to a host file outside the view: the command's stderr, a host log the
# sandbox may write but whose content is not in the view (the same length as
# /workspace/okay). The supervisor refuses the path; after a swap the kernel follows
# the link, and Landlock (no rule covers the host file) must refuse it.
echo HIDDEN-host-log >"$TMP/host.log"
out=$(cd "$TMP/cwd" && "$MOAT" run -q "${map[@]}" -- /workspace/toctou /workspace/okay \
	/proc/self/fd/2 50000 2>>"$TMP/host.log")
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced: a swap to /proc/self/fd/2 (a host file outside the view) never reads it ($out)"

out=$(race --strict-hide "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced --strict-hide (every open emulated): never the hidden bytes ($out)"

# The default profile's "**/.env", a match in a read-only mapping: the covering reads
# the mapping wholly, so opens are continued and the match is covered.
R=$(mktemp -d "$TMP/ro.XXXXXX")
echo ALLOWED >"$R/okay"
echo HIDDEN >"$R/.env"
echo HIDDEN >"$W/.env"
dflt() { # dflt [OPTIONS...] -- ALLOWED HIDDEN N [rw], under the default profile
	local opts=() out
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --bind "$W:/workspace" --ro-bind "$R:/ro" \
		"${opts[@]}" -- /workspace/toctou "$@" 2>&1)
	echo "$out"
}
out=$(dflt -- /ro/okay /ro/.env 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced, default profile: a \"**/.env\" match in a read-only mapping is never read ($out)"
out=$(dflt -- /workspace/okay /workspace/.env 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced, default profile: a .env in the workspace is never read ($out)"
out=$(dflt --audit "$TMP/race.audit" -- /workspace/okay /workspace/.env 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "namespaced, default profile, --audit (opens continued too): the .env is never read ($out)"
# --audit continues write opens as well (nothing else asks for moat's own creates):
# an O_RDWR open swapped to the .env meets its stub, a read-only bind.
out=$(dflt --audit "$TMP/race.audit" -- /workspace/okay /workspace/.env 50000 rw)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 ' && grep -qx HIDDEN "$W/.env"
ok $? "namespaced, default profile, --audit, O_RDWR opens continued: the .env is neither read nor changed ($out)"

# Native read-only opens (root: fanotify marks on the stubs): the kernel walks the
# swapped path itself, with no check before; the covered namespace is all there is.
if [ "$(id -u)" -eq 0 ] && [ -z "${MOAT_TEST_NO_FANOTIFY:-}" ]; then
	out=$(race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
	echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 ' && [ "$(opens)" = native ]
	ok $? "native read-only opens: 50000 racing opens never read the hidden bytes (opens: $(opens); $out)"
else
	skip "native read-only opens race" "fanotify permission events need root (and no MOAT_TEST_NO_FANOTIFY)"
fi

if ! grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
	for i in $(seq 12); do skip "control or budget case $i" "a build without test_hooks"; done
	finish
fi
# The continued opens of a run without the marks (as started by another user).
out=$(MOAT_TEST_NO_FANOTIFY=1 race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 ' && [ "$(opens)" = continued ]
ok $? "continued read-only opens (no fanotify): the hidden bytes are never read (opens: $(opens); $out)"
# (the default profile: moat decides the reopen, and its view has /proc)
out=$(MOAT_TEST_NO_FANOTIFY=1 dflt --report "$TMP/race.json" -- /workspace/okay /workspace/.env 50000 path)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 ' && [ "$(opens)" = continued ]
ok $? "continued O_PATH opens (no fanotify), read through /proc/self/fd: never the hidden bytes (opens: $(opens); $out)"
out=$(MOAT_TEST_NO_FANOTIFY=1 MOAT_TEST_SKIP_COVER=1 race "--hide=/workspace/**/hush" -- \
	/workspace/okay /workspace/hush 50000)
echo "$out" | grep -qE 'hidden=[1-9]' && [ "$(opens)" = continued ]
ok $? "control: continued opens without the covering read the secret (opens: $(opens); $out)"
if [ "$(id -u)" -eq 0 ] && [ -z "${MOAT_TEST_NO_FANOTIFY:-}" ]; then
	out=$(MOAT_TEST_SKIP_COVER=1 race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
	echo "$out" | grep -qE 'hidden=[1-9]' && [ "$(opens)" = native ]
	ok $? "control: native opens without the covering read the secret (opens: $(opens); $out)"
else
	skip "control: native opens without the covering" "fanotify permission events need root (and no MOAT_TEST_NO_FANOTIFY)"
fi
out=$(MOAT_TEST_SKIP_COVER=1 race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: without the covering the race reads the secret after a CONTINUE ($out)"
# what a continued O_PATH open reaches after a swap is the kernel's view alone: without
# the covering, its fd reopened where read-only opens are native reads the secret
if [ "$(id -u)" -eq 0 ] && [ -z "${MOAT_TEST_NO_FANOTIFY:-}" ]; then
	out=$(MOAT_TEST_SKIP_COVER=1 race "--hide=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000 path)
	echo "$out" | grep -qE 'hidden=[1-9]' && [ "$(opens)" = native ]
	ok $? "control: continued O_PATH opens without the covering reach the secret (opens: $(opens); $out)"
else
	skip "control: continued O_PATH opens without the covering" "fanotify permission events need root (and no MOAT_TEST_NO_FANOTIFY)"
fi
out=$(MOAT_TEST_SKIP_COVER=1 race "--deny=/workspace/**/hush" -- /workspace/okay /workspace/hush 50000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: without the covering, a denied glob match is read too ($out)"

# The default profile's cases: without the covering, a continued open reaches the
# secret, in the workspace, in a read-only mapping and under --audit.
out=$(MOAT_TEST_SKIP_COVER=1 dflt -- /workspace/okay /workspace/.env 50000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: default profile, without the covering the workspace's .env is read ($out)"
out=$(MOAT_TEST_SKIP_COVER=1 dflt -- /ro/okay /ro/.env 50000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: default profile, without the covering the read-only mapping's .env is read ($out)"
out=$(MOAT_TEST_SKIP_COVER=1 dflt --audit "$TMP/race2.audit" -- /workspace/okay /workspace/.env 50000)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: --audit continues opens, and without the covering the .env is read ($out)"
# (Started by root, --audit records native opens from the kernel and then opens an
# existing file for writing itself: the trapped path of a run without fanotify is the
# one that continues O_RDWR opens.)
out=$(MOAT_TEST_NO_FANOTIFY=1 MOAT_TEST_SKIP_COVER=1 dflt --audit "$TMP/race2.audit" -- /workspace/okay /workspace/.env 50000 rw)
echo "$out" | grep -qE 'hidden=[1-9]'
ok $? "control: --audit continues O_RDWR opens, and without the covering the .env is read ($out)"
# A covering over its budget stops early and leaves matches uncovered: every call by
# name goes back to the supervisor then, and the race finds nothing.
out=$(MOAT_TEST_COVER_BUDGET=1 dflt -- /ro/okay /ro/.env 50000)
echo "$out" | grep -qE '^allowed=[1-9][0-9]* hidden=0 '
ok $? "default profile, covering over its budget: opens emulated, the .env is never read ($out)"
finish
