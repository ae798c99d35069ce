#!/usr/bin/env python3
"""Programs run inside the sandbox by tests/escape/net; each prints lines the test matches.
Every effect a test relies on is checked from outside (a server's log, a port, a clock).

  probe.py unspec ALLOWED DENIED     UDP: one datagram to 127.0.0.1:ALLOWED, then sendto,
                                     sendmsg and sendmmsg to 127.0.0.1:DENIED with
                                     sin_family = AF_UNSPEC: "FORM sent N" / "FORM error E"
  probe.py listen SECONDS            TCP listen() without bind: "listen ok PORT" or
                                     "listen error E", then stays SECONDS for the host
  probe.py rights PATH N             unix stream to PATH: N fds of one message, then one
                                     message of 1024 one-byte iovecs: "rights sent B" ...
  probe.py block KIND                one thread blocks sending (KIND: stream, dgram) or
                                     connecting (backlog) while another stats: "stats N
                                     max_ms M" then, once the peer drains, "unblocked R"
  probe.py connect PATH              unix stream connect to PATH and send: "connect ok",
                                     "connect error E", "send error E"
  probe.py creds PATH WHO            unix stream to PATH, one message with SCM_CREDENTIALS
                                     claiming pid WHO ("self": its own pid, uid and gid; a
                                     number: that pid): "creds sent N" / "creds error E"
  probe.py pair KIND                 a socketpair (KIND: stream, dgram) between this process,
                                     the receiver (SO_PASSCRED), and a child it forks, which
                                     sends its own credentials, then claims the receiver's
                                     pid: "pair KIND got PID UID GID want PID UID GID" as
                                     the receiver read them, "pair KIND forged error E"
  probe.py forge PATH                unix stream to PATH, then as a sender without CAP_SETUID
                                     (root drops to 65534 where it can) one message claiming
                                     its own pid and a uid not its own: "forge as UID claims
                                     UID2", then "forge sent N" / "forge error E"
  probe.py mark PORT                 UDP to 127.0.0.1:PORT: "marked" with SO_MARK as control
                                     data ("mark sent N" / "mark error E"), then "plain"
  probe.py dgram PATH                unix datagram sendto PATH: "sendto sent N" / "sendto error E"
  probe.py bind PATH                 unix bind to PATH: "bind ok" / "bind error E"
"""
import ctypes
import ctypes.util
import os
import socket
import struct
import sys
import threading
import time

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def call(label, fn):
    r = fn()
    if r < 0:
        print(label, "error", ctypes.get_errno(), flush=True)
    else:
        print(label, "sent", r, flush=True)


def unspec(allowed, denied):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Namespaced, this installs a host-side socket at s's fd: what the forms below reuse.
    s.sendto(b"allowed", ("127.0.0.1", int(allowed)))
    sa = struct.pack("=HH4s8x", socket.AF_UNSPEC, socket.htons(int(denied)),
                     socket.inet_aton("127.0.0.1"))
    sab = ctypes.create_string_buffer(sa, len(sa))
    call("sendto", lambda: libc.sendto(s.fileno(), b"unspec-sendto", 13, 0, sab, len(sa)))
    data = ctypes.create_string_buffer(b"unspec-sendmsg")
    iov = ctypes.create_string_buffer(struct.pack("PN", ctypes.addressof(data), 14), 16)
    hdr = struct.pack("PI4xPNPNi4x", ctypes.addressof(sab), len(sa), ctypes.addressof(iov), 1,
                      0, 0, 0)
    msg = ctypes.create_string_buffer(hdr, len(hdr))
    call("sendmsg", lambda: libc.sendmsg(s.fileno(), msg, 0))
    data2 = ctypes.create_string_buffer(b"unspec-sendmmsg")
    iov2 = ctypes.create_string_buffer(struct.pack("PN", ctypes.addressof(data2), 15), 16)
    hdr2 = struct.pack("PI4xPNPNi4x", ctypes.addressof(sab), len(sa), ctypes.addressof(iov2), 1,
                       0, 0, 0)
    mm = ctypes.create_string_buffer(hdr2 + b"\0" * 8, len(hdr2) + 8)
    call("sendmmsg", lambda: libc.sendmmsg(s.fileno(), mm, 1, 0))


def listen(seconds):
    s = socket.socket()
    try:
        s.listen(5)
        print("listen ok", s.getsockname()[1], flush=True)
    except OSError as e:
        print("listen error", e.errno, flush=True)
    time.sleep(float(seconds))


def rights(path, n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(n))]
    try:
        print("rights sent", socket.send_fds(s, [b"rights"], fds), flush=True)
    except OSError as e:
        print("rights error", e.errno, flush=True)
    try:
        print("iovecs sent", s.sendmsg([b"i"] * 1024), flush=True)
    except OSError as e:
        print("iovecs error", e.errno, flush=True)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the server closes once it has read everything


def block(kind):
    """Blocks one thread on a peer that does not read (nothing outside is involved:
    socketpair and listen/connect are the sandbox's own) and times stat() meanwhile."""
    result = []
    if kind == "stream":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        chunk = b"x" * 65536

        def blocker():
            sent = 0
            for _ in range(64):  # far more than the socket buffers hold
                sent += a.sendmsg([chunk])
            result.append(sent)
    elif kind == "dgram":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)

        def blocker():
            for _ in range(2000):  # the receive queue holds far fewer
                a.sendmsg([b"d" * 1024])
            result.append(2000)
    else:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind("backlog.sock")
        srv.listen(0)
        held = []

        def blocker():
            for _ in range(8):  # a backlog of 0 takes one or two; the next waits
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect("backlog.sock")
                held.append(c)
            result.append(len(held))
    t = threading.Thread(target=blocker, daemon=True)
    t.start()
    time.sleep(0.5)
    blocked = t.is_alive()
    worst, n = 0.0, 0
    for _ in range(200):
        t0 = time.monotonic()
        os.stat(".")
        worst = max(worst, time.monotonic() - t0)
        n += 1
    print("blocked", blocked, "stats", n, "max_ms %.0f" % (worst * 1000), flush=True)
    # Drain the peer: the blocked call then completes and returns its real result.
    end = time.monotonic() + 10
    while t.is_alive() and time.monotonic() < end:
        if kind == "backlog":
            srv.settimeout(0.2)
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
        else:
            b.settimeout(0.2)
            try:
                b.recv(1 << 20)
            except OSError:
                pass
    t.join(1)
    print("unblocked", result[0] if result else "no", flush=True)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        print("connect ok", flush=True)
    except OSError as e:
        print("connect error", e.errno, flush=True)
    try:
        s.send(b"hello")
        print("send ok", flush=True)
    except OSError as e:
        print("send error", e.errno, flush=True)


def creds(path, who):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    pid = os.getpid() if who == "self" else int(who)
    anc = [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS,
            struct.pack("iII", pid, os.getuid(), os.getgid()))]
    try:
        print("creds sent", s.sendmsg([b"creds"], anc), flush=True)
    except OSError as e:
        print("creds error", e.errno, flush=True)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # alive until the server has looked at its /proc/PID


def send_creds(s, pid, uid, gid, data=b"c"):
    anc = [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("iII", pid, uid, gid))]
    try:
        return "sent %d" % s.sendmsg([data], anc)
    except OSError as e:
        return "error %d" % e.errno


def pair(kind):
    typ = socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM
    rcv, snd = socket.socketpair(socket.AF_UNIX, typ)
    rcv.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    res_r, res_w = os.pipe()
    child = os.fork()
    if child == 0:
        rcv.close()
        ok = send_creds(snd, os.getpid(), os.getuid(), os.getgid())
        forged = send_creds(snd, os.getppid(), os.getuid(), os.getgid(), b"f")
        os.write(res_w, ("%s|%s" % (ok, forged)).encode())
        os._exit(0)
    snd.close()
    os.close(res_w)
    os.waitpid(child, 0)
    res = os.read(res_r, 200).decode()
    ok, forged = res.split("|")
    got = "none"
    rcv.settimeout(5)
    try:
        d, anc, _, _ = rcv.recvmsg(16, socket.CMSG_SPACE(12))
        for level, typ_, data in anc:
            if level == socket.SOL_SOCKET and typ_ == socket.SCM_CREDENTIALS:
                got = "%d %d %d" % struct.unpack("iII", data[:12])
    except OSError as e:
        got = "error %s" % (e.errno or "timeout")
    # the child's pid as fork() told the receiver; its ids are the receiver's own
    print("pair", kind, "sender", ok, flush=True)
    print("pair", kind, "got", got, "want", child, os.getuid(), os.getgid(), flush=True)
    print("pair", kind, "forged", forged, flush=True)


def forge(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if os.getuid() == 0:
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
        except OSError:
            pass  # no CAP_SETUID: root stays, without the capability to claim others
    claim = 0 if os.getuid() != 0 else 12345
    print("forge as", os.getuid(), "claims", claim, flush=True)
    print("forge", send_creds(s, os.getpid(), claim, os.getgid(), b"forged"), flush=True)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)


def mark(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = ("127.0.0.1", int(port))
    try:
        anc = [(socket.SOL_SOCKET, socket.SO_MARK, struct.pack("I", 42))]
        print("mark sent", s.sendmsg([b"marked"], anc, 0, dest), flush=True)
    except OSError as e:
        print("mark error", e.errno, flush=True)
    print("plain sent", s.sendmsg([b"plain"], [], 0, dest), flush=True)


def dgram(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        print("sendto sent", s.sendto(b"dgram", path), flush=True)
    except OSError as e:
        print("sendto error", e.errno, flush=True)


def bind(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
        print("bind ok", flush=True)
    except OSError as e:
        print("bind error", e.errno, flush=True)


if __name__ == "__main__":
    cmds = {"unspec": unspec, "listen": listen, "rights": rights, "block": block,
            "connect": connect, "dgram": dgram, "bind": bind, "creds": creds,
            "mark": mark, "pair": pair, "forge": forge}
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
