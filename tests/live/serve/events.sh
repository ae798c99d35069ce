#!/usr/bin/env bash
# `moat run --events`: one JSON line per denial (with the rule that decided it and a
# hint), the limit that ended a run, and the result; a flood of denials is rate-limited
# with a count of what was dropped; an existing file is never truncated.
. "$MOAT_SRC/tests/lib/tap.sh"
plan 8

cd "$TMP"
"$MOAT" run -q --events ev.jsonl --report ev-report.json -- sh -c 'cat /etc/shadow; exit 3' >/dev/null 2>&1
st=$?
ok $([ $st -eq 3 ] && echo 0 || echo 1) "the command's status is kept (3, got $st)"
# A native read-only open (namespaced, root: the report says so) meets the stub over
# /etc/shadow, refused with EPERM by its fanotify mark; a checked one says ENOENT.
python3 - ev.jsonl ev-report.json <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
native = json.load(open(sys.argv[2]))["features"].get("read_only_opens") == "native"
d = [e for e in ev if e["event"] == "denial"]
r = [e for e in ev if e["event"] == "result"]
assert d and d[0]["syscall"] in ("openat", "open") and d[0]["path"] == "/etc/shadow", d
assert d[0]["rule"].startswith("hide /etc/shadow") and d[0]["hint"], d
assert d[0]["errno"] == ("EPERM" if native else "ENOENT"), (native, d)
assert len(r) == 1 and ev[-1] is r[0] and r[0]["exit_status"] == 3 and r[0]["denials"] >= 1, r
PY
ok $? "a denial line names syscall, path, rule, errno and a hint; the result comes last"

"$MOAT" run -q --timeout 1 --events to.jsonl -- sleep 30 >/dev/null 2>&1
python3 -c '
import json,sys
ev=[json.loads(l) for l in open("to.jsonl")]
assert any(e["event"]=="limit" and e["limit"]=="timeout" for e in ev), ev
assert ev[-1]["event"]=="result" and ev[-1]["reason"]=="timeout" and ev[-1]["exit_status"]==124, ev'
ok $? "a timeout is a limit event, and the result says so"

# 3000 denied opens: the stream stays bounded and says how many it dropped.
"$MOAT" run -q --events flood.jsonl -- python3 -c '
import os
for i in range(3000):
    try: open("/etc/shadow")
    except OSError: pass' >/dev/null 2>&1
python3 - flood.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
d = sum(1 for e in ev if e["event"] == "denial")
dropped = sum(e["count"] for e in ev if e["event"] == "dropped")
res = ev[-1]
assert res["event"] == "result", res
assert d < 1500, f"{d} denial lines: not rate-limited"
assert d + dropped == res["denials"] >= 3000, (d, dropped, res["denials"])
PY
ok $? "3000 denials: fewer lines, and lines + dropped count = every denial"

# fd:N: an inherited descriptor (how moat serve reads them).
"$MOAT" run -q --events fd:7 -- true 7>fd.jsonl >/dev/null 2>&1
grep -q '"event":"result"' fd.jsonl
ok $? "--events fd:7 writes to the inherited descriptor"

echo precious > keep.txt
"$MOAT" run -q --events keep.txt -- true >/dev/null 2>&1
st=$?
ok $([ $st -eq 125 ] && [ "$(cat keep.txt)" = precious ] && echo 0 || echo 1) \
	"an existing file is refused (125) and left as it was (got $st)"
ln -s "$TMP/victim" link.jsonl
"$MOAT" run -q --events link.jsonl -- true >/dev/null 2>&1
ok $([ ! -e "$TMP/victim" ] && echo 0 || echo 1) "a symlink is not followed"
"$MOAT" run -q --events fd:x -- true >/dev/null 2>err.txt
st=$?
ok $([ $st -eq 125 ] && grep -q "not fd:N" err.txt && echo 0 || echo 1) "a bad --events fd:N fails with 125 and a message"
finish
