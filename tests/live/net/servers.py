#!/usr/bin/env python3
"""Test servers for tests/live/net and tests/escape/net, run on the host, outside the sandbox.

  servers.py tcp  PORTFILE LOGFILE    TCP echo on 127.0.0.1:0; LOGFILE holds the accept count
  servers.py udp  PORTFILE LOGFILE    UDP on 127.0.0.1:0; appends each datagram, answers "ack:"
  servers.py dns  PORTFILE LOGFILE [PORT]   UDP DNS on 127.0.0.1:PORT (default 0); logs each
                                      question name and answers 192.0.2.1 for every A query
  servers.py unix PORTFILE LOGFILE PATH    unix stream at PATH (PORTFILE says "0"); per
                                      connection appends "conn fds F bytes B" to LOGFILE once
                                      the client shuts down its side: the fds passed with
                                      SCM_RIGHTS and the bytes it sent; before it, for the
                                      first message, "creds PID UID GID CMDLINE" as the
                                      kernel gave them (SO_PASSCRED), CMDLINE that pid's
PORTFILE is written (atomically) once the socket listens, with the port number.
Every effect a test checks is observed here, from outside the sandbox.
"""
import os
import socket
import struct
import sys
import threading


def ready(path, value):
    with open(path + ".tmp", "w") as f:
        f.write(str(value))
    os.rename(path + ".tmp", path)


def tcp(portfile, log):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    ready(log, 0)
    ready(portfile, s.getsockname()[1])
    n = 0
    while True:
        c, _ = s.accept()
        n += 1
        ready(log, n)  # atomically: the test reads it while we accept

        def echo(c):
            try:
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    c.sendall(d)
            except OSError:
                pass
            c.close()
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def udp(portfile, log):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    open(log, "w").close()
    ready(portfile, s.getsockname()[1])
    while True:
        d, a = s.recvfrom(4096)
        with open(log, "a") as f:
            f.write(d.decode(errors="replace") + "\n")
        s.sendto(b"ack:" + d, a)


def qname(msg):
    i, labels = 12, []
    while i < len(msg) and msg[i]:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode(errors="replace"))
        i += 1 + n
    return ".".join(labels), i + 5


def dns(portfile, log, port=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    open(log, "w").close()
    ready(portfile, s.getsockname()[1])
    while True:
        d, a = s.recvfrom(4096)
        if len(d) < 12:
            continue
        name, end = qname(d)
        with open(log, "a") as f:
            f.write(name + "\n")
        hdr = struct.pack(">HHHHHH", struct.unpack(">H", d[:2])[0], 0x8180, 1, 1, 0, 0)
        ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("192.0.2.1")
        s.sendto(hdr + d[12:end] + ans, a)


def unix(portfile, log, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    s.listen(16)
    open(log, "w").close()
    ready(portfile, 0)
    while True:
        c, _ = s.accept()
        fds = nbytes = 0
        creds = None
        while True:
            d, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(4 * 253) + socket.CMSG_SPACE(12))
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS and not creds:
                    pid, uid, gid = struct.unpack("iII", data[:12])
                    try:
                        with open("/proc/%d/cmdline" % pid, "rb") as f:
                            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    except OSError:
                        cmd = "-"
                    creds = "creds %d %d %d %s" % (pid, uid, gid, cmd)
                    with open(log, "a") as f:
                        f.write(creds + "\n")
                elif level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    got = struct.unpack("%di" % (len(data) // 4), data[:len(data) // 4 * 4])
                    fds += len(got)
                    for fd in got:
                        os.fstat(fd)  # a real, open fd
                        os.close(fd)
            if not d:
                break
            nbytes += len(d)
        with open(log, "a") as f:
            f.write("conn fds %d bytes %d\n" % (fds, nbytes))
        c.close()


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "unix":
        unix(sys.argv[2], sys.argv[3], sys.argv[4])
    elif kind == "dns":
        dns(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    else:
        {"tcp": tcp, "udp": udp}[kind](sys.argv[2], sys.argv[3])
