#!/usr/bin/env python3
"""oci-archive.py ROOTFS OUT.tar NAME: an OCI image archive of one uncompressed layer
holding ROOTFS, named NAME, for `ctr image import` (no registry is reachable here)."""
import hashlib
import io
import json
import platform
import sys
import tarfile

rootfs, out, name = sys.argv[1:4]
arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    t.add(rootfs, arcname=".")
layer_d, layer = blob(buf.getvalue())
config_d, config = blob(json.dumps({
    "architecture": arch, "os": "linux", "config": {"Cmd": ["/bin/sh"]},
    "rootfs": {"type": "layers", "diff_ids": [layer_d]}}).encode())
manifest_d, manifest = blob(json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": config_d, "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_d, "size": len(layer)}]}).encode())
index = json.dumps({"schemaVersion": 2, "manifests": [{
    "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_d,
    "size": len(manifest), "platform": {"architecture": arch, "os": "linux"},
    "annotations": {"io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}}]}).encode()
with tarfile.open(out, "w") as t:
    for path, data in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", index)] + \
            [("blobs/sha256/" + d.split(":")[1], b) for d, b in
             [(layer_d, layer), (config_d, config), (manifest_d, manifest)]]:
        info = tarfile.TarInfo(path)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
