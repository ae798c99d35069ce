#!/usr/bin/env bash
# --audit with read-only opens native (root-started, namespaced, nothing else asking for
# moat's own creates): the program's opens are not trapped, and each is recorded from the
# kernel's open event on the sandbox's mounts. Every file the program opened must be in
# the stream by the object's virtual path (decision native, its rule), every hidden one
# as a denial with the errno the program got, a file it created and wrote as the
# create moat made (once, not again as a native open), and nothing it did
# not open. Checked on the stream file, against the list the program printed.
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
plan 9

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
[ "$(id -u)" -eq 0 ] || skip_all "native opens under --audit need moat started by root (fanotify)"

mkdir -p tree/sub
for i in $(seq 500); do echo "file $i" >"tree/sub/f$i.txt"; done
for i in 1 2 3; do echo "moat-secret-$i-$RANDOM" >"tree/k$i.env"; done
echo never >tree/untouched.txt
echo ro >tree/ro.txt; chmod 0444 tree/ro.txt
echo last >tree/last.txt
cat >probe.py <<'PYEOF'
import os
opened = []
for i in range(1, 501):
    p = "tree/sub/f%d.txt" % i
    with open(p) as f:
        f.read()
    if i % 50 == 0:  # some twice
        with open(p) as f:
            f.read()
    opened.append(p)
for i in (1, 2, 3):
    try:
        open("tree/k%d.env" % i).read()
        print("READ-HIDDEN", i)
    except OSError as e:
        print("DENIED", i, e.errno)
with open("made.txt", "w") as f:
    f.write("x")
# as sqlite does: a write open refused by the file's mode (a capless root), then a read
try:
    os.close(os.open("tree/ro.txt", os.O_RDWR))
    print("RO-WRITABLE")
except OSError as e:
    print("RO-RDWR", e.errno)
with open("tree/ro.txt") as f:
    f.read()
print("OPENED", len(opened))
# the last thing before the exit: its event may still be queued at teardown
open("tree/last.txt").read()
PYEOF

out=$(timeout 120 "$MOAT" run -q --output-in-workspace --hide '**/*.env' --audit n.moat -- \
	"$PY" probe.py 2>&1)
rc=$?
"$MOAT" audit dump --json n.moat >n.json 2>/dev/null
hdr=$(jq -r 'select(.type=="hdr") | .features[] | select(.name=="native_opens_from_fanotify") | .present' n.json)
[ $rc -eq 0 ] && grep -qx "OPENED 500" <<<"$out" && ! grep -q READ-HIDDEN <<<"$out" && [ "$hdr" = true ]
ok $? "the program ran, read no hidden file, and the header says opens are recorded from the kernel ($hdr)" "rc $rc: $out"

sys() { jq -c 'select(.type=="sys")' n.json; }
native=$(sys | jq -r 'select(.syscall=="openat" and .decision=="native") | .resolved' | sort -u)
missing=0
for i in $(seq 500); do
	grep -qx "$WORK/tree/sub/f$i.txt" <<<"$native" || missing=$((missing + 1))
done
[ $missing -eq 0 ]
ok $? "all 500 files the program opened are in the stream by their virtual path ($missing missing)" \
	"$(head -5 <<<"$native")"

rules=$(sys | jq -r "select(.decision==\"native\" and .resolved==\"$WORK/tree/sub/f7.txt\") | .rule" | sort -u)
[ "$rules" = "bind $WORK (default profile)" ]
ok $? "a native open names the rule it falls under ($rules)" "$rules"

! grep -q "untouched.txt" n.json
ok $? "a file the program did not open is not in the stream"

denied=$(sys | jq -r 'select(.decision=="denied" and (.resolved // "" | test("/tree/k[123].env$"))) | "\(.resolved) \(.errno)"' | sort -u)
n_denied=$(grep -c . <<<"$denied")
errnos=$(grep '^DENIED' <<<"$out" | awk '{print $3}' | sort -u)
[ "$n_denied" -eq 3 ] && [ "$(awk '{print $2}' <<<"$denied" | sort -u)" = "$errnos" ]
ok $? "each hidden file's denied open is in the stream with the errno the program got ($errnos)" "$denied"

made=$(sys | jq -c "select(.resolved==\"$WORK/made.txt\")")
[ "$(grep -c . <<<"$made")" -eq 1 ] && grep -q '"decision":"emulated"' <<<"$made"
ok $? "the create of made.txt is recorded once, as the create moat made (not again as a native open)" "$made"

ro=$(sys | jq -c "select(.resolved==\"$WORK/tree/ro.txt\")")
grep -q 'RO-RDWR 13' <<<"$out" && grep -q '"decision":"native"' <<<"$ro"
ok $? "a read after a refused write open of the same file is recorded (not taken for the write's event)" \
	"$(grep '^RO' <<<"$out"); $ro"

last=$(sys | jq -r 'select(.decision=="native") | .resolved' | grep 'last.txt$')
[ "$last" = "$WORK/tree/last.txt" ]
ok $? "the open right before the exit is recorded with its virtual path ($last)"

# the records of native opens name the sandbox's pid and the thread's comm
# (jq 1.6's -e looks at the last input only: count the matches instead)
[ -n "$(sys | jq -c "select(.decision==\"native\" and .resolved==\"$WORK/tree/sub/f1.txt\" and .sandbox_pid > 0 and .comm == \"python3\")")" ]
ok $? "a native open's record names the sandbox's pid and the program" \
	"$(sys | jq -c "select(.resolved==\"$WORK/tree/sub/f1.txt\")")"
finish
