#!/usr/bin/env bash
# The command runs in a new session with no controlling terminal (unless --tty), but
# the supervisor performs its opens: /dev/tty must be the caller's terminal, never the
# supervisor's. Each case starts moat from a pty that is its controlling terminal
# (pty-run.py, "the user's terminal"), with moat's own stdio on files, and reads what
# reached that terminal from outside.
. "$MOAT_SRC/tests/lib/tap.sh"

plan 6
HERE="$MOAT_SRC/tests/escape/core"
command -v python3 >/dev/null || skip_all "python3 is needed to drive a terminal"
cd "$TMP" || exit 1

# on_terminal MODE MOAT_ARGS SCRIPT: run SCRIPT under moat, started from a terminal with
# its stdio on files; prints what reached the terminal. The script's own output is in
# out.txt.
on_terminal() {
	python3 "$HERE/pty-run.py" --raw sh -c "exec \"\$0\" run -q --mode $1 $2 -- sh -c '$3' \
		>out.txt 2>&1 </dev/null" "$MOAT" 2>&1
}

cat > ptyc.py <<'PYEOF'
import os, pty
pid, fd = pty.fork()
if pid == 0:
    try:
        with open("/dev/tty", "w") as t:
            t.write("INNER-PTY\n")
    except OSError as e:
        print("child:", e)
    os._exit(0)
out = b""
while True:
    try:
        b = os.read(fd, 100)
    except OSError:
        break
    if not b:
        break
    out += b
os.waitpid(pid, 0)
print("master read:", out)
PYEOF

for mode in namespaced unnamespaced; do
	term=$(on_terminal $mode "" 'echo TTY-LEAK >/dev/tty; echo rc=$?')
	if ! echo "$term" | grep -q TTY-LEAK && grep -q "No such device or address" out.txt; then
		pass "$mode: without --tty, writing /dev/tty reaches no terminal (ENXIO)"
	else
		fail "$mode: without --tty, writing /dev/tty reaches no terminal" \
			"terminal: $term; sandbox: $(cat out.txt)"
	fi

	# control: with --tty the terminal is the command's too
	term=$(on_terminal $mode --tty 'echo TTY-SHARED >/dev/tty')
	echo "$term" | grep -q TTY-SHARED
	ok $? "$mode: with --tty, /dev/tty is the shared terminal (control)" "terminal: $term; sandbox: $(cat out.txt)"

	# a pty the sandbox made its controlling terminal is its /dev/tty
	term=$(on_terminal $mode "--bind /dev/ptmx --bind /dev/pts" 'python3 ptyc.py')
	if grep -q "master read: b.INNER-PTY" out.txt && ! echo "$term" | grep -q INNER-PTY; then
		pass "$mode: a pty the sandbox made is its /dev/tty, not the user's terminal"
	else
		fail "$mode: a pty the sandbox made is its /dev/tty" "terminal: $term; sandbox: $(cat out.txt)"
	fi
done
finish
