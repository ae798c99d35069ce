#!/usr/bin/env bash
# /proc/self and /proc/<pid> resolve for a process forked by a thread other than its
# parent's main thread (multi-threaded runtimes such as Go's fork from any thread; the
# kernel lists such a child only in that thread's task/<tid>/children). Compared with
# what the same program sees natively.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 2
command -v python3 >/dev/null || skip_all "python3 is needed"
cd "$TMP" || exit 1

cat > t.py <<'PYEOF'
import subprocess, sys, threading
def run():
    subprocess.run(["sh", "-c", 'readlink /proc/self/exe; readlink /proc/$$/exe; '
                    'cut -d" " -f2-3 /proc/self/stat; test -r /proc/$$/status && echo status'])
t = threading.Thread(target=run)
t.start(); t.join()
PYEOF

python3 t.py >native.txt 2>&1
for mode in namespaced unnamespaced; do
	if ! have_mode $mode; then skip "$mode: /proc from a thread's child" "moat cannot start in $mode mode here"; continue; fi
	timeout 60 "$MOAT" run -q --mode $mode -- python3 t.py >sandbox.txt 2>&1
	cmp -s native.txt sandbox.txt
	ok $? "$mode: a child forked by a second thread sees its own /proc entries as natively" \
		"native: $(cat native.txt)
sandbox: $(cat sandbox.txt)"
done
finish
