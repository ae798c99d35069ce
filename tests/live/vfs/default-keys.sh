#!/usr/bin/env bash
# The default profile hides private keys by their usual names, anywhere, but not the
# certificate bundles TLS needs: hiding every *.pem hid certifi's cacert.pem, and with it
# `python3 -m venv` (ensurepip) and every TLS client that reads a CA bundle.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 9
W=$(mktemp -d "$TMP/ws.XXXXXX")
mkdir "$W/keys"
public="cacert.pem fullchain.pem cert.pem"
private="privkey.pem key.pem server-key.pem server.key id_ed25519 id_ecdsa bundle.p12 store.pfx"
for f in $public $private; do echo "content-of-$f" >"$W/keys/$f"; done

# Namespaced, the names show as empty stubs (the kernel lists the directory); with
# --strict-hide they are absent too. The content never shows.
for mode in namespaced strict-hide unnamespaced; do
	if ! have_mode "${mode/strict-hide/namespaced}"; then
		for i in 1 2 3; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	if [ "$mode" = strict-hide ]; then run=(--mode namespaced --strict-hide); else run=(--mode "$mode"); fi
	(cd "$W" && "$MOAT" run -q "${run[@]}" -- sh -c '
		for f in '"$public $private"'; do cat "keys/$f" 2>/dev/null; done; ls -A keys') \
		>"$TMP/out" 2>"$TMP/err"
	leaked=$(for f in $private; do grep -x "content-of-$f" "$TMP/out"
		[ "$mode" = namespaced ] || grep -x "$f" "$TMP/out"; done)
	[ -z "$leaked" ]
	ok $? "$mode: private keys stay hidden ($([ "$mode" = namespaced ] && echo content || echo content and name))" "leaked: $leaked"
	missing=$(for f in $public; do grep -qx "content-of-$f" "$TMP/out" || echo "$f"; done)
	[ -z "$missing" ]
	ok $? "$mode: certificate bundles are readable" "missing: $missing; stderr: $(head -c 500 "$TMP/err")"

	# the case that showed it: a venv's pip is installed from a wheel holding cacert.pem
	rm -rf "$W/.venv"
	if ! /usr/bin/python3 -m venv "$TMP/native-venv" >/dev/null 2>&1; then
		skip "$mode: python3 -m venv works" "it does not work natively either (python3-venv missing?)"
		continue
	fi
	rm -rf "$TMP/native-venv"
	(cd "$W" && "$MOAT" run -q "${run[@]}" -- /usr/bin/python3 -m venv .venv) >"$TMP/out" 2>&1
	[ -x "$W/.venv/bin/pip" ]
	ok $? "$mode: python3 -m venv works, pip included" "$(tail -5 "$TMP/out")"
done
finish
