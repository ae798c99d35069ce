# One line per call, for the programs that compare moat's answers with the kernel's
# (tests/compat/compat.sh, tests/live/vfs/kernel-view.sh): copied beside them and
# imported from there; run them with python3 -B, so that no bytecode is left behind.
import errno


def t(name, f):
    """Call f(): print "NAME ok [RESULT]", or "NAME ERRNO" (EEXIST, ...) if it raised."""
    try:
        r = f()
    except OSError as e:
        print(name, errno.errorcode[e.errno])
        return
    if r is None:
        print(name, "ok")
    else:
        print(name, "ok", r)
