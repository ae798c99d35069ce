#!/usr/bin/env bash
# The supervisor never waits for the sandbox: opening a FIFO waits for its other end,
# and done on the notifier thread that wait stopped every notified call of the run until
# --timeout. `mkfifo ff; (echo x > ff) & cat ff` must finish at once in either mode, and
# while one thread waits in a FIFO open, another thread's notified calls (stat, open,
# write of a marker checked from outside) must go on. The kernel's own answers stay:
# O_NONBLOCK readers open at once, O_NONBLOCK writers without a reader get ENXIO.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"

plan 6
for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for c in "mkfifo ff; (echo x > ff) & cat ff finishes" "another thread's calls go on while a FIFO open waits" "O_NONBLOCK opens answer as the kernel does"; do
			skip "$mode: $c" "moat cannot start in $mode mode here"
		done
		continue
	fi
	W=$(mktemp -d "$TMP/ws.XXXXXX")
	t0=$(date +%s%N)
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --timeout 20 -- sh -c 'mkfifo ff; (echo x > ff) & cat ff; wait' 2>&1)
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $rc -eq 0 ] && [ "$out" = x ] && [ $ms -lt 10000 ]
	ok $? "$mode: mkfifo ff; (echo x > ff) & cat ff finishes ($ms ms, rc $rc)" "$out"

	t0=$(date +%s%N)
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --timeout 20 -- "$PY" -c "
import os, threading, time
os.mkfifo('f2')
got = []
def reader():
    with open('f2') as f:
        got.append(f.read())
t = threading.Thread(target=reader)
t.start()
time.sleep(0.5)
for i in range(50):
    os.stat('.')
with open('marker', 'w') as f:
    f.write('written while the reader waited')
with open('f2', 'w') as f:
    f.write('x')
t.join()
print('read', got)
" 2>&1)
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $rc -eq 0 ] && [ "$out" = "read ['x']" ] && [ -s "$W/marker" ] && [ $ms -lt 10000 ]
	ok $? "$mode: another thread's calls go on while a FIFO open waits ($ms ms, rc $rc)" "$out"

	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --timeout 20 -- "$PY" -c "
import errno, os
os.mkfifo('f3')
try:
    os.open('f3', os.O_WRONLY | os.O_NONBLOCK); print('writer opened')
except OSError as e:
    print('writer', errno.errorcode[e.errno])
r = os.open('f3', os.O_RDONLY | os.O_NONBLOCK)
print('reader nonblock', bool(os.get_blocking(r)) is False)
w = os.open('f3', os.O_WRONLY)
print('writer blocking', os.get_blocking(w))
os.write(w, b'y'); print('read', os.read(r, 1))
" 2>&1)
	expect=$(printf '%s\n' "writer ENXIO" "reader nonblock True" "writer blocking True" "read b'y'")
	[ "$out" = "$expect" ]
	ok $? "$mode: O_NONBLOCK opens answer as the kernel does; a blocking writer's fd is blocking" "$out"
done
finish
