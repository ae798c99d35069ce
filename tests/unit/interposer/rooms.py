#!/usr/bin/env python3
"""The include graph of interposer/'s rooms: cli -> core -> launch, never back, and
nothing below interposer/ includes it. The rooms' include paths already make a bare
include against the arrows fail to compile; this also catches a relative one
("../core/sup.h") and says which file broke the rule. TAP on stdout.

    rooms.py SOURCE_ROOT
"""
import os
import re
import sys

root = sys.argv[1]
rooms = {"launch": 0, "core": 1, "cli": 2}
lower_modules = ["common", "syscall-table", "vfs", "audit"]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


# header name -> room, for bare includes
room_of_header = {}
for room in rooms:
    for p in sources(os.path.join("interposer", room)):
        if p.endswith(".h"):
            room_of_header[os.path.basename(p)] = room


def room_of(path):
    rel = os.path.relpath(path, os.path.join(root, "interposer"))
    head = rel.split(os.sep)[0]
    return head if head in rooms else None


bad = []
for room in rooms:
    for p in sources(os.path.join("interposer", room)):
        for name in include.findall(open(p, errors="replace").read()):
            if "/" in name:
                target = room_of(os.path.normpath(os.path.join(os.path.dirname(p), name)))
            else:
                target = room_of_header.get(name)
            if target and rooms[target] > rooms[room]:
                bad.append(f"{os.path.relpath(p, root)} ({room}) includes {name} ({target})")
for top in lower_modules:
    for p in sources(top):
        for name in include.findall(open(p, errors="replace").read()):
            if "interposer" in name or name in room_of_header:
                bad.append(f"{os.path.relpath(p, root)} includes {name} of interposer/")

print("1..2")
seen = sum(1 for room in rooms for _ in sources(os.path.join("interposer", room)))
print(("ok" if seen > 0 else "not ok") + f" 1 - the rooms hold {seen} files")
if bad:
    print("not ok 2 - includes follow cli -> core -> launch")
    for b in bad:
        print(f"# {b}")
else:
    print("ok 2 - includes follow cli -> core -> launch")
