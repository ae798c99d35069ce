#!/usr/bin/env bash
# Sockets that bypass addresses altogether are refused by the filter itself: raw IP,
# AF_PACKET, and netlink families other than NETLINK_ROUTE (which libc's getifaddrs
# needs). A plain TCP socket is still created.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

cases=(
	"AF_INET SOCK_RAW 1|refused"
	"AF_INET6 SOCK_RAW 58|refused"
	"AF_PACKET SOCK_RAW 0|refused"
	"AF_PACKET SOCK_DGRAM 0|refused"
	"AF_NETLINK SOCK_RAW 9|refused"
	"AF_NETLINK SOCK_RAW 12|refused"
	"AF_NETLINK SOCK_RAW 0|created"
	"AF_INET SOCK_STREAM 0|created"
)
plan $((2 * ${#cases[@]}))
for mode in namespaced unnamespaced; do
	for c in "${cases[@]}"; do
		IFS='|' read -r args want <<<"$c"
		if ! have_mode "$mode"; then
			skip "$mode: socket($args)" "moat cannot start in $mode mode here"
			continue
		fi
		# shellcheck disable=SC2086
		out=$(sandbox "$mode" -- "$PY" client.py socket $args)
		if [ "$want" = refused ]; then
			echo "$out" | grep -q '^error'
		else
			echo "$out" | grep -q '^created'
		fi
		r=$?
		ok $r "$mode: socket($args) is $want" "$(diag "$out")"
	done
done
finish
