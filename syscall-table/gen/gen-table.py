#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn data/syscalls.csv into C at build time (outputs are never committed).

  gen-table.py CSV --ids sc-ids.h --table sc-table.c
      sc-ids.h:   enum sc_id over the union of names on every ABI, sorted by name
      sc-table.c: per ABI, a const array of struct sc_entry sorted by number, a
                  number -> index map (O(1) sc_lookup) and an id -> index map
  gen-table.py CSV --ksysent sc-ksysent.h
      one "#ifdef __NR_x / SC_KSYSENT(x) / #endif" block per name, so a test can
      compare every number the build host's <asm/unistd.h> knows (strace's ksysent)

The CSV is validated first and any problem fails the build: unknown column, kind,
category or handling, duplicate name or number, nargs that disagrees with the kinds,
a deny without errno, a notify row with nothing for the supervisor to look at, an
access word on an argument that names no object (or a notified path or address without
one), or rows out of canonical order (the order gen/refresh-csv.py writes).
"""

import argparse
import csv
import re
import sys

ABIS = (  # CSV column, AUDIT_ARCH_* macro
    ("x86_64", "AUDIT_ARCH_X86_64"),
    ("aarch64", "AUDIT_ARCH_AARCH64"),
)
COLUMNS = ["name", "x86_64", "aarch64", "nargs", "args", "categories", "handling", "errno", "note",
           "unns", "fast", "continues", "mode_note", "access"]
UNNS = ["", "enosys"]
FAST = ["", "native", "native-ro", "native-w"]
KINDS = ["none", "int", "uint", "fd", "dirfd", "path", "string", "oflags", "atflags", "flags",
         "mode", "sockaddr", "socklen", "buf", "struct", "ptr", "argv", "pid", "signal"]
CATEGORIES = ["fs", "net", "exec", "proc", "mem", "time", "ipc", "signal", "fd", "sys",
              "security", "other"]
HANDLINGS = ["native", "notify", "deny", "kill", "args"]
MAX_ARGS = 6
# What the supervisor needs in order to handle a notified call.
NOTIFY_KINDS = {"path", "sockaddr", "fd", "dirfd"}
# access: what a notified call does with each object it names (enum sc_access, in this
# order; "-" is SC_ACCESS_NONE). look: metadata only; open: from the open flags; amode:
# from access(2)'s mode argument; connect, send, bind: a socket address (a unix path is
# used as a read by connect and send, created by bind).
PATH_ACCESS = ["look", "read", "write", "create", "exec", "open", "amode"]
NET_ACCESS = ["connect", "send", "bind"]
ACCESS = ["-"] + PATH_ACCESS + NET_ACCESS
# Which words an argument of each kind may carry: a path; a socket address (sendmsg's
# and sendmmsg's live in the message struct); an fd whose file is changed (fchmod ...)
# or whose local address is bound (listen).
ACCESS_ON_KIND = {
    "path": set(PATH_ACCESS),
    "sockaddr": set(NET_ACCESS),
    "struct": {"send"},
    "fd": {"write", "bind"},
}


class CsvError(Exception):
    pass


def parse(path):
    with open(path, newline="") as f:
        numbered = [(i + 1, l) for i, l in enumerate(f) if not l.startswith("#")]
    if not numbered:
        raise CsvError("%s: empty" % path)
    reader = csv.reader([l for _, l in numbered])
    header = next(reader)
    if header != COLUMNS:
        raise CsvError("%s:%d: header must be %s" % (path, numbered[0][0], ",".join(COLUMNS)))
    rows = []
    seen = set()
    for (lineno, _), cells in zip(numbered[1:], reader):
        where = "%s:%d" % (path, lineno)
        if len(cells) != len(COLUMNS):
            raise CsvError("%s: %d cells, want %d" % (where, len(cells), len(COLUMNS)))
        r = dict(zip(COLUMNS, cells))
        r["where"] = where
        name = r["name"]
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise CsvError("%s: bad name %r" % (where, name))
        if name in seen:
            raise CsvError("%s: duplicate name %s" % (where, name))
        seen.add(name)
        for abi, _ in ABIS:
            v = r[abi]
            if v == "":
                r[abi] = None
            elif re.fullmatch(r"[0-9]+", v) and int(v) < 4096:
                r[abi] = int(v)
            else:
                raise CsvError("%s: bad %s number %r" % (where, abi, v))
        kinds = r["args"].split()
        for k in kinds:
            if k not in KINDS or k == "none":
                raise CsvError("%s: unknown argument kind %r" % (where, k))
        if not re.fullmatch(r"[0-6]", r["nargs"]) or int(r["nargs"]) != len(kinds):
            raise CsvError("%s: nargs %r disagrees with %d argument kinds"
                           % (where, r["nargs"], len(kinds)))
        r["kinds"] = kinds
        cats = r["categories"].split("|")
        for c in cats:
            if c not in CATEGORIES:
                raise CsvError("%s: unknown category %r" % (where, c))
        r["cats"] = cats
        h = r["handling"]
        if h not in HANDLINGS:
            raise CsvError("%s: unknown handling %r" % (where, h))
        e = r["errno"]
        if h == "deny" or (h == "args" and e != ""):
            if not re.fullmatch(r"E[A-Z0-9]+", e):
                raise CsvError("%s: handling %s needs an errno name, got %r" % (where, h, e))
        elif e != "":
            raise CsvError("%s: errno %r given for handling %s" % (where, e, h))
        # a call that names nothing is notified only to be let through, for the
        # supervisor's own bookkeeping (the setuid family: creds.h CREDS_FIXED)
        if h == "notify" and not NOTIFY_KINDS & set(kinds) and r["continues"] != "yes":
            raise CsvError("%s: notify row without a path, sockaddr or fd argument, "
                           "and not let through (continues)" % where)
        if r["unns"] not in UNNS or r["fast"] not in FAST or r["continues"] not in ("", "yes"):
            raise CsvError("%s: bad unns/fast/continues value" % where)
        if r["fast"] and h != "notify":
            raise CsvError("%s: fast %s given for a row that is not notified" % (where, r["fast"]))
        if (r["fast"] or r["unns"]) and r["mode_note"].strip() == "":
            raise CsvError("%s: a per-mode handling needs a mode_note (say why)" % where)
        if r["note"].strip() == "":
            raise CsvError("%s: empty note (say why this handling)" % where)
        r["access"] = check_access(r, where)
        rows.append(r)

    def key(r):
        if r["x86_64"] is not None:
            return (0, r["x86_64"], r["name"])
        if r["aarch64"] is not None:
            return (1, r["aarch64"], r["name"])
        return (2, 0, r["name"])

    for a, b in zip(rows, rows[1:]):
        if key(a) >= key(b):
            raise CsvError("%s: rows unsorted or duplicate number (%s after %s); "
                           "run gen/refresh-csv.py" % (b["where"], b["name"], a["name"]))
    for abi, _ in ABIS:
        nrs = sorted((r[abi], r["name"]) for r in rows if r[abi] is not None)
        for (n1, a), (n2, b) in zip(nrs, nrs[1:]):
            if n1 == n2:
                raise CsvError("%s: %s and %s share number %d" % (abi, a, b, n1))
    return rows


def check_access(r, where):
    """The access column: empty, or one word per argument; returns the words."""
    words = r["access"].split()
    kinds = r["kinds"]
    if not words:
        words = ["-"] * len(kinds)
    elif len(words) != len(kinds):
        raise CsvError("%s: access has %d words for %d arguments" % (where, len(words), len(kinds)))
    for w, k in zip(words, kinds):
        if w not in ACCESS:
            raise CsvError("%s: unknown access %r" % (where, w))
        if w != "-" and w not in ACCESS_ON_KIND.get(k, ()):
            raise CsvError("%s: access %s on a %s argument" % (where, w, k))
    named = [w for w in words if w != "-"]
    if named and r["handling"] != "notify":
        raise CsvError("%s: access given for a row that is not notified" % where)
    if r["handling"] == "notify":
        for w, k in zip(words, kinds):
            if k in ("path", "sockaddr") and w == "-":
                raise CsvError("%s: notified %s argument without an access" % (where, k))
    if "amode" in words and "mode" not in kinds[words.index("amode"):]:
        raise CsvError("%s: access amode without a mode argument after the path" % where)
    return words


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_ids(rows, out):
    names = sorted(r["name"] for r in rows)
    with open(out, "w") as f:
        f.write("/* Generated by syscall-table/gen/gen-table.py from data/syscalls.csv: do not edit. */\n")
        f.write("#pragma once\n\n#include <errno.h>\n\n")
        f.write("/* Neutral syscall ids, one per name on any ABI, sorted by name. */\n")
        f.write("enum sc_id {\n")
        for n in names:
            f.write("\tSC_%s,\n" % n)
        f.write("\t_SC_ID_MAX,\n\t_SC_ID_INVALID = -EINVAL,\n};\n")


def write_table(rows, out):
    names = sorted(r["name"] for r in rows)
    ids = {n: i for i, n in enumerate(names)}
    with open(out, "w") as f:
        f.write("/* Generated by syscall-table/gen/gen-table.py from data/syscalls.csv: do not edit. */\n")
        f.write("#include <errno.h>\n#include <linux/audit.h>\n\n")
        f.write('#include "sc.h"\n#include "sc-internal.h"\n\n')
        f.write("const char *const sc__id_names[_SC_ID_MAX] = {\n")
        for n in names:
            f.write("\t[SC_%s] = %s,\n" % (n, cstr(n)))
        f.write("};\n\n")
        abis = []
        for abi, macro in ABIS:
            ent = sorted((r for r in rows if r[abi] is not None), key=lambda r: r[abi])
            f.write("static const struct sc_entry table_%s[] = {\n" % abi)
            for r in ent:
                kinds = ", ".join("SC_ARG_" + k.upper() for k in r["kinds"]) or "SC_ARG_NONE"
                cats = " | ".join("SC_CAT_" + c.upper() for c in r["cats"])
                fast = "SC_FAST_" + (r["fast"].upper().replace("-", "_") or "SAME")
                access = ", ".join("SC_ACCESS_" + ("NONE" if w == "-" else w.upper())
                                   for w in r["access"]) or "SC_ACCESS_NONE"
                f.write("\t{ SC_%s, %s, %d, %d, { %s }, %s, SC_%s, %s,\n\t  %s,\n"
                        "\t  %s, %s, %s, %s,\n\t  { %s } },\n"
                        % (r["name"], cstr(r["name"]), r[abi], len(r["kinds"]), kinds, cats,
                           r["handling"].upper(), r["errno"] or "0", cstr(r["note"]),
                           "true" if r["unns"] == "enosys" else "false", fast,
                           "true" if r["continues"] == "yes" else "false",
                           cstr(r["mode_note"]) if r["mode_note"] else "NULL", access))
            f.write("};\n\n")
            nmax = ent[-1][abi] if ent else 0
            by_nr = [-1] * (nmax + 1)
            by_id = [-1] * len(names)
            for i, r in enumerate(ent):
                by_nr[r[abi]] = i
                by_id[ids[r["name"]]] = i
            f.write("static const int16_t by_nr_%s[%d] = {" % (abi, nmax + 1))
            for i, v in enumerate(by_nr):
                f.write(("\n\t" if i % 16 == 0 else " ") + "%d," % v)
            f.write("\n};\n\n")
            f.write("static const int16_t by_id_%s[_SC_ID_MAX] = {\n" % abi)
            for n in names:
                if by_id[ids[n]] >= 0:
                    f.write("\t[SC_%s] = %d,\n" % (n, by_id[ids[n]]))
                else:
                    f.write("\t[SC_%s] = -1,\n" % n)
            f.write("};\n\n")
            abis.append((abi, macro))
        f.write("const struct sc__abi sc__abis[] = {\n")
        for abi, macro in abis:
            f.write("\t{ %s, %s, table_%s, sizeof(table_%s) / sizeof(table_%s[0]),\n"
                    "\t  by_nr_%s, sizeof(by_nr_%s) / sizeof(by_nr_%s[0]), by_id_%s },\n"
                    % (macro, cstr(abi), abi, abi, abi, abi, abi, abi, abi))
        f.write("};\n\nconst size_t sc__n_abis = %d;\n" % len(abis))


def write_ksysent(rows, out):
    with open(out, "w") as f:
        f.write("/* Generated by syscall-table/gen/gen-table.py from data/syscalls.csv: do not edit.\n"
                " * Define SC_KSYSENT(name) before including; expands once per name the\n"
                " * build host's <asm/unistd.h> defines. */\n")
        for n in sorted(r["name"] for r in rows):
            f.write("#ifdef __NR_%s\nSC_KSYSENT(%s)\n#endif\n" % (n, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--ids")
    ap.add_argument("--table")
    ap.add_argument("--ksysent")
    a = ap.parse_args()
    try:
        rows = parse(a.csv)
    except CsvError as e:
        print("gen-table.py: " + str(e), file=sys.stderr)
        return 1
    if a.ids:
        write_ids(rows, a.ids)
    if a.table:
        write_table(rows, a.table)
    if a.ksysent:
        write_ksysent(rows, a.ksysent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
