#!/usr/bin/env bash
# The host's block devices stay out of the view: /dev as a whole, a block device and a
# directory below /dev holding one cannot be mapped, read-only or not. Started by root,
# the sandbox's root is the host's uid 0, which opens a disk, swap or loop device with
# no capability at all: reading it reads every file on it (hidden ones too), writing it
# writes beneath the filesystem. A read-only mapping does not help: the kernel ignores a
# read-only mount for device nodes. The disk here is a loop device over a file of the
# test's own, whose bytes are checked on the host after each run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root (a loop device, and a sandbox that is uid 0)"
command -v losetup >/dev/null || skip_all "no losetup"
mkdir "$TMP/cwd"
printf 'HOSTSECRET-%0500d' 0 > "$TMP/img"
truncate -s 1M "$TMP/img"
LOOP=$(losetup -f --show "$TMP/img" 2>/dev/null) || skip_all "cannot attach a loop device"
trap 'losetup -d "$LOOP"; _tap_cleanup' EXIT
plan 10

# reads the device's first bytes, then writes over them
PROBE="head -c 10 $LOOP; printf PWNED | dd of=$LOOP conv=notrunc 2>/dev/null && echo WROTE"
for mode in namespaced unnamespaced; do
	for map in "--bind /dev" "--ro-bind /dev" "--bind $LOOP" "--ro-bind $LOOP"; do
		name="$mode $map"
		if ! have_mode "$mode"; then
			skip "$name: the loop device is neither read nor written" "no $mode mode"
			continue
		fi
		out=$(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" $map -- sh -c "$PROBE" 2>&1)
		rc=$?
		sync
		head=$(head -c 10 "$TMP/img")
		printf 'HOSTSECRET' | dd of="$TMP/img" conv=notrunc 2>/dev/null
		[ "$head" = HOSTSECRET ] && ! echo "$out" | grep -q 'HOSTSECRET\|WROTE' &&
			[ "$rc" -eq 125 ] && echo "$out" | grep -q "block devices cannot be mapped"
		ok $? "$name: refused before anything runs; the loop device is neither read nor written (rc $rc, host bytes '$head')" "$out"
	done
done
# a directory of /dev holding no block device, and a device by name, still map
for map in "--bind /dev/pts" "--ro-bind /dev/null"; do
	out=$(cd "$TMP/cwd" && "$MOAT" run -q $map -- true 2>&1)
	ok $? "$map still maps" "$out"
done
finish
