"""bench/run --containers: the same kind of workloads inside a container, started by
podman under plain runc (the denominator), moat-runtime and gVisor's runsc.

The image is built here from Debian's busybox-static (no registry is reachable), so the
workloads are busybox shell loops, not bench/run's python ones: start-up (`true`), a
stat loop (ash's `[ -e ]` is a builtin: one stat per turn, no fork), a create/write/
close loop (a redirection per turn) and fork+exec of /bin/true. Every column pays the
same podman and conmon start-up; the rows show what a container user sees end to end.

Imported by bench/run, which passes itself in (`h`): the rounds, pairing and medians are
bench/run's own (bench_workloads, summarize, print_table).
"""
import os
import shutil
import subprocess

# podman's defaults (nofile 1048576, nproc) are above the hard limits on some hosts;
# --cgroup-manager cgroupfs works with hybrid (v1) cgroups as with cgroup2.
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
IMAGE = "moat-bench-oci:1"
APPLETS = ("sh", "true", "test", "echo", "cat")
PER_RUN_TIMEOUT = 300


def loop(n, body):
    return ["/bin/sh", "-c", f"i=0; while [ $i -lt {n} ]; do {body}; i=$((i+1)); done"]


# name, description, argv inside the container, setup, reset (bench/run's tuple)
WORKLOADS = [
    ("true", "/bin/true in a container (start-up)", ["/bin/true"], None, None),
    ("stat-20k", "20 000 stat ([ -e ] in busybox sh)", loop(20000, "[ -e /etc/pub ]"),
     None, None),
    ("files-2k", "2 000 create/write/close (busybox sh redirection)",
     ["/bin/sh", "-c", "cd /tmp && i=0; while [ $i -lt 2000 ]; do echo x >f$i; "
      "i=$((i+1)); done"], None, None),
    ("fork-exec", "500 fork+exec of /bin/true (busybox sh)", loop(500, "/bin/true"),
     None, None),
]


class Podman:
    """One column: podman run --runtime RUNTIME in a private store."""

    def __init__(self, name, label, runtime, store, flags=()):
        self.name = name
        self.label = label
        self.runtime = runtime
        self.store = store
        self.flags = list(flags)  # podman's --runtime-flag, for this runtime only
        self.skip = None

    def base(self):
        return ["podman", "--root", os.path.join(self.store, "root"),
                "--runroot", os.path.join(self.store, "runroot"),
                "--cgroup-manager", "cgroupfs", "--events-backend", "file"]

    def argv(self, cmd, wdir, tag):
        return (self.base() + self.flags + ["run", "--rm", "--network", "none"] + ULIMITS +
                ["--runtime", self.runtime, IMAGE] + list(cmd))


def make_image(store, scratch):
    """Import a busybox image into the private store; None or the reason it failed."""
    root = os.path.join(scratch, "oci-rootfs")
    for d in ("bin", "etc", "proc", "dev", "sys", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(root, "bin", a))
    with open(os.path.join(root, "etc", "pub"), "w") as f:
        f.write("public\n")
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    tar = os.path.join(scratch, "oci-rootfs.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    p = subprocess.run(Podman("", "", "", store).base() + ["import", "-q", tar, IMAGE],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        return "podman import failed: " + p.stderr.decode("utf-8", "replace")[-200:]
    return None


def cleanup(store):
    base = Podman("", "", "", store).base()
    for a in (["rm", "-af", "-t", "0"], ["rmi", "-af"]):
        subprocess.run(base + a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # the store's own overlay mounts, deepest first, before the tree is removed
    with open("/proc/self/mounts") as f:
        mounts = [ln.split()[1] for ln in f if ln.split()[1].startswith(store + "/")]
    for m in sorted(mounts, reverse=True):
        subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
    shutil.rmtree(store, ignore_errors=True)


def missing():
    """Why the phase cannot run at all, or None."""
    if os.geteuid() != 0:
        return "containers need root here (rootless podman is not set up)"
    for t in ("podman", "runc", "conmon"):
        if not shutil.which(t):
            return (f"{t} is not installed (MOAT_OCI_DEPS=1 scripts/bootstrap --deps "
                    "installs podman, runc and conmon)")
    if not os.access("/bin/busybox", os.X_OK):
        return "busybox-static is not installed (the image is built from it)"
    return None


def phase(h, moat_runtime, scratch, logdir, rounds):
    """Measure; return (result, columns) or (None, skip line)."""
    why = missing()
    if why:
        return None, why
    store = os.path.join(scratch, "oci-store")
    os.makedirs(store)
    try:
        why = make_image(store, scratch)
        if why:
            return None, why
        cols = [Podman("native", "runc", "runc", store),
                Podman("moat-runtime", "moat-runtime", moat_runtime, store),
                # runsc sets up the network namespace itself unless told there is none
                # ("cannot run with network enabled in root network namespace")
                Podman("runsc", "runsc (gVisor)", "runsc", store,
                       ["--runtime-flag", "network=none"])]
        if not os.access(moat_runtime, os.X_OK):
            cols[1].skip = f"no moat-runtime at {moat_runtime}"
        cols[2].skip = h.ensure_runsc()
        probe_dir = os.path.join(scratch, "oci-probe")
        os.makedirs(probe_dir)
        for c in cols:
            if c.skip:
                continue
            ok, out = h.probe(c.argv(["/bin/true"], probe_dir, "probe"), probe_dir)
            if not ok:
                c.skip = f"cannot start a container: {out}"
        if cols[0].skip:
            return None, "plain runc under podman " + cols[0].skip
        for c in cols:
            if c.skip:
                h.log(f"bench: containers: column {c.label}: skipped: {c.skip}")
        # own directories: the workload names are bench/run's
        work, logs = os.path.join(scratch, "oci-work"), os.path.join(logdir, "oci")
        os.makedirs(work)
        os.makedirs(logs)
        times, fails, inner = h.bench_workloads(None, cols, WORKLOADS, work, logs, rounds,
                                                timeout=PER_RUN_TIMEOUT)
        return h.summarize(WORKLOADS, cols, times, fails, inner), cols
    finally:
        cleanup(store)
