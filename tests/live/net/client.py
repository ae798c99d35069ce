#!/usr/bin/env python3
"""Clients run inside the sandbox; each prints one line the test matches.

  client.py tcp HOST PORT [block|nonblock]   echo round trip: "echo ok" or "error ERRNO"
  client.py udp PORT...                      sendto 127.0.0.1:PORT each: "sent P ack" / "error P ERRNO"
  client.py dns NAME [SERVER [PORT]]         one A query: "rcode N answers M" or "error ERRNO"
  client.py resolve NAME                     getaddrinfo: "resolved IP" or "gaierror N"
  client.py socket FAMILY TYPE [PROTO]       socket(): "created" or "error ERRNO"
"""
import socket
import struct
import sys
import time


def tcp(host, port, mode="nonblock"):
    t = time.monotonic()
    try:
        if mode == "block":
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            s.connect((host, int(port)))
        else:
            s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"moat-echo")
        d = s.recv(100)
        print("echo ok" if d == b"moat-echo" else "echo wrong %r" % d)
    except OSError as e:
        print("error %s %.2f" % (e.errno, time.monotonic() - t))
        return 1
    return 0


def udp(*ports):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    for p in ports:
        try:
            s.sendto(b"dgram-" + p.encode(), ("127.0.0.1", int(p)))
            s.recv(100)
            print("sent %s ack" % p)
        except OSError as e:
            print("error %s %s" % (p, e.errno))
    return 0


def dns(name, server="127.0.0.1", port="53"):
    q = struct.pack(">HHHHHH", 0x4d54, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        s.sendto(q, (server, int(port)))
        r = s.recv(512)
    except OSError as e:
        print("error %s" % e.errno)
        return 1
    print("rcode %d answers %d" % (r[3] & 0xF, struct.unpack(">H", r[6:8])[0]))
    return 0


def resolve(name):
    try:
        print("resolved " + socket.getaddrinfo(name, 80, socket.AF_INET)[0][4][0])
    except socket.gaierror as e:
        print("gaierror %s" % e.errno)
        return 1
    return 0


def sock(family, type_, proto="0"):
    try:
        socket.socket(getattr(socket, family), getattr(socket, type_), int(proto)).close()
        print("created")
    except OSError as e:
        print("error %s" % e.errno)
        return 1
    return 0


if __name__ == "__main__":
    f = {"tcp": tcp, "udp": udp, "dns": dns, "resolve": resolve, "socket": sock}[sys.argv[1]]
    sys.exit(f(*sys.argv[2:]))
