#!/usr/bin/env python3
"""moat serve as the init of a pid namespace (a container's entry point) reaps orphans.

Each `moat run` a server starts leaves its lastclose helper (interposer/core/lastclose.h)
to the namespace's init when it is made; as that init, the server must reap it after
its last close, or one zombie per exec would stay for as long as it serves. Checked from
outside: the server's children after four execs, by their state.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["MOAT_SRC"], "sdk", "python"))
import moat  # noqa: E402
import lib  # noqa: E402  (beside this file)

MOAT = os.environ["MOAT"]


def children(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(None, 1)[1].strip()
    except OSError:
        pass
    return ""


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP the stubs' marks (and so the helpers) need root")
        return 0
    if not shutil.which("unshare"):
        print("1..0 # SKIP unshare(1) is missing")
        return 0
    tmp = tempfile.mkdtemp(prefix="moat-serve-init.")
    sock = os.path.join(tmp, "s.sock")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    server = None
    # --kill-child: the server goes with unshare, whatever ends this test
    u = lib.start_server(MOAT, tmp, sock, ["unshare", "--pid", "--fork", "--mount-proc",
                                           "--kill-child"])
    try:
        kids = children(u.pid)
        if len(kids) != 1 or status(kids[0], "NSpid").split()[-1:] != ["1"]:
            print(f"1..0 # SKIP no server as a namespace's init here: {kids}")
            return 0
        server = kids[0]
        print("1..2")
        sb = moat.Sandbox(sock, workspace=ws)
        codes = [sb.run(["cat", "/etc/hostname"]).exit_status for _ in range(4)]
        helpers, zombies = set(), []
        # the last helper's close may take 20 ms, and the helper of the warm run the
        # server builds after each exec comes only once that run reaches its set-up:
        # watch for 5 s until a helper was seen among its children and no zombie is
        # left (a single look right after the execs found neither, one time in four)
        for _ in range(50):
            kids = children(server)
            helpers.update(k for k in kids if status(k, "Name") == "moat-lastclose")
            zombies = [k for k in kids if status(k, "State").startswith("Z")]
            if helpers and not zombies:
                break
            time.sleep(0.1)
        sb.close()
        # the sandbox's warm runs hold live helpers: the server did inherit them
        ok = codes == [0, 0, 0, 0] and len(helpers) >= 1
        print(("ok" if ok else "not ok") + " 1 - four execs ran, and their helpers came to the server")
        if not ok:
            print(f"# exit statuses {codes}, helpers among the server's children: {helpers}")
        print(("ok" if not zombies else "not ok") + " 2 - the server, as init, leaves no zombie child")
        if zombies:
            print(f"# zombies: {[(z, status(z, 'Name')) for z in zombies]}")
        return 0 if ok and not zombies else 1
    finally:
        for pid in (server, u.pid):  # the server, as init, takes its namespace down
            try:
                if pid:
                    os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            u.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(u.pid, signal.SIGKILL)
            u.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
