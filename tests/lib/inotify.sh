# shellcheck shell=bash
# The outside half of the inotify probes (tests/escape/vfs/inotify-hidden.sh and
# tests/oci/escape-more.sh): a program in the sandbox watches DIR, which holds a hidden
# .env and a visible sub/visible, and creates DIR/ready once its watches stand. This
# changes both files from the host while the watches stand, so the kernel queues an event
# for each, then creates DIR/done (the program reads its events and ends) and waits for
# PID, the sandbox's launcher. TRIES bounds the wait for ready, in steps of 0.05 s.
inotify_provoke() { # DIR PID TRIES
	local dir=$1 pid=$2 tries=$3
	for _ in $(seq "$tries"); do [ -e "$dir/ready" ] && break; sleep 0.05; done
	echo more >>"$dir/.env"
	echo more >>"$dir/sub/visible"
	touch "$dir/done"
	wait "$pid"
}
