#!/usr/bin/env bash
# The audit stream in namespaced mode, where --audit keeps the default filter: every call
# moat still traps is recorded (an open, an exec, a connect, the denied open of a hidden
# .env), while stat runs natively, finds the hidden name's empty stub as it does without
# --audit, and is not recorded. --audit --strict-hide traps the stat too: the hidden name
# is absent (ENOENT) and the refusal is in the stream. Checked on the stream file
# (`moat audit dump`), on the accept count of a server outside the sandbox, and on the
# .env, which must never be read.
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
plan 10

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
start_server tcp A || { echo "Bail out! the test server did not start"; exit 1; }

cd "$WORK" || exit 1
echo visible >ok.txt
SECRET="moat-secret-$RANDOM$RANDOM"
echo "$SECRET" >.env # hidden by the default profile's **/.env
cat >probe.py <<'PYEOF'
import os, socket, sys
print("READ", open("ok.txt").read().strip())
try:
    print("ENV", open(".env").read().strip())
except OSError as e:
    print("ENV ERR", e.errno)
try:
    st = os.stat(".env")
    print("STAT %d %o" % (st.st_size, st.st_mode & 0o7777))
except OSError as e:
    print("STAT ERR", e.errno)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"ping\n")
print("ECHO", s.recv(16).decode().strip())
s.close()
sys.stdout.flush()
os.execv("/bin/true", ["true"])
PYEOF

run() { timeout 60 "$MOAT" run -q --mode namespaced --output-in-workspace \
	--allow-net "127.0.0.1:$PORT_A" "$@" -- "$PY" probe.py "$PORT_A" 2>"$TMP/err"; }
sys_of() { "$MOAT" audit dump --json "$1" 2>/dev/null | jq -c 'select(.type=="sys")'; }

out=$(run --audit a.moat)
rc=$?
sys_of a.moat >a.json
diag="exit $rc; out: $out; stderr: $(head -c 600 "$TMP/err")"
n_accepts=$(accepts A)
# --audit changes nothing the program sees: the hidden .env's errno is a plain run's (the
# stub's EPERM where read-only opens are native, root-started; ENOENT where moat decides)
plain_env=$(run | grep '^ENV')
env_errno=${plain_env#ENV ERR }
printf '%s\n' "$out" | grep -qx 'READ visible' && printf '%s\n' "$out" | grep -qx "$plain_env" &&
	[[ "$env_errno" =~ ^[12]$ ]] &&
	printf '%s\n' "$out" | grep -qx 'ECHO ping' && [ "$rc" -eq 0 ] && [ "$n_accepts" = 1 ] &&
	! grep -qF "$SECRET" <<<"$out" && ! grep -qF "$SECRET" "$TMP/err"
ok $? "--audit (namespaced): the command read ok.txt, not the .env, and reached the server once (accepts: $n_accepts)" "$diag"

# (jq 1.6's -e looks at the last input only: count the matches instead)
any_in() { [ -n "$(jq -c "select($2)" "$1")" ]; }
has() { any_in a.json "$1"; }
# as the program named it (trapped), or the object the kernel opened (native: root-started,
# recorded from the kernel's open event)
has '.syscall=="openat" and (.path=="ok.txt" or (.resolved // "" | endswith("/ok.txt"))) and .decision!="denied" and .result>=0'
ok $? "--audit: the open of ok.txt is in the stream ($(jq -r 'select(.path=="ok.txt" or (.resolved // "" | endswith("/ok.txt"))) | .decision' a.json | head -1))" \
	"$(jq -c 'select(.path=="ok.txt" or (.resolved // "" | endswith("/ok.txt")))' a.json)"
has '(.syscall=="execve" or .syscall=="execveat") and (.path=="/bin/true" or .resolved=="/bin/true") and .decision!="denied"'
ok $? "--audit: the exec of /bin/true is in the stream" "$(jq -c 'select(.syscall | startswith("exec"))' a.json)"
has ".syscall==\"connect\" and .addr==\"127.0.0.1:$PORT_A\" and .decision!=\"denied\""
ok $? "--audit: the connect to 127.0.0.1:$PORT_A is in the stream" "$(jq -c 'select(.syscall=="connect")' a.json)"
has ".syscall==\"openat\" and (.path==\".env\" or (.resolved // \"\" | endswith(\"/.env\"))) and .decision==\"denied\" and .errno==$env_errno"
ok $? "--audit: the denied open of the hidden .env is in the stream, with the errno the program got ($env_errno)" \
	"$(jq -c 'select(.path==".env" or (.resolved // "" | endswith("/.env")))' a.json)"

# The stat: the kernel's answer, the empty stub of mode 0444 (openable, so that an open of
# it without --audit meets its fanotify mark), as without --audit.
plain=$(run | grep '^STAT')
audited=$(printf '%s\n' "$out" | grep '^STAT')
[ "$audited" = "STAT 0 444" ] && [ "$plain" = "$audited" ]
ok $? "--audit: a stat of the hidden .env finds the empty stub, as without --audit ($audited)" \
	"with --audit: '$audited'; without: '$plain'; $(head -c 400 "$TMP/err")"
n=$(jq -c 'select(.path==".env" and (.syscall | test("stat")))' a.json | wc -l)
feat() { "$MOAT" audit dump --json "$1" 2>/dev/null |
	jq -r 'select(.type=="hdr") | .features[] | select(.name=="metadata_calls_recorded") | .present'; }
hdr=$(feat a.moat)
[ "$n" -eq 0 ] && [ "$hdr" = false ]
ok $? "--audit: that stat ran natively (no record of it; the header's metadata_calls_recorded: $hdr)" \
	"$(jq -c 'select(.path==".env")' a.json)"

# --audit --strict-hide: the name is absent, and every lookup is decided and recorded.
out=$(run --audit s.moat --strict-hide)
rc=$?
sys_of s.moat >s.json
printf '%s\n' "$out" | grep -qx 'STAT ERR 2' && printf '%s\n' "$out" | grep -qx 'ECHO ping' &&
	! grep -qF "$SECRET" <<<"$out"
ok $? "--audit --strict-hide: a stat of the hidden .env is ENOENT" "exit $rc; out: $out; stderr: $(head -c 600 "$TMP/err")"
any_in s.json '.path==".env" and (.syscall | test("stat")) and .decision=="denied" and .errno==2' &&
	[ "$(feat s.moat)" = true ]
ok $? "--audit --strict-hide: the stream holds the denied stat of .env, and the header says so" \
	"header: $(feat s.moat); $(jq -c 'select(.path==".env")' s.json)"
any_in s.json '.syscall=="openat" and .path==".env" and .decision=="denied"' &&
	any_in s.json '.syscall=="connect"'
ok $? "--audit --strict-hide: and the denied open and the connect" "$(jq -c 'select(.path==".env" or .syscall=="connect")' s.json)"
finish
