#!/usr/bin/env bash
# Exec races: the supervisor checks an exec's path and the kernel then resolves it again.
# tests/escape/core/exec-race.c changes what the path names in between, by flipping the
# path buffer from a second thread or by exchanging two symlinks in the workspace, so that
# a --deny'd or hidden binary would run instead of the allowed one (a copy of true). The
# refused binary leaves a marker file in the workspace when it runs: it must never appear
# on the host, in either mode. Each run is bounded in time (and stops at a marker).
# The ELF interpreter is the kernel's choice too: an allowed program whose PT_INTERP names
# a refused copy of the dynamic loader must not run either.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
: "${EXEC_RACE:?EXEC_RACE must point at the fixture (meson sets it)}"
SECS=${EXEC_RACE_SECONDS:-6}

plan 16
mkdir "$TMP/cwd"
W=$(mktemp -d "$TMP/ws.XXXXXX")
cp /bin/true "$W/ok-bin"
cp "$EXEC_RACE" "$W/no-bin"
cp "$EXEC_RACE" "$W/race"
# An allowed program whose ELF interpreter is a refused copy of the dynamic loader
# (relative: the kernel opens it from the cwd, the workspace): no race needed.
ld=$("$EXEC_RACE" interp "$EXEC_RACE" "$W/ok-interp" no-ld) && cp "$ld" "$W/no-ld" || ld=

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for t in "a failed exec" "an exec from a thread" "interp --deny" "interp --hide" \
			"flip --deny" "flip --hide" "swap --deny" "swap --hide"; do
			skip "$mode: $t" "moat cannot start in $mode mode here"
		done
		continue
	fi
	if [ "$mode" = namespaced ]; then map=(--bind "$W:/workspace" --chdir /workspace); D=/workspace
	else map=(--bind "$W" --chdir "$W"); D=$W; fi
	# What the watch must not break: a failed exec returns to its caller, untraced, and
	# a thread that is not the leader can exec.
	printf 'not a program\n' >"$W/garbage"
	chmod +x "$W/garbage"
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" -- sh -c \
		'"$1" 2>/dev/null; echo "rc=$?"; sleep 0.2; grep TracerPid /proc/self/status' sh \
		"$D/garbage" 2>&1)
	echo "$out" | grep -q 'rc=' && echo "$out" | grep -qE 'TracerPid:[[:space:]]+0$'
	ok $? "$mode: a failed exec returns to its caller, which is not left traced" "$out"
	out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" -- "$D/race" texec \
		"$D/race" mark "$D/marker" 2>&1)
	rc=$?
	[ $rc -eq 42 ] && [ -e "$W/marker" ]
	ok $? "$mode: an exec from a thread that is not the leader runs (exit 42, marker)" "rc=$rc $out"
	for rule in --deny --hide; do
		rm -f "$W/marker"
		if [ -z "$ld" ]; then
			skip "$mode: interp $rule: the refused interpreter never runs" "no ELF interpreter to copy"
			continue
		fi
		out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" "$rule" '**/no-ld' -- \
			"$D/ok-interp" mark "$D/marker" 2>&1)
		rc=$?
		[ ! -e "$W/marker" ]
		ok $? "$mode: interp $rule: the refused interpreter never runs" "rc=$rc $out"
	done
	for kind in flip swap; do
		for rule in --deny --hide; do
			rm -f "$W/marker" "$W/link" "$W/other" "$W/link.new"
			if [ $kind = flip ]; then
				args=("$D/ok-bin" "$D/no-bin")
			else
				ln -s ok-bin "$W/link"
				ln -s no-bin "$W/other"
				args=("$D/link" "$D/other")
			fi
			out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "${map[@]}" \
				"$rule" '**/no-bin' -- "$D/race" $kind "${args[@]}" "$D/marker" "$SECS" 2>&1)
			rc=$?
			out=$(echo "$out" | grep -E '^children=|error|ERROR' | head -5)
			if [ -e "$W/marker" ]; then
				ok 1 "$mode: $kind $rule: the refused binary never runs" \
					"it ran: $W/marker exists ($out)"
			else
				echo "$out" | grep -qE 'children=[1-9].* exec_ok=[1-9]'
				ok $? "$mode: $kind $rule: the refused binary never runs ($out)" "rc=$rc"
			fi
		done
	done
done
finish
