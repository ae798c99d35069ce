#!/usr/bin/env bash
# Without --tty the sandbox must neither read what the user types into the terminal
# moat runs from, nor change that terminal's settings. stdout and stderr used to be the
# terminal itself, open read-write: the sandbox read keystrokes from fd 1 and turned
# echo off with TCSETS (which checks neither the fd's mode nor, from outside the
# terminal's session, the caller), and echo stayed off after moat exited. Each case
# starts moat from a pty that is its controlling terminal (pty-run.py), types a
# line once the sandbox is listening on fds 0-2, and reads from outside: the line is
# still unread in the terminal's input queue, nothing of it reached the sandbox (a
# file it wrote), and echo is still on when moat has exited. With --stdin the sandbox
# holds the terminal as its stdin, as asked; moat puts its settings back at the end,
# the line discipline and exclusive mode too: N_NULL swallows whatever is typed and
# TIOCEXCL refuses every other open, and both outlived the run.
. "${MOAT_SRC:?}/tests/lib/tap.sh"

plan 14
HERE="$MOAT_SRC/tests/escape/core"
command -v python3 >/dev/null || skip_all "python3 is needed to drive a terminal"
WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1

# listen.py, run inside: says READY, reads whatever fds 0-2 yield for 3 s into
# got.txt, then clears ECHO on every one of them that is a terminal.
cat >listen.py <<'PYEOF'
import os, select, termios, time
print("READY", flush=True)
got = b""
end = time.monotonic() + 3
while time.monotonic() < end:
    # one select per read: fds 1 and 2 may share one input queue
    for fd in (1, 2, 0):
        if select.select([fd], [], [], 0)[0]:
            try:
                got += os.read(fd, 4096)
            except OSError:
                pass
    time.sleep(0.05)
with open("got.txt", "wb") as f:
    f.write(got)
for fd in (0, 1, 2):
    try:
        a = termios.tcgetattr(fd)
        a[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, a)
    except termios.error:
        pass
print("SANDBOX-DONE", flush=True)
PYEOF

# ldisc.py, run inside: a line discipline other than N_TTY on fd 0, and TIOCEXCL
cat >ldisc.py <<'PYEOF'
import fcntl, os, struct
# written to a file: N_NULL swallows output to the terminal too
with open("ldisc.out", "w") as out:
    for ld in (27, 13, 5, 2):  # N_NULL, N_HDLC, N_X25, N_MOUSE
        try:
            fcntl.ioctl(0, 0x5423, struct.pack("i", ld))  # TIOCSETD
            out.write("SETD %d\n" % ld)
            break
        except OSError:
            pass
    else:
        out.write("SETD-FAILED\n")
    fcntl.ioctl(0, 0x540C)  # TIOCEXCL
    out.write("SET-DONE\n")
os._exit(0)
PYEOF

SECRET="typed-$$-$RANDOM"
for mode in namespaced unnamespaced; do
	rm -f got.txt
	term=$(python3 "$HERE/pty-run.py" --type "$SECRET" "$MOAT" run -q --mode "$mode" -- python3 listen.py 2>&1)

	if [ -e got.txt ] && ! grep -q "$SECRET" got.txt && echo "$term" | grep -q "UNREAD b'$SECRET"; then
		pass "$mode: the line typed into the terminal is still unread, and not in the sandbox"
	else
		fail "$mode: the line typed into the terminal is still unread, and not in the sandbox" \
			"sandbox read: $(cat got.txt 2>&1); terminal: $term"
	fi
	echo "$term" | grep -qx "ECHO on"
	ok $? "$mode: the terminal's echo is still on after moat exited" "$term"
	echo "$term" | grep -q "SANDBOX-DONE" && echo "$term" | grep -qx "EXIT 0"
	ok $? "$mode: the sandbox's output reached the terminal, moat exited 0 (control)" "$term"

	# --stdin hands the terminal over as stdin, as asked: its settings are put back
	term=$(python3 "$HERE/pty-run.py" --type "$SECRET" "$MOAT" run -q --mode "$mode" --stdin -- \
		python3 listen.py 2>&1)
	echo "$term" | grep -qx "ECHO on" && echo "$term" | grep -q "SANDBOX-DONE"
	ok $? "$mode: with --stdin, echo turned off on stdin is on again after moat exited" "$term"

	# --stdin and --tty: a line discipline that swallows input (N_NULL, else another
	# one this kernel has) and exclusive mode on the terminal are put back too
	for opt in --stdin --tty; do
		rm -f ldisc.out
		term=$(python3 "$HERE/pty-run.py" "$MOAT" run -q --mode "$mode" $opt -- \
			python3 ldisc.py 2>&1)
		term="$term
$(cat ldisc.out 2>&1)"
		if echo "$term" | grep -q "SETD-FAILED"; then
			skip "$mode $opt: the line discipline and exclusive mode are put back" \
				"no line discipline other than N_TTY could be set: $term"
			continue
		fi
		echo "$term" | grep -qx "LDISC 0" && echo "$term" | grep -qx "EXCL 0" &&
			echo "$term" | grep -q "SET-DONE"
		ok $? "$mode $opt: the line discipline and exclusive mode are put back" "$term"
	done

	# control: with --tty the terminal is shared, as documented
	term=$(python3 "$HERE/pty-run.py" --type "$SECRET" "$MOAT" run -q --mode "$mode" --tty -- \
		sh -c 'echo READY; read -r line; echo "got <$line>"' 2>&1)
	echo "$term" | grep -q "got <$SECRET>"
	ok $? "$mode: with --tty the command reads the terminal (control)" "$term"
done
finish
