#!/usr/bin/env bash
# The covering's records across runs (vfs/covercache.c). The keeper reads every tree a
# "**" hide glob can match in, and covers what the globs hide; a run keeps what it did
# in each settled directory (device, inode, ctime) so that the next run with the same
# policy replays it instead of reading the directory again. A hidden file that appears
# after the records were made must still be covered: in a recorded directory, in a new
# directory below one, in a directory that a mount replaced without its parent changing,
# under a policy other than the recording one, and with records someone rewrote. The
# control run (MOAT_TEST_COVER_CACHE_TRUST=1, test_hooks builds) trusts a record without
# checking the directory against it, and must read the secret the checks keep out.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 11
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
own_state_dir
W=$(mktemp -d "$TMP/ws.XXXXXX")
cd "$W" || exit 1
SECRET="moat-secret-$RANDOM$RANDOM"
# 1 200 entries (records are kept for walks of 1 000 or more), a hidden .env deep inside
for p in $(seq 40); do
	mkdir -p "$W/m/p$p/lib"
	for f in $(seq 30); do : >"$W/m/p$p/lib/f$f.js"; done
done
printf '%s\n' "$SECRET" >"$W/m/p7/lib/.env"
printf 'custom-%s\n' "$SECRET" >"$W/m/p8/lib/x.custom"
# The records keep only directories whose ctime is 2 s older than the run's start.
sleep 3

# run ARGS... -- CMD: moat run -v ARGS; sets out (stdout and stderr) and rc
run() {
	out=$(timeout 60 "$MOAT" run -v "$@" 2>&1)
	rc=$?
}
# recorded N: the -v line says N directories came from the records
recorded() { grep -q "covering: $1 directories as recorded" <<<"$out"; }
files() { find "$MOAT_COVER_CACHE" -name 'cover-*' -type f | wc -l; }
# covered: the run went and the cat of a hidden file was refused, without its secret
covered() { grep -q 'denied openat' <<<"$out" && ! grep -qF "$SECRET" <<<"$out"; }

run -- cat m/p7/lib/.env
[ "$(files)" = 1 ] && recorded 0 && covered
ok $? "the first run reads every directory and keeps its records (files: $(files))" "$out"

run -- cat m/p7/lib/.env
n=$(sed -n 's/.*covering: \([0-9]*\) directories as recorded.*/\1/p' <<<"$out")
[ "${n:-0}" -ge 80 ] && covered
ok $? "the second replays them (${n:-none} directories as recorded) and the recorded .env is still covered" "$out"

# A .env written into a recorded directory: its ctime moves, it is read again.
printf '%s\n' "$SECRET" >"$W/m/p3/lib/.env"
run -- cat m/p3/lib/.env
[ -s "$W/m/p3/lib/.env" ] && covered
ok $? "a .env added to a recorded directory is covered (rc $rc)" "$out"

mkdir "$W/m/p4/new"
printf '%s\n' "$SECRET" >"$W/m/p4/new/.env"
run -- cat m/p4/new/.env
covered
ok $? "a .env in a new directory below a recorded one is covered (rc $rc)" "$out"

# A mount over a recorded directory changes nothing in its parent's ctime: the
# directory's own device and inode are checked.
mkdir -p "$TMP/other"
printf '%s\n' "$SECRET" >"$TMP/other/.env"
run_over() {
	out=$(unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec timeout 60 "$@"' sh \
		"$TMP/other" "$W/m/p5/lib" "$MOAT" run -v "$@" 2>&1)
	rc=$?
}
if ! unshare -m true 2>/dev/null; then
	skip "a directory replaced by a mount" "unshare -m is not available here"
	skip "its control" "unshare -m is not available here"
else
	# The control first (it keeps the record the checked run then meets): trusting the
	# record without checking the directory, the mounted .env is read.
	if grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
		MOAT_TEST_COVER_CACHE_TRUST=1 run_over -- cat m/p5/lib/.env
		grep -qF "$SECRET" <<<"$out"
		ok $? "control: a record trusted unchecked leaves the mounted .env readable" "$out"
	else
		skip "control: a record trusted unchecked" "a build without test_hooks"
	fi
	run_over -- cat m/p5/lib/.env
	[ $rc -ne 0 ] && covered && grep -q "covering:" <<<"$out"
	ok $? "a directory replaced by a mount, its parent unchanged: what it shows is covered (rc $rc)" "$out"
fi

# Another policy: its own records, never those of this one (whose records do not cover
# x.custom: the default policy shows it).
run -- cat m/p8/lib/x.custom
shown=$out
run --hide '**/*.custom' -- cat m/p8/lib/x.custom
grep -qF "custom-$SECRET" <<<"$shown" && covered &&
	[ "$(files)" = 2 ]
ok $? "a policy with one more hide glob does not use the other's records: x.custom is covered (files: $(files))" "$shown
$out"

# Records rewritten by someone else do not check: they are not used at all.
for f in "$MOAT_COVER_CACHE"/cover-*; do
	/usr/bin/python3 - "$f" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) // 2] ^= 0xff
open(p, 'wb').write(bytes(b))
EOF
done
run -- cat m/p7/lib/.env
recorded 0 && covered
ok $? "records with a changed byte are not used (the walk reads everything again)" "$out"

# Where the sandbox could see or change them, no records are kept or read.
chmod 755 "$MOAT_COVER_CACHE"
run -- true
! grep -q "covering: .* as recorded" <<<"$out" && grep -q "no records kept" <<<"$out"
ok $? "a records directory others can read is not used" "$out"
chmod 700 "$MOAT_COVER_CACHE"
run --ro-bind "$TMP:/mnt/t" -- true
! grep -q "covering: .* as recorded" <<<"$out" && grep -q "no records kept (the sandbox would see" <<<"$out"
ok $? "nor one a mapping shows the sandbox (here: its parent, read-only)" "$out"

# At most 64 files are kept, the least recently written go; a half-written one left by
# a killed run goes after an hour.
for i in $(seq 70); do
	f=$(printf 'cover-%032x' "$i")
	: >"$MOAT_COVER_CACHE/$f"
	touch -d "2 days ago" "$MOAT_COVER_CACHE/$f"
done
: >"$MOAT_COVER_CACHE/cover-stale.123.tmp"
touch -d "2 hours ago" "$MOAT_COVER_CACHE/cover-stale.123.tmp"
run --hide '**/*.zzz' -- true
n=$(find "$MOAT_COVER_CACHE" -name 'cover-*' -type f | wc -l)
[ "$n" = 64 ] && [ ! -e "$MOAT_COVER_CACHE/cover-stale.123.tmp" ] &&
	[ -n "$(find "$MOAT_COVER_CACHE" -name 'cover-*' -newer "$W/m/p1" -size +1k)" ]
ok $? "the records directory keeps 64 files, this run's among them (files: $n)" "$out"
finish
