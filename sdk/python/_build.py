"""A PEP 517 build backend for the moat client, from the standard library alone.

The package is pure Python with no dependencies; a backend of its own means that
`pip install ./sdk/python` works offline, without fetching setuptools into pip's
isolated build environment.
"""
import base64
import hashlib
import os
import tarfile
import zipfile

NAME = "moat_sandbox"
DIST = "moat-sandbox"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "moat"

METADATA = f"""Metadata-Version: 2.1
Name: {DIST}
Version: {VERSION}
Summary: Client for moat serve: run untrusted code in moat sandboxes from Python
License: MIT
Requires-Python: >=3.8
"""

WHEEL = """Wheel-Version: 1.0
Generator: moat _build
Root-Is-Purelib: true
Tag: py3-none-any
"""


def _files():
    root = os.path.join(HERE, PACKAGE)
    for dirpath, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(".py"):
                full = os.path.join(dirpath, n)
                yield full, os.path.relpath(full, HERE)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in _files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for arc, text in ((f"{info}/METADATA", METADATA), (f"{info}/WHEEL", WHEEL)):
            z.writestr(arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "_build.py"):
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        for full, arc in _files():
            t.add(full, arcname=f"{base}/{arc}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        import io
        t.addfile(info, io.BytesIO(data))
    return name
