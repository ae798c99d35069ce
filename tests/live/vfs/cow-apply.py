#!/usr/bin/env python3
"""Apply a `moat run --export` tar to a directory, as an OCI layer is applied: an entry
DIR/.wh.NAME removes DIR/NAME, DIR/.wh..wh..opq empties DIR first, everything else is
extracted over what is there. A test helper: the tar is the test's own."""
import os
import shutil
import sys
import tarfile


def remove(p):
    if os.path.islink(p) or not os.path.isdir(p):
        if os.path.lexists(p):
            os.unlink(p)
    else:
        shutil.rmtree(p)


def main(tar_path, dest):
    with tarfile.open(tar_path) as t:
        members = t.getmembers()
        for m in members:
            d, base = os.path.split(m.name.rstrip("/"))
            if base == ".wh..wh..opq":
                full = os.path.join(dest, d)
                for e in os.listdir(full):
                    remove(os.path.join(full, e))
            elif base.startswith(".wh."):
                remove(os.path.join(dest, d, base[4:]))
        for m in members:
            base = os.path.basename(m.name.rstrip("/"))
            if base.startswith(".wh."):
                continue
            target = os.path.join(dest, m.name.rstrip("/"))
            if os.path.lexists(target) and not (m.isdir() and os.path.isdir(target)
                                                and not os.path.islink(target)):
                remove(target)
            t.extract(m, dest, set_attrs=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
