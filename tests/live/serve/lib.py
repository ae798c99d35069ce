"""What the serve tests share: a server started, and waited for until it listens."""
import os
import socket
import subprocess
import time


def start_server(moat, tmp, sock, prefix=()):
    """`moat serve --socket sock` (TMPDIR=tmp, its stderr in tmp/server.log) under the
    command prefix (unshare, say), returned once it listens."""
    p = subprocess.Popen(list(prefix) + [moat, "serve", "--socket", sock],
                         env=dict(os.environ, TMPDIR=tmp),
                         stderr=open(os.path.join(tmp, "server.log"), "ab"))
    for _ in range(200):  # listening, not merely a socket file left by a dead server
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(sock)
            c.close()
            break
        except OSError:
            time.sleep(0.05)
    return p
