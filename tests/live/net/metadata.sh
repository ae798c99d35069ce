#!/usr/bin/env bash
# Issue 4 acceptance: the cloud metadata endpoint is closed under every policy that does
# not name its address literally - no rule, wildcards, a prefix that covers it, 0.0.0.0/0,
# a neighbouring literal - for python and curl, in under 2 s, with the denial line
# "denied connect 169.254.169.254:80 (metadata is always denied)". Other spellings of the
# same and of the other metadata addresses are decided the same way.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

policies=("" "*:*" "*:80" "tcp:*.example.com:80" "169.254.0.0/16" "0.0.0.0/0" "localhost:80" "169.254.169.253:80")
plan $((2 * (${#policies[@]} * 2 + 3)))

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq $((${#policies[@]} * 2 + 3))); do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	for pol in "${policies[@]}"; do
		args=()
		[ -n "$pol" ] && args=(--allow-net "$pol")
		# The client times its own connect: the run as a whole also holds
		# interpreter start-up, which a loaded machine can stretch.
		out=$(sandbox "$mode" "${args[@]}" -- "$PY" client.py tcp 169.254.169.254 80 block)
		ms=$(echo "$out" | awk '/^error/ { printf "%d", $3 * 1000 }')
		echo "$out" | grep -q '^error' && [ "${ms:-9999}" -lt 2000 ] &&
			denied "denied connect 169.254.169.254:80 (metadata is always denied)"
		ok $? "$mode: python to 169.254.169.254:80 under '${pol:-no rule}' is denied in ${ms} ms" "$(diag "$out")"

		if command -v curl >/dev/null; then
			out=$(sandbox "$mode" "${args[@]}" -- curl -sS -m 10 -o /dev/null \
				-w '%{time_total}' http://169.254.169.254/latest/meta-data/)
			rc=$?
			ms=$(echo "$out" | awk '{ printf "%d", $1 * 1000 }')
			[ $rc -ne 0 ] && [ "${ms:-9999}" -lt 2000 ] &&
				denied "denied connect 169.254.169.254:80 (metadata is always denied)"
			ok $? "$mode: curl to 169.254.169.254:80 under '${pol:-no rule}' is denied in ${ms} ms (exit $rc)" "$(diag "$out")"
		else
			skip "$mode: curl under '${pol:-no rule}'" "no curl"
		fi
	done
	for dest in "::ffff:169.254.169.254" "100.100.100.200" "fd00:ec2::254"; do
		out=$(sandbox "$mode" --allow-net '*:*' --allow-net '0.0.0.0/0' -- "$PY" client.py tcp "$dest" 80 block)
		echo "$out" | grep -q '^error' && denied "(metadata is always denied)"
		ok $? "$mode: $dest:80 is metadata too" "$(diag "$out")"
	done
done
finish
