#!/usr/bin/env bash
# The Go standard library's own tests of os, os/exec, io/fs, path/filepath and syscall
# (Debian's golang-go ships them; they run offline), natively and under moat (the
# default profile, namespaced and unnamespaced). The Go runtime is a demanding
# multi-threaded client of exec, signals, /proc and files. Every test's outcome (pass,
# fail, skip) must be the same as natively, or the difference is listed below, with
# the rule that causes it: a policy decision passes; a known gap of moat (not policy)
# is a TAP TODO while it differs, so that it stays visible.
#   MOAT=build/moat MOAT_SRC=. tests/compat/go-stdlib.sh [PACKAGE...]
# Time: the test binaries are first built natively into a cache of this run's own
# (about a minute of CPU; bounded by BUILD_LIMIT), which every run then reuses; each
# run is bounded by RUN_LIMIT.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

command -v go >/dev/null || skip_all "go is not installed (apt-get install golang-go)"
command -v python3 >/dev/null || skip_all "python3 is needed to read go test -json"
pkgs=("$@"); [ ${#pkgs[@]} -eq 0 ] && pkgs=(os os/exec io/fs path/filepath syscall)
BUILD_LIMIT=${BUILD_LIMIT:-300} RUN_LIMIT=${RUN_LIMIT:-180}
ENVPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$TMP/ws" "$TMP/home"; cd "$TMP/ws" || exit 1
# no test result cache, a build cache of this run's own, never the network
export GOFLAGS=-count=1 GOCACHE=$TMP/ws/.gocache GOPROXY=off GOTELEMETRY=off

# The differences that are not moat's to remove, as "MODE PACKAGE TEST|KIND|RULE: why"
# (MODE: both, namespaced or unnamespaced; KIND: policy, or gap for a known moat gap).
DIFFS='
both os TestMkdirAllAtSlash|policy|default profile: / is read-only (only the workspace, /tmp, /dev/shm and the home are writable); mkdir /_go_os_test gets EROFS and the test skips
both syscall TestUnshareMountNameSpace|policy|syscalls.csv unshare: deny EPERM (namespace changes would escape or confuse the supervisor'"'"'s view); natively the test runs as root (or skips in a container: /.dockerenv)
both syscall TestUnshareMountNameSpaceChroot|policy|syscalls.csv unshare: deny EPERM, as above
unnamespaced syscall TestSetuidEtc|policy|unnamespaced mode drops every capability (README, Modes): root cannot change ids or groups
unnamespaced syscall TestGroupCleanup|policy|unnamespaced mode drops every capability: a child with Credential (setgroups/setuid) gets EPERM
unnamespaced syscall TestDeathSignal|policy|unnamespaced mode drops every capability: the child that becomes uid 99 gets EPERM
unnamespaced os/exec TestExtraFiles|policy|default profile: no network; unnamespaced there is no empty network namespace of its own, so bind(127.0.0.1) is refused (namespaced, loopback is the sandbox'"'"'s own)
unnamespaced os/exec TestExtraFilesRace|policy|default profile: no network, as above
'

# run_go LABEL CMD...: go test -json of the packages into $TMP/LABEL.json
run_go() {
	local label=$1; shift
	timeout "$RUN_LIMIT" "$@" go test -json "${pkgs[@]}" </dev/null >"$TMP/$label.json" 2>"$TMP/$label.err"
	echo $? >"$TMP/$label.rc"
}

# compare MODE: one TAP line per package, against the native run
compare() {
	python3 - "$1" "$TMP/native.json" "$TMP/$1.json" "$DIFFS" "${pkgs[@]}" <<'PY'
import json, sys
mode, native_f, moat_f, diffs_s, pkgs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]

def results(f):
    r, out = {}, {}
    for line in open(f, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        t = e.get("Test")
        if not t:
            continue
        key = (e.get("Package"), t)
        if e["Action"] in ("pass", "fail", "skip"):
            r[key] = e["Action"]
        elif e["Action"] == "output":
            out.setdefault(key, []).append(e.get("Output", ""))
    return r, out

listed = {}
for l in diffs_s.strip().splitlines():
    head, kind, why = l.split("|", 2)
    m, p, t = head.split()
    if m in ("both", mode):
        listed[(p, t)] = (kind, why)

nat, _ = results(native_f)
moat, mout = results(moat_f)
for p in pkgs:
    def counts(r):
        v = [a for (q, _), a in r.items() if q == p]
        return "%d run, %d passed, %d failed, %d skipped" % (
            len(v), v.count("pass"), v.count("fail"), v.count("skip"))
    tests = sorted({t for (q, t) in list(nat) + list(moat) if q == p})
    policy, gaps, bad = [], [], []
    for t in tests:
        a, b = nat.get((p, t), "absent"), moat.get((p, t), "absent")
        if a == b:
            continue
        kind, why = listed.get((p, t), (None, None))
        line = "%s: native %s, moat %s" % (t, a, b)
        if kind == "policy":
            policy.append(line + " -- " + why)
        elif kind == "gap":
            gaps.append(line + " -- " + why)
        else:
            tail = "".join(mout.get((p, t), []))[-600:]
            bad.append(line + "\n" + tail)
    name = "go test %s [%s]: %s (native %s)" % (p, mode, counts(moat), counts(nat))
    if not [k for k in nat if k[0] == p]:
        print("not ok - %s: no test ran natively" % name)
    elif bad:
        print("not ok - %s" % name)
        for l in bad + gaps:
            for x in l.splitlines():
                print("# " + x)
    elif gaps:
        print("not ok - %s # TODO %d known gap(s) of moat" % (name, len(gaps)))
        for l in gaps + policy:
            print("# " + l)
    else:
        print("ok - %s%s" % (name, "; differs by policy only" if policy else ""))
        for l in policy:
            print("# " + l)
PY
}

modes=(namespaced unnamespaced)
plan $(( ${#pkgs[@]} * ${#modes[@]} ))

# the build first, with no test run ('^$' matches no name), so that no run's time
# limit is spent compiling
t0=$SECONDS
timeout "$BUILD_LIMIT" go test -run '^$' "${pkgs[@]}" </dev/null >"$TMP/build.out" 2>&1 ||
	{ echo "Bail out! go test could not build the tests in $BUILD_LIMIT s: $(tail -c 600 "$TMP/build.out")"; exit 1; }
echo "# build: $((SECONDS - t0)) s"

# natively: the environment moat gives, and no fd of this script's beyond 0-2 (the
# os/exec tests skip when they find others)
t0=$SECONDS
run_go native env -i PATH=$ENVPATH HOME=$TMP/home LANG=C.UTF-8 TMPDIR=/tmp GOFLAGS=$GOFLAGS \
	GOCACHE=$GOCACHE GOPROXY=off GOTELEMETRY=off \
	python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])'
echo "# native: $((SECONDS - t0)) s, exit $(cat "$TMP/native.rc")"
[ "$(cat "$TMP/native.rc")" = 124 ] && { echo "Bail out! the native run did not end in $RUN_LIMIT s"; exit 1; }

for mode in "${modes[@]}"; do
	if ! have_mode $mode; then
		for p in "${pkgs[@]}"; do skip "go test $p [$mode]" "moat cannot start in $mode mode here"; done
		continue
	fi
	t0=$SECONDS
	run_go $mode "$MOAT" run -q --mode $mode --setenv GOFLAGS "$GOFLAGS" --setenv GOCACHE "$GOCACHE" \
		--setenv GOPROXY off --setenv GOTELEMETRY off --
	echo "# $mode: $((SECONDS - t0)) s, exit $(cat "$TMP/$mode.rc")"
	if [ "$(cat "$TMP/$mode.rc")" = 124 ]; then
		for p in "${pkgs[@]}"; do fail "go test $p [$mode]" "stopped after $RUN_LIMIT s"; done
		continue
	fi
	while IFS= read -r l; do
		case $l in
		"not ok - "*) _tap_n=$((_tap_n + 1)); echo "not ok $_tap_n - ${l#not ok - }"
			case $l in *"# TODO"*) ;; *) _tap_failed=$((_tap_failed + 1)) ;; esac ;;
		"ok - "*) _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - ${l#ok - }" ;;
		*) echo "$l" ;;
		esac
	done < <(compare $mode)
done
finish
