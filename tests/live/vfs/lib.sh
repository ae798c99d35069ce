#!/usr/bin/env bash
# Helpers shared by tests/live/vfs and tests/escape/vfs (source after tests/lib/tap.sh).

# have_mode MODE: whether `moat run --mode MODE` can start at all on this kernel.
have_mode() { (cd "$TMP" && "$MOAT" run -q --mode "$1" -- true) >/dev/null 2>&1; }

# own_state_dir: moat's state directory (the covering's records, the lists of mount
# points made on the host) one of the test's own, not the user's.
own_state_dir() {
	export MOAT_COVER_CACHE="$TMP/state"
	mkdir -m 700 "$MOAT_COVER_CACHE"
}

# no_secret FILE SECRET: FILE does not contain SECRET.
no_secret() { ! grep -qF -- "$2" "$1"; }

# A fresh workspace under $TMP with a hidden .env holding a random secret.
# Sets W (host dir) and SECRET.
make_workspace() {
	W=$(mktemp -d "$TMP/ws.XXXXXX")
	SECRET="moat-secret-$RANDOM$RANDOM"
	printf '%s\n' "$SECRET" >"$W/.env"
	echo visible >"$W/a.txt"
	mkdir "$W/sub"
	echo inner >"$W/sub/inner.txt"
}

# private_dirs PID: the private directories the supervisor PID holds (its sandbox's /tmp
# backing under /tmp/moat-vfs-*, the skeleton under /dev/shm/moat-root-*), seen from outside
private_dirs() {
	for f in /proc/"$1"/fd/*; do readlink "$f"; done 2>/dev/null |
		grep -E '^(/tmp/moat-vfs-|/dev/shm/moat-root-)[^/]{6}$' | sort -u
}
# wait_for FILE: up to 10 s
wait_for() {
	for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}
