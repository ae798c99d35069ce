#!/usr/bin/env python3
"""moat serve's warm runs see what the policy hides no more than a cold run does.

A warm run (moat serve's pool) builds its mount namespace, covering every hidden path
that exists with a stub, before the exec it will serve is asked for. A `put` of a new
file after that, a `.env` say (the SDK's create, put, run), lands in the workspace
that run's namespace shows by a bind, uncovered: its read-only opens are native
(the covered view is the whole guarantee), so the command would read the hidden file.
Checked from outside: what the commands printed. And an exec without an "id" (the
protocol's "may") gets its answer like any other, the server living on.
"""
import json
import os
import shutil
import socket
import sys
import tempfile
import time

SRC = os.environ["MOAT_SRC"]
sys.path.insert(0, os.path.join(SRC, "sdk", "python"))
sys.path.insert(0, os.path.join(SRC, "tests", "live", "serve"))
import moat  # noqa: E402
import serve as S  # noqa: E402  (its TAP counter, server start and the pool's runs)


def main():
    print("1..3")
    tmp = tempfile.mkdtemp(prefix="moat-pool-hidden.")
    sock = os.path.join(tmp, "s.sock")
    server = S.start_server(tmp, sock)
    try:
        run_checks(server, sock)
        S.check(server.poll() is None, "the server lives on", open(os.path.join(tmp, "server.log")).read()[-2000:])
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if S.failed else 0)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def wait_built(server, sandbox, secs=20):
    """Every warm run of sandbox has its command (the keeper forks it once the mount
    namespace, stubs and all, is built)."""
    end = time.time() + secs
    while time.time() < end:
        pids = S.warm_runs(server.pid, sandbox)
        if pids and all(any(children(k) for k in children(p)) for p in pids):
            return True
        time.sleep(0.05)
    return False


def run_checks(server, sock):
    secret = "moat-secret-%d" % os.getpid()
    try:
        sb = moat.Sandbox(socket=sock, mode="namespaced")
    except moat.MoatError as e:
        for t in range(2):
            S.n += 1
            print(f"ok {S.n} - check {t + 1} # SKIP no namespaced sandbox here: {e}")
        return
    with sb:
        wait_built(server, sb.id)
        sb.put(".env", secret + "\n")
        outs = [sb.run(["sh", "-c", "cat .env 2>&1; cat ./.env 2>&1"]) for _ in range(4)]
        S.check(all(secret not in r.stdout and r.stdout for r in outs),
                "a .env put after the pool was built is hidden from every exec",
                [r.stdout for r in outs])
        # the raw protocol: an exec without an id, on a warm run
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        f = s.makefile("rwb")
        f.write(b'{"op":"create","id":1}\n')
        f.flush()
        sid = json.loads(f.readline())["sandbox"]
        wait_built(server, sid)
        f.write(json.dumps({"op": "exec", "sandbox": sid, "argv": ["echo", "no-id"]}).encode() + b"\n")
        f.flush()
        line = f.readline()
        a = json.loads(line) if line else {}
        s.close()
        S.check(a.get("ok") is True and a.get("id") is None and a["result"]["stdout"] == "no-id\n",
                "an exec without an id gets its result", line)


if __name__ == "__main__":
    main()
