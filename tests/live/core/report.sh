#!/usr/bin/env bash
# --report and --audit at the edges: moat failing before the command runs (exit 125),
# "-" as a file name, how times print, and the teardown's hashing of what the run left
# behind, which the sandbox chooses (a 1 TiB sparse file) and which must neither hang
# moat nor keep it from a SIGTERM. Every check reads the files moat wrote, from outside.
. "${MOAT_SRC:?}/tests/lib/tap.sh"
command -v jq >/dev/null || skip_all "needs jq"
MODES=(namespaced unnamespaced)
plan $((8 * ${#MODES[@]} + 4))

WS="$TMP/ws"
OUT="$TMP/out"
mkdir -p "$WS" "$OUT"
cd "$WS" || exit 1

# "-": stdout and stderr belong to the command; no file named "-" appears.
"$MOAT" run -q --report - -- /bin/echo hi >"$TMP/o" 2>"$TMP/e"
rc=$?
if [ "$rc" -eq 125 ] && [ ! -e ./- ] && [ ! -s "$TMP/o" ] && grep -q "stdout and stderr belong" "$TMP/e"; then
	pass "--report - is refused clearly, the command does not run, no file '-'"
else fail "--report - is refused" "exit $rc; $(ls -la; cat "$TMP/o" "$TMP/e")"; fi
rm -f ./-

# A policy file moat cannot use: exit 125, and the report says why.
printf 'moat-policy 1\nbogus directive\n' >"$TMP/bad.pol"
"$MOAT" run -q --policy "$TMP/bad.pol" --report "$OUT/p.json" -- /bin/echo ran >"$TMP/o" 2>"$TMP/e"
rc=$?
got=$(jq -c '[.exit_status, .reason, (.setup_error | test("bad.pol:2"))]' "$OUT/p.json" 2>&1)
if [ "$rc" -eq 125 ] && [ "$got" = '[125,"setup-failed",true]' ] && [ ! -s "$TMP/o" ]; then
	pass "a bad --policy: exit 125 and a report naming the line"
else fail "a bad --policy: report" "exit $rc; report: $got; $(cat "$TMP/e")"; fi

# --run-id: the caller's id in the report and the stream, which verify checks.
"$MOAT" run -q --run-id ci-42.a --report "$OUT/i.json" --audit "$OUT/i.moat" -- true 2>"$TMP/e"
got=$(jq -r .run_id "$OUT/i.json" 2>&1)
if [ "$got" = ci-42.a ] && "$MOAT" audit verify --run-id ci-42.a "$OUT/i.moat" >/dev/null 2>&1 &&
   ! "$MOAT" audit verify --run-id ci-42.b "$OUT/i.moat" >/dev/null 2>&1 &&
   ! "$MOAT" run -q --run-id 'a/b' -- true 2>/dev/null; then
	pass "--run-id names the run in the report and the stream; verify checks it; 'a/b' is refused"
else fail "--run-id" "report run_id: $got; $(cat "$TMP/e")"; fi

# The stream's header is on disk before the command has done anything: moat killed
# half a second into a run still leaves a stream that names the run.
"$MOAT" run -q --audit "$OUT/k.moat" -- /bin/sleep 10 2>/dev/null &
pid=$!
track_pid "$pid"
sleep 0.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
got=$("$MOAT" audit dump --json "$OUT/k.moat" 2>/dev/null | jq -r 'select(.type=="hdr") | .argv[0]')
[ "$got" = /bin/sleep ]
ok $? "a stream whose moat was SIGKILLed at 0.5 s has its header" "got '$got'"

for m in "${MODES[@]}"; do
	rm -f "$OUT"/*
	# moat fails before the command runs (an output it must refuse): the report says so.
	"$MOAT" run -q --mode "$m" --report "$OUT/r.json" --audit ./a.moat -- /bin/echo ran \
		>"$TMP/o" 2>"$TMP/e"
	rc=$?
	got=$(jq -c '[.exit_status, .reason, (.setup_error | test("--audit ./a.moat is inside")), (.run_id | length)]' \
		"$OUT/r.json" 2>&1)
	if [ "$rc" -eq 125 ] && [ "$got" = '[125,"setup-failed",true,32]' ] && [ ! -s "$TMP/o" ]; then
		pass "$m: exit 125 still writes --report: setup-failed, the error, a run id"
	else fail "$m: exit 125 writes --report" "exit $rc; report: $got; $(cat "$TMP/e")"; fi

	# A policy the mode cannot build, found before the sandbox starts.
	rm -f "$OUT/r.json"
	"$MOAT" run -q --mode "$m" --report "$OUT/r.json" --bind "$WS:/elsewhere" -- /bin/echo ran \
		>"$TMP/o" 2>"$TMP/e"
	rc=$?
	got=$(jq -c '[.exit_status, .reason, (.setup_error | length > 0)]' "$OUT/r.json" 2>&1)
	if [ "$m" = namespaced ] && [ "$rc" -eq 0 ]; then
		pass "$m: a remapping bind is accepted here (control)"
	elif [ "$rc" -eq 125 ] && [ "$got" = '[125,"setup-failed",true]' ]; then
		pass "$m: a policy refused by the mode: exit 125 and a report that says why"
	else fail "$m: policy refused by the mode: report" "exit $rc; report: $got; $(cat "$TMP/e")"; fi

	# Times: milliseconds to the microsecond, printed without binary noise.
	rm -f "$OUT/r.json"
	"$MOAT" run -q --mode "$m" --report "$OUT/r.json" -- /bin/sh -c \
		'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' 2>/dev/null
	bad=$(grep -E '"(cpu_ms|wall_ms)"' "$OUT/r.json" | grep -vE '"(cpu_ms|wall_ms)": [0-9]+(\.[0-9]{1,3})?,?$')
	n=$(grep -cE '"(cpu_ms|wall_ms)"' "$OUT/r.json")
	[ -z "$bad" ] && [ "$n" -eq 2 ] && [ "$(jq '.cpu_ms > 0' "$OUT/r.json")" = true ]
	ok $? "$m: cpu_ms and wall_ms print as at most 3 decimals" "$bad"

	# A file the run made directly in /tmp (unnamespaced, the host's /tmp, where the
	# run sees only what it made): listing it at the end walks it through the view
	# while the change set is held, which once deadlocked moat for good.
	f=/tmp/moat-report-own.$$
	rm -f "$f" "$OUT/r.json"
	timeout -k 5 30 "$MOAT" run -q --mode "$m" --report "$OUT/r.json" -- \
		/bin/sh -c "echo own >$f" 2>"$TMP/e"
	rc=$?
	[ "$rc" -eq 0 ] && [ "$(jq -r .exit_status "$OUT/r.json" 2>&1)" = 0 ]
	ok $? "$m: a run that wrote a file in /tmp ends and writes its report" "exit $rc; $(cat "$TMP/e")"
	rm -f "$f"

	# A 1 TiB sparse file: not hashed, and said so; the run ends at once.
	rm -f "$OUT"/*
	start=$(date +%s)
	# (unnamespaced, the default profile's /tmp is the host's, writable: so is $OUT)
	timeout -k 5 60 "$MOAT" run -q --mode "$m" --output-in-workspace --report "$OUT/r.json" \
		--audit "$OUT/a.moat" -- \
		/bin/sh -c 'truncate -s 1T big && echo small >small' 2>"$TMP/e"
	rc=$?
	took=$(($(date +%s) - start))
	got=$(jq -c '[.changes[] | select(.path | endswith("/big")) | .size, .sha256, .hash_skipped]' \
		"$OUT/r.json" 2>&1)
	small=$(jq -r '.changes[] | select(.path | endswith("/small")) | .sha256' "$OUT/r.json" 2>&1)
	if [ "$rc" -eq 0 ] && [ "$took" -le 10 ] && [ "$got" = '[1099511627776,null,"size"]' ] &&
	   [ "$small" = "$(sha256sum <small | cut -d' ' -f1)" ]; then
		pass "$m: a 1 TiB sparse file: the run ends in ${took}s, sha256 null, hash_skipped size"
	else fail "$m: a 1 TiB sparse file is not hashed" "exit $rc after ${took}s; $got; small $small; $(cat "$TMP/e")"; fi
	"$MOAT" audit dump --json "$OUT/a.moat" 2>/dev/null |
		jq -se '[.[] | select(.type=="ftr") | .changes[] | select(.path | endswith("/big")) |
		        select(.hash_skipped=="size" and (has("sha256") | not))] | length == 1' >/dev/null
	ok $? "$m: the stream's footer says the same (no sha256, hash_skipped size)"
	rm -f big small

	# The time bound, and a SIGTERM while hashing: both need bounds no default gives,
	# from a test_hooks build (scripts/test makes one).
	rm -f "$OUT"/*
	MOAT_TEST_HASH_LIMITS=0:500 timeout -k 5 60 "$MOAT" run -q --mode "$m" --report "$OUT/r.json" -- \
		/bin/sh -c 'truncate -s 1T big' 2>"$TMP/e"
	if ! grep -q "test hook: hash limits" "$TMP/e"; then
		skip "$m: the hashing's time bound" "moat was built without -Dtest_hooks=true"
		skip "$m: SIGTERM while hashing" "moat was built without -Dtest_hooks=true"
		rm -f big
		continue
	fi
	got=$(jq -c '[.changes[] | select(.path | endswith("/big")) | .sha256, .hash_skipped]' "$OUT/r.json" 2>&1)
	[ "$got" = '[null,"time"]' ]
	ok $? "$m: hashing past its time bound stops: sha256 null, hash_skipped time" "$got"

	rm -f "$OUT"/* big
	MOAT_TEST_HASH_LIMITS=0:0 "$MOAT" run -q --mode "$m" --report "$OUT/r.json" -- \
		/bin/sh -c 'truncate -s 1T big' 2>"$TMP/e" &
	pid=$!
	track_pid "$pid"
	# Once the command has made the file and exited, moat is hashing the 1 TiB.
	for _ in $(seq 100); do [ -e big ] && break; sleep 0.1; done
	sleep 1
	kill -TERM "$pid"
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		fail "$m: SIGTERM while hashing ends moat promptly" "still running 5 s after SIGTERM"
	else
		wait "$pid"
		got=$(jq -c '[.teardown_interrupted, (.changes[] | select(.path | endswith("/big")) | .hash_skipped)]' \
			"$OUT/r.json" 2>&1)
		[ "$got" = '["TERM","signal"]' ]
		ok $? "$m: SIGTERM while hashing ends moat within 5 s, the report says so" "$got; $(cat "$TMP/e")"
	fi
	rm -f big
done
finish
