# Shared by tests/oci: a tiny image built here from Debian's busybox-static (no registry
# is reachable), and the runtimes. Source after tests/lib/tap.sh.
: "${MOAT_RUNTIME:=$MOAT_BUILD/runtime/moat-runtime}"
# where moat-runtime keeps its state (podman does not pass our environment on to it)
MOAT_RUNTIME_STATE=/run/moat-runtime
OCIDIR="$MOAT_SRC/tests/oci"
PY=/usr/bin/python3

# need_root_tools TOOL...: skip the whole script, saying which is missing and why.
need() {
	[ "$(id -u)" -eq 0 ] || skip_all "OCI runtimes need root here (rootless podman is not set up)"
	[ -x "$MOAT_RUNTIME" ] || skip_all "moat-runtime not built at $MOAT_RUNTIME"
	for t in "$@"; do
		command -v "$t" >/dev/null ||
			skip_all "$t is not installed (scripts/bootstrap installs it with MOAT_OCI_DEPS=1)"
	done
	[ -x /bin/busybox ] || skip_all "busybox-static is not installed (the image is built from it)"
}

# make_rootfs DIR: busybox and its applets, a hidden file, a public one.
make_rootfs() {
	local d=$1 a
	mkdir -p "$d"/{bin,etc,proc,dev,sys,tmp,secret,run}
	cp /bin/busybox "$d/bin/busybox"
	for a in sh cat ls ln nc echo sleep wget true test; do ln -sf busybox "$d/bin/$a"; done
	echo "TOKEN=topsecret" >"$d/secret/.env"
	echo "public" >"$d/etc/pub"
	[ -n "${OPENAT2_BIN:-}" ] && cp "$OPENAT2_BIN" "$d/bin/openat2"
	chmod 1777 "$d/tmp"
}

# A static helper that opens its argument with openat2(2) (busybox has no way to).
build_openat2() {
	OPENAT2_BIN="$TMP/openat2"
	cat >"$TMP/openat2.c" <<'C'
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct open_how how = { .flags = O_RDONLY };
	char buf[256];
	long fd = syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof(how));
	ssize_t n;

	if (fd < 0) {
		perror("openat2");
		return 1;
	}
	n = read((int)fd, buf, sizeof(buf));
	if (n > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	return 0;
}
C
	build_static "$OPENAT2_BIN" "$TMP/openat2.c" || OPENAT2_BIN=
}

# build_static OUT SRC: a static binary for the busybox image (it has no libc of its own).
build_static() {
	cc -static -O1 -pthread -o "$1" "$2" 2>/dev/null
}

# podman_image: a podman store private to the test ($P, the command with its flags; $RUN,
# `run` with the flags this host needs) holding $TMP/rootfs as $IMG; skips the script
# when podman cannot import it or run it under plain runc here. mrun runs it under
# moat-runtime ($TMP/err: its stderr; diag shows it with moat's log).
podman_image() {
	P=(podman --root "$TMP/storage" --runroot "$TMP/runroot" --cgroup-manager cgroupfs
	   --events-backend file)
	RUN=(run --rm --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
	IMG=moat-oci-test:1
	trap 'cleanup_podman; _tap_cleanup' EXIT
	tar -C "$TMP/rootfs" -cf "$TMP/img.tar" . &&
		"${P[@]}" import -q "$TMP/img.tar" "$IMG" >/dev/null 2>"$TMP/import.err" ||
		skip_all "podman cannot import an image here: $(head -c 300 "$TMP/import.err")"
	if ! timeout 60 "${P[@]}" "${RUN[@]}" --runtime runc "$IMG" true 2>"$TMP/runc.err"; then
		skip_all "podman cannot run a container with plain runc here: $(head -c 300 "$TMP/runc.err")"
	fi
}
cleanup_podman() {
	"${P[@]}" rm -af -t 0 >/dev/null 2>&1
	"${P[@]}" rmi -af >/dev/null 2>&1
	# the storage's own mounts, before tap.sh removes $TMP
	grep -o " $TMP/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
}

# start_server KIND NAME: tests/live/net's counting servers on the host's loopback
# (PORT_<NAME>; $TMP/NAME.log holds how many connections one accepted)
. "$MOAT_SRC/tests/live/net/lib.sh"

# gone PID [SECONDS]: the process exited (gone, or a zombie) within the time.
gone() {
	local i st
	for i in $(seq $((${2:-5} * 20))); do
		st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
		[ "$st" = Z ] && return 0
		sleep 0.05
	done
	return 1
}

# (after tests/live/net/lib.sh: this diag, with moat-runtime's log, replaces its)
mrun() { timeout 60 "${P[@]}" "${RUN[@]}" --runtime "$MOAT_RUNTIME" "$@" 2>"$TMP/err"; }
diag() { printf '%s\n--- stderr:\n%s\n--- moat:\n%s' "$1" "$(cat "$TMP/err")" \
	"$(cat "$MOAT_RUNTIME_STATE"/*/moat.log 2>/dev/null | tail -20)"; }
