#!/usr/bin/env bash
# Issue 3 acceptance: writing outside the workspace fails with EROFS or EACCES and the
# host file is really unchanged (hashed from outside before and after); writing inside
# succeeds and appears in --report with the sha256 that sha256sum computes on the host.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 16
command -v python3 >/dev/null || skip_all "python3 is needed on the host"

# errno_of MODE OP PATH: the errno name a Python os call gets inside the sandbox, or OK.
PROBE='
import errno, os, sys
op, p = sys.argv[1], sys.argv[2]
try:
    if op == "write": os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))
    elif op == "append": os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
    elif op == "create": os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
    elif op == "unlink": os.unlink(p)
    elif op == "rename": os.rename(p, p + ".moved")
    elif op == "chmod": os.chmod(p, 0o777)
    elif op == "truncate": os.truncate(p, 0)
    elif op == "utime": os.utime(p, (0, 0))
    elif op == "futimens": os.utime(os.open(p, os.O_RDONLY), (0, 0))
    elif op == "fchmod": os.fchmod(os.open(p, os.O_RDONLY), 0o777)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
'

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 8); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	# A read-only bound host directory with a file in it, and a workspace (the cwd).
	RO=$(mktemp -d "$TMP/ro.XXXXXX"); echo "original $RANDOM" >"$RO/keep.txt"
	W=$(mktemp -d "$TMP/ws.XXXXXX")
	before=$(cd "$RO" && ls -la --time-style=full-iso . && sha256sum keep.txt)

	bad=""
	for op in write append create unlink rename chmod truncate utime futimens fchmod; do
		target="$RO/keep.txt"; [ $op = create ] && target="$RO/new.txt"
		got=$(cd "$W" && "$MOAT" run -q --mode "$mode" --ro-bind "$RO" -- \
			python3 -c "$PROBE" "$op" "$target" 2>&1)
		case "$got" in EROFS|EACCES) ;; *) bad="$bad $op:$got" ;; esac
	done
	[ -z "$bad" ]; ok $? "$mode: write/append/create/unlink/rename/chmod/truncate/utime, and futimens and fchmod of an fd opened read-only, in a ro-bind get EROFS or EACCES" "$bad"
	after=$(cd "$RO" && ls -la --time-style=full-iso . && sha256sum keep.txt)
	[ "$before" = "$after" ]; ok $? "$mode: the ro-bound host directory is unchanged (listing, times, sha256)" \
		"$(diff <(echo "$before") <(echo "$after"))"

	# System directories of the default profile are read-only too.
	(cd "$W" && "$MOAT" run -q --mode "$mode" -- sh -c 'echo x > /etc/moat-probe; echo x > /usr/moat-probe' 2>/dev/null)
	[ ! -e /etc/moat-probe ] && [ ! -e /usr/moat-probe ]
	ok $? "$mode: /etc and /usr of the default profile cannot be written"
	rm -f /etc/moat-probe /usr/moat-probe

	# Writes in the workspace: created, overwritten, in a new subdirectory, renamed, deleted.
	echo "old content" >"$W/existing.txt"; echo doomed >"$W/gone.txt"
	(cd "$W" && "$MOAT" run -q --mode "$mode" --report "$TMP/report.json" -- sh -c '
		printf "hello from the sandbox\n" > created.txt
		printf "new content\n" > existing.txt
		mkdir -p d/e && head -c 100000 /dev/urandom > d/e/blob.bin
		echo r > tmp.txt && mv tmp.txt renamed.txt
		rm gone.txt')
	rc=$?
	[ $rc -eq 0 ] && [ "$(cat "$W/created.txt")" = "hello from the sandbox" ] &&
		[ "$(cat "$W/existing.txt")" = "new content" ] && [ -s "$W/d/e/blob.bin" ] &&
		[ -e "$W/renamed.txt" ] && [ ! -e "$W/gone.txt" ]
	ok $? "$mode: writing inside the workspace succeeds on the host (rc=$rc)"

	# Every changed file shows in the report with the sha256 of what is on the host.
	check=$(python3 - "$TMP/report.json" "$W" <<'PY'
import hashlib, json, os, sys
rep = json.load(open(sys.argv[1])); w = sys.argv[2]
ch = {c["path"]: c for c in rep.get("changes", [])}
bad = []
for name in ["created.txt", "existing.txt", "d/e/blob.bin", "renamed.txt"]:
    host = os.path.join(w, name)
    c = next((v for k, v in ch.items() if k.endswith("/" + name)), None)
    if c is None: bad.append(name + ": missing"); continue
    data = open(host, "rb").read()
    if c.get("sha256") != hashlib.sha256(data).hexdigest(): bad.append(name + ": sha256 " + str(c.get("sha256")))
    if c.get("size") != len(data): bad.append(name + ": size " + str(c.get("size")))
    if not c.get("exists", True): bad.append(name + ": exists=false")
g = next((v for k, v in ch.items() if k.endswith("/gone.txt")), None)
if g is None or g.get("exists") or g.get("kind") != "deleted": bad.append("gone.txt: " + repr(g))
print("; ".join(bad))
PY
)
	[ -z "$check" ]; ok $? "$mode: --report lists every change with size and the host's sha256" "$check"

	# Cross-check one hash with sha256sum itself.
	want=$(sha256sum "$W/created.txt" | cut -d' ' -f1)
	grep -q "\"sha256\": *\"$want\"" "$TMP/report.json"
	ok $? "$mode: sha256sum of created.txt on the host appears in the report"

	# Files the run did not touch are not reported.
	echo untouched >"$W/untouched.txt"
	(cd "$W" && "$MOAT" run -q --mode "$mode" --report "$TMP/report2.json" -- cat untouched.txt >/dev/null)
	! grep -q untouched "$TMP/report2.json" && grep -q '"changes"' "$TMP/report2.json"
	ok $? "$mode: a file only read is not in the change set"

	# A hidden path written through another name is not in the report either.
	(cd "$W" && "$MOAT" run -q --mode "$mode" --hide '**/.env' --report "$TMP/report3.json" -- \
		sh -c 'echo s > .env; echo v > visible.txt' 2>/dev/null)
	! grep -q '\.env' "$TMP/report3.json" && grep -q visible.txt "$TMP/report3.json" && [ ! -e "$W/.env" ]
	ok $? "$mode: a refused hidden write leaves no file and no report entry"
done
finish
