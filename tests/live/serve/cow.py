#!/usr/bin/env python3
"""moat serve with "cow": true, through the Python client, in both modes: the commands'
writes, deletions and renames stay in the sandbox's layer (the host workspace unchanged,
`get` sees them); export writes a tar and its sha256 list; discard drops them; commit
makes the host workspace what the sandbox saw; destroy leaves no overlay in the server's
mount namespace. The result carries the workspace's git commit beside run_id and
policy_sha256. Everything is checked from outside: files on the host, the server's
/proc/PID/mountinfo."""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["MOAT_SRC"], "sdk", "python"))
import moat  # noqa: E402
from serve import warm_runs  # noqa: E402  (this directory: the pool's runs)

MOAT = os.environ["MOAT"]
n = 0
failed = 0
PLAN = 23


def check(cond, name, diag=""):
    global n, failed
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {name}")
    if not cond:
        failed += 1
        for line in str(diag).splitlines()[:20]:
            print(f"# {line}")
    sys.stdout.flush()


def listing(d):
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(root, name)
            rel = os.path.relpath(p, d)
            st = os.lstat(p)
            if os.path.islink(p):
                out.append((rel, "link", os.readlink(p)))
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out.append((rel, oct(st.st_mode & 0o7777), hashlib.sha256(f.read()).hexdigest()))
            else:
                out.append((rel, "dir", oct(st.st_mode & 0o7777)))
    return sorted(set(out))


WORK = ("set -e; echo new > n.txt; echo more >> a.txt; rm c.txt; mv sub/b.txt sub/b2.txt; "
        "rm -rf gone; chmod 600 a.txt; ln -s a.txt l")
INSIDE = ("find . -mindepth 1 | LC_ALL=C sort | while IFS= read -r f; do if [ -L \"$f\" ]; "
          "then echo \"$f l $(readlink \"$f\")\"; elif [ -f \"$f\" ]; then echo \"$f $(stat -c %a \"$f\") "
          "$(sha256sum < \"$f\" | cut -c1-64)\"; else echo \"$f d\"; fi; done")


def host_inside_form(d):
    lines = []
    for rel, kind, v in listing(d):
        if kind == "link":
            lines.append(f"./{rel} l {v}")
        elif kind == "dir":
            lines.append(f"./{rel} d")
        else:
            lines.append(f"./{rel} {kind[2:]} {v}")
    return "\n".join(sorted(lines, key=lambda s: s.encode()))


def make_ws(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "sub"))
    os.makedirs(os.path.join(d, "gone", "deep"))
    for rel, text in (("a.txt", "a\n"), ("c.txt", "c\n"), ("sub/b.txt", "b\n"), ("gone/deep/g", "g\n")):
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    subprocess.run(["git", "init", "-q", "-b", "main", d], check=True)
    subprocess.run(["git", "-C", d, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "one"], check=True)


def overlays(pid, ws):
    with open(f"/proc/{pid}/mountinfo") as f:
        return sum(1 for line in f if f" {ws} " in line and "overlay" in line)


def pool_runs(server_pid, sandbox, exclude=(), secs=20):
    """The warm runs of sandbox but those in exclude, once the pool shows as many as it
    builds (2), or 2 s after the first: the pool starts its runs together, and one
    can show (its exec done) before another built earlier."""
    end, settle, seen = time.time() + secs, None, []
    while time.time() < end and len(seen) < 2 and (settle is None or time.time() < settle):
        seen += [x for x in warm_runs(server_pid, sandbox) if x not in exclude and x not in seen]
        if seen and settle is None:
            settle = time.time() + 2
        time.sleep(0.05)
    return seen


def started_pid(sb, argv):
    events = list(sb.stream(argv))
    pids = [e["pid"] for e in events if isinstance(e, dict) and e.get("event") == "started"]
    return (pids[0] if pids else None), events[-1]


def main():
    print(f"1..{PLAN}")
    if os.geteuid() != 0:
        print("# cow needs root")
        for _ in range(PLAN):
            check(True, "skipped # SKIP not root")
        return 0
    tmp = tempfile.mkdtemp(prefix="moat-test.")
    sock = os.path.join(tmp, "s.sock")
    srv = subprocess.Popen([MOAT, "serve", "--socket", sock], env=dict(os.environ, TMPDIR=tmp),
                           stderr=open(os.path.join(tmp, "server.log"), "ab"))
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        time.sleep(0.2)
        for mode in ("namespaced", "unnamespaced"):
            ws = os.path.join(tmp, f"ws-{mode}")
            make_ws(ws)
            before = listing(ws)
            head = subprocess.run(["git", "-C", ws, "rev-parse", "HEAD"], capture_output=True,
                                  text=True).stdout.strip()
            with moat.Sandbox(socket=sock, workspace=ws, mode=mode, cow=True) as sb:
                r = sb.run(["sh", "-c", WORK + "; " + INSIDE])
                inside = r.stdout.strip()
                check(r.exit_status == 0 and listing(ws) == before and sb.get("n.txt") == b"new\n",
                      f"cow: the commands' changes stay in the sandbox's layer, get sees them [{mode}]",
                      f"{r.exit_status} {r.stderr}")
                check((r.raw.get("workspace_git") or {}).get("commit") == head and
                      len(r.raw.get("run_id", "")) > 0 and len(r.raw.get("policy_sha256", "")) == 64,
                      f"the result carries the workspace's commit, run_id, policy_sha256 [{mode}]",
                      str({k: r.raw.get(k) for k in ("workspace_git", "run_id")}))
                tar = os.path.join(tmp, f"e-{mode}.tar")
                e = sb.export(tar)
                names = tarfile.open(tar).getnames() if os.path.exists(tar) else []
                check("n.txt" in names and ".wh.c.txt" in names and "sub/.wh.b.txt" in names
                      and os.path.exists(tar + ".sha256") and listing(ws) == before,
                      f"export: a tar with the writes and the deletions, and its sha256 list [{mode}]",
                      f"{names} {e}")
                sb.discard()
                check(listing(ws) == before and sb.get("c.txt") == b"c\n",
                      f"discard: the sandbox sees the host workspace again [{mode}]")
                r = sb.run(["sh", "-c", WORK + "; " + INSIDE])
                inside = r.stdout.strip()
                c = sb.commit()
                check(c.get("failed") == 0 and host_inside_form(ws) == inside,
                      f"commit: the host workspace is what the sandbox saw [{mode}]",
                      f"{c.get('failed')}\n--- inside\n{inside}\n--- host\n{host_inside_form(ws)}")
                r = sb.run(["cat", "n.txt"])
                check(r.stdout == "new\n" and sb.commit().get("changes") == [],
                      f"after a commit the layer starts empty over the new workspace [{mode}]",
                      r.stdout + r.stderr)
                try:
                    with moat.Sandbox(socket=sock, workspace=ws, cow=True):
                        pass
                    ok = False
                except moat.MoatError as err:
                    ok = err.code == "busy"
                check(ok, f"a second cow sandbox on the same workspace is refused [{mode}]")
                check(overlays(srv.pid, ws) == 1, f"the overlay is in the server's namespace [{mode}]")
                # Warm starts: a run built ahead is taken, and one built on the overlay
                # a discard replaced is never used (it would show the dropped file).
                sb.run(["sh", "-c", "echo dropped > warm.txt"])
                old = pool_runs(srv.pid, sb.id)
                sb.discard()
                new = pool_runs(srv.pid, sb.id, exclude=old)
                pid, r = started_pid(sb, ["sh", "-c", "cat warm.txt 2>/dev/null; echo end"])
                check(old and pid in new and pid not in old and r.stdout == "end\n",
                      f"cow: an exec after a discard starts warm, in a run built after it [{mode}]",
                      (old, new, pid, r.stdout, r.stderr[-300:]))
            time.sleep(0.3)
            check(overlays(srv.pid, ws) == 0, f"destroy: no overlay is left [{mode}]")
        # limits.disk: the layer is on a tmpfs of that size
        ws = os.path.join(tmp, "ws-disk")
        make_ws(ws)
        with moat.Sandbox(socket=sock, workspace=ws, cow=True, limits={"disk": "8M"}) as sb:
            r = sb.run(["sh", "-c", "dd if=/dev/zero of=big bs=1M count=16 2>&1; true"])
            check("No space left" in r.stdout and not os.path.exists(os.path.join(ws, "big")),
                  "cow with limits.disk 8M: writing 16 MiB to the workspace fails with ENOSPC",
                  r.stdout + r.stderr)
        time.sleep(0.3)
        with open(f"/proc/{srv.pid}/mountinfo") as f:
            left = [line for line in f if "sb-" in line]
        check(not left, "destroy: neither the overlay nor its tmpfs is left", "".join(left))
        try:
            with moat.Sandbox(socket=sock) as sb:
                sb.commit()
            ok = False
        except moat.MoatError as err:
            ok = err.code == "bad_request"
        check(ok, "commit on a sandbox made without cow is a bad_request")
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
