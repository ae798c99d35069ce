#!/usr/bin/env python3
"""A warm start's first exec runs the file checked (interposer/core/firstexec.c).

moat serve hands a request to a sandbox whose command waits at its exec. The supervisor
checks the program when the request arrives and the command runs it by that file's fd,
with no exec stop. Here a process outside the sandbox (this test, on the host) renames
another program over the requested name after the check and before the exec (the exec
is held in the notifier by the MOAT_TEST_NOTIFY_DELAY hook): what runs must still be the
file checked, seen from outside by its output. With the exec by name the kernel would
run the new file. Then what the program sees of itself must be what `moat run` gives
it (argv, /proc/self/exe, comm), and a #! script must still run with its own name.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.environ["MOAT_SRC"]
sys.path.insert(0, os.path.join(SRC, "sdk", "python"))
sys.path.insert(0, os.path.join(SRC, "tests", "live", "serve"))
import moat  # noqa: E402
import serve as S  # noqa: E402  (its TAP counter, server start and the pool's runs)

MOAT = os.environ["MOAT"]
HOLD_MS = 1500


def skip(name, why):
    S.n += 1
    print(f"ok {S.n} - {name} # SKIP {why}")


SELF = ("import os;print(open('/proc/self/cmdline').read().split(chr(0))[:1],"
        "os.readlink('/proc/self/exe'),open('/proc/self/comm').read().strip())")


def hooks_built():
    try:
        with open(os.path.join(os.environ["MOAT_BUILD"], "moat-config.h")) as f:
            return "#define MOAT_TEST_HOOKS 1" in f.read()
    except OSError:
        return False


def main():
    print("1..5")
    tmp = tempfile.mkdtemp(prefix="moat-pool-exec.")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    # Two dynamic ELF programs that tell themselves apart by their output.
    shutil.copy("/bin/echo", os.path.join(ws, "first"))
    shutil.copy("/bin/pwd", os.path.join(ws, "other"))
    with open(os.path.join(ws, "s.sh"), "w") as f:
        f.write('#!/bin/sh\necho "$0 $1"\n')
    os.chmod(os.path.join(ws, "s.sh"), 0o755)
    if hooks_built():  # the server's runs inherit it
        os.environ["MOAT_TEST_NOTIFY_DELAY"] = f"{HOLD_MS}:execve,execveat"
    server = S.start_server(tmp, os.path.join(tmp, "s.sock"))
    try:
        run_checks(tmp, ws, os.path.join(tmp, "s.sock"))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if S.failed else 0)


def run_checks(tmp, ws, sock):
    try:
        sb = moat.Sandbox(socket=sock, workspace=ws, mode="namespaced")
    except moat.MoatError as e:
        for t in range(5):
            skip(f"check {t + 1}", f"no namespaced sandbox here: {e}")
        return
    with sb:
        if not hooks_built():
            for t in ("a name swapped after the check does not change what runs",
                      "the name swapped is what the next exec finds"):
                skip(t, "not a test_hooks build (no MOAT_TEST_NOTIFY_DELAY to hold the exec)")
        else:
            res = {}

            def run():
                t0 = time.monotonic()
                res["r"] = sb.run(["./first", "checked"])
                res["secs"] = time.monotonic() - t0

            th = threading.Thread(target=run)
            th.start()
            time.sleep(HOLD_MS / 2000)  # checked by now, held in the notifier
            os.rename(os.path.join(ws, "other"), os.path.join(ws, "first"))
            th.join(30)
            r = res.get("r")
            out = r.stdout if r else None
            S.check(r is not None and out == "checked\n" and res["secs"] >= HOLD_MS / 1000,
                  "a name swapped after the check does not change what runs",
                  f"stdout={out!r} secs={res.get('secs')} stderr={r.stderr if r else None!r}")
            # The next exec sees the swap: the rename did happen, and by name it counts.
            r = sb.run(["./first", "checked"])
            S.check(r.stdout.strip() == sb.workspace or r.stdout.strip().endswith("/ws"),
                  "the name swapped is what the next exec finds", f"stdout={r.stdout!r}")
        pooled = sb.run(["python3", "-c", SELF])
        cold = subprocess.run([MOAT, "run", "-q", "--mode", "namespaced", "--", "python3", "-c",
                               SELF], cwd=ws, capture_output=True, text=True, timeout=60)
        S.check(pooled.exit_status == 0 and pooled.stdout == cold.stdout,
              "argv[0], /proc/self/exe and comm of python3 as under moat run",
              f"pooled={pooled.stdout!r} {pooled.stderr!r} cold={cold.stdout!r} {cold.stderr!r}")
        # python3 is a symlink (by name, for its comm); these are files of their own,
        # found on PATH and run by fd.
        bad = []
        for argv in (["cat", "/proc/self/cmdline"], ["readlink", "/proc/self/exe"],
                     ["cat", "/proc/self/comm"]):
            pooled = sb.run(argv)
            cold = subprocess.run([MOAT, "run", "-q", "--mode", "namespaced", "--"] + argv,
                                  cwd=ws, capture_output=True, text=True, timeout=60)
            if pooled.exit_status != 0 or pooled.stdout != cold.stdout:
                bad.append((argv, pooled.stdout, pooled.stderr, cold.stdout, cold.stderr))
        S.check(not bad, "argv, /proc/self/exe and comm of a program run by fd as under moat run",
                bad)
        r = sb.run(["./s.sh", "x"])
        S.check(r.exit_status == 0 and r.stdout == "./s.sh x\n",
              "a #! script runs under its own name", f"stdout={r.stdout!r} stderr={r.stderr!r}")


if __name__ == "__main__":
    main()
