#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Maintainer-only: refresh the number columns of data/syscalls.csv from libseccomp.

Numbers are never typed by hand: every x86_64 / aarch64 number is asked of the
installed libseccomp (seccomp_syscall_resolve_name_arch / _num_arch through ctypes),
so the table agrees with the library the filter is built with. The curated columns
(nargs, args, categories, handling, errno, note, the per-mode unns, fast,
continues, mode_note, and access) are kept as they are.

  - a name libseccomp knows on an ABI gets that number; one it does not know there
    gets an empty cell (libseccomp's negative pseudo-numbers mean "not on this ABI");
  - a name libseccomp reports that the CSV lacks is added with handling 'deny' ENOSYS:
    a syscall nobody has looked at must not run natively by accident (fail closed);
  - a curated row that libseccomp knows on no ABI (a syscall newer than the library)
    keeps its policy and stays without numbers until a newer libseccomp knows it.

Usage: gen/refresh-csv.py [CSV]   (rewrites CSV in place; default data/syscalls.csv)
"""

import csv
import ctypes
import ctypes.util
import datetime
import os
import platform
import sys

ABIS = ("x86_64", "aarch64")
COLUMNS = ("name", "x86_64", "aarch64", "nargs", "args", "categories", "handling", "errno", "note",
           "unns", "fast", "continues", "mode_note", "access")
# Highest number probed when enumerating an ABI. The generic table is below 1024 on
# every ABI moat tabulates (x32's 512+ numbers are a separate ABI libseccomp keeps apart).
PROBE_MAX = 1024


def load_libseccomp():
    path = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(path)
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name_arch.restype = ctypes.c_int
    # Returns a malloc'ed string: keep it as a raw pointer so it can be freed.
    lib.seccomp_syscall_resolve_num_arch.argtypes = [ctypes.c_uint32, ctypes.c_int]
    lib.seccomp_syscall_resolve_num_arch.restype = ctypes.c_void_p

    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]

    lib.seccomp_version.restype = ctypes.POINTER(Version)
    v = lib.seccomp_version().contents
    return lib, "%u.%u.%u" % (v.major, v.minor, v.micro)


def read_csv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("#")]
    for row in csv.DictReader(lines):
        rows.append(row)
    return rows


def sort_key(row):
    """Canonical row order, which gen-table.py checks: by x86_64 number, then
    aarch64-only rows by their number, then rows without any number by name."""
    if row["x86_64"] != "":
        return (0, int(row["x86_64"]), row["name"])
    if row["aarch64"] != "":
        return (1, int(row["aarch64"]), row["name"])
    return (2, 0, row["name"])


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "syscalls.csv")
    lib, version = load_libseccomp()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.free.argtypes = [ctypes.c_void_p]

    rows = {r["name"]: r for r in read_csv(path)}
    known = {}  # abi -> {name: nr}
    for abi in ABIS:
        arch = lib.seccomp_arch_resolve_name(abi.encode())
        if arch == 0:
            sys.exit("libseccomp does not know the ABI " + abi)
        names = {}
        for nr in range(PROBE_MAX):
            p = lib.seccomp_syscall_resolve_num_arch(arch, nr)
            if p:
                names[ctypes.string_at(p).decode()] = nr
                libc.free(p)
        for name in rows:
            nr = lib.seccomp_syscall_resolve_name_arch(arch, name.encode())
            if nr >= 0:
                names[name] = nr
        known[abi] = names

    added = []
    for abi in ABIS:
        for name in known[abi]:
            if name not in rows:
                added.append(name)
                rows[name] = {c: "" for c in COLUMNS}
                rows[name].update(name=name, nargs="0", categories="other", handling="deny",
                                  errno="ENOSYS",
                                  note="reported by libseccomp but not curated yet: denied until reviewed")
    for name, row in rows.items():
        for abi in ABIS:
            nr = known[abi].get(name)
            row[abi] = "" if nr is None else str(nr)

    today = datetime.date.today().isoformat()
    with open(path, "w", newline="") as f:
        f.write("# moat syscall table: the source of truth for gen/gen-table.py (STYLE.md section 7).\n")
        f.write("# Numbers from libseccomp %s, refreshed by gen/refresh-csv.py on %s (host kernel %s).\n"
                % (version, today, platform.release()))
        f.write("# Curated columns: nargs, args (enum sc_arg_kind names), categories (enum sc_category\n")
        f.write("# names joined by '|'), handling (native notify deny kill args), errno, note.\n")
        f.write("# Per-mode columns (moat syscalls --json prints the resulting class per mode): unns\n")
        f.write("# (enosys: refused unnamespaced), fast (namespaced unless --strict-hide: native, or\n")
        f.write("# native-ro for opens native when read-only), continues (yes: the supervisor\n")
        f.write("# answers CONTINUE after its check in every mode), mode_note (why, when not the note).\n")
        f.write("# access: per argument, what the call does with the object it names (a path, an\n")
        f.write("# address, or the fd of an fd-metadata call), '-' for the others; gen-table.py lists\n")
        f.write("# the words. replay, dispatch and the socket layer take a call's access from here.\n")
        f.write("# Rows without numbers are newer than that libseccomp: kept for their policy.\n")
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in sorted(rows.values(), key=sort_key):
            w.writerow({c: row.get(c, "") for c in COLUMNS})
    for name in sorted(added):
        print("added (deny ENOSYS until curated):", name, file=sys.stderr)


if __name__ == "__main__":
    main()
