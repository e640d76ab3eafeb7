#!/usr/bin/env python3
"""Generates tiny but real `.conda` packages, a file:// channel and an envlock.lock for them.

usage: gen_packages.py --out DIR [--packages N] [--files-per-package MEAN] [--seed S] [--level L]

Deterministic for a given seed (fixed mtimes, owners and member order; `zstd` from PATH
compresses). Writes
  DIR/channel/linux-64/<name>-<version>-<build>.conda   zip (stored) of metadata.json,
                                                        info-<dist>.tar.zst, pkg-<dist>.tar.zst
  DIR/channel/{linux-64,noarch}/repodata.json           sha256, md5, size of every archive
  DIR/envlock.lock                                      every package, environment `default`
  DIR/stats.json                                        the arguments, files, archive_bytes,
                                                        installed_bytes (a second run with the
                                                        same arguments only prints it)
Each package holds python-like text modules in nested folders, some less compressible binary
files, and `bin/` scripts whose shebang and body carry the text prefix placeholder
(`info/paths.json`: file_mode text), so an install relocates a few files per package as real
conda-forge packages do. Sizes follow a log-normal shape (median ~1.5 KiB, a long tail).
"""
import argparse
import hashlib
import io
import json
import os
import random
import subprocess
import tarfile
import zipfile

PLACEHOLDER = "/opt/anaconda1anaconda2anaconda3"
MTIME = 1700000000
WORDS = None


def words(rng):
    global WORDS
    if WORDS is None:
        letters = "abcdefghijklmnopqrstuvwxyz_"
        WORDS = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(4000)]
        WORDS += ["def", "return", "self", "import", "class", "if", "else", "for", "in", "None", "(", ")", ":"]
    return WORDS


def text_body(rng, size):
    vocab = words(rng)
    out, n = [], 0
    while n < size:
        line = " " * (4 * rng.randint(0, 3)) + " ".join(rng.choices(vocab, k=rng.randint(3, 12))) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size].encode()


def file_size(rng):
    return max(64, min(200_000, int(rng.lognormvariate(7.3, 1.1))))


def tar_zst(members, level):
    """members: list of (path, bytes, mode). Returns the .tar.zst bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data, mode in members:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), mode, MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return subprocess.run(["zstd", "-q", "-%d" % level, "-c"], input=buf.getvalue(), stdout=subprocess.PIPE,
                          check=True).stdout


def make_package(rng, index, mean_files, level):
    name = "benchpkg-%03d" % index
    version = "1.%d.%d" % (index % 7, rng.randint(0, 20))
    build = "h%08x_0" % rng.getrandbits(32)
    dist = "%s-%s-%s" % (name, version, build)
    nfiles = max(4, int(rng.uniform(0.3, 1.7) * mean_files))
    module = name.replace("-", "_")
    files, paths = [], []
    nscripts = rng.randint(1, 3)
    for i in range(nfiles):
        if i < nscripts:
            path = "bin/%s-tool%d" % (name, i)
            body = ("#!%s/bin/python\n# installed into %s\nimport sys\n" % (PLACEHOLDER, PLACEHOLDER)).encode()
            data = body + text_body(rng, rng.randint(200, 2000))
            files.append((path, data, 0o755))
            paths.append({"_path": path, "path_type": "hardlink", "file_mode": "text",
                          "prefix_placeholder": PLACEHOLDER, "sha256": hashlib.sha256(data).hexdigest(),
                          "size_in_bytes": len(data)})
            continue
        depth = rng.randint(0, 3)
        folder = "/".join(["lib/python3.12/site-packages", module] + ["sub%d" % rng.randint(0, 4) for _ in range(depth)])
        if rng.random() < 0.06:
            path = "%s/_native%d.so" % (folder, i)
            data = rng.randbytes(file_size(rng))
            mode = 0o755
        else:
            path = "%s/mod_%d.py" % (folder, i)
            data = text_body(rng, file_size(rng))
            mode = 0o644
        files.append((path, data, mode))
        paths.append({"_path": path, "path_type": "hardlink", "sha256": hashlib.sha256(data).hexdigest(),
                      "size_in_bytes": len(data)})
    files.sort()
    paths.sort(key=lambda p: p["_path"])
    index_json = {"arch": "x86_64", "build": build, "build_number": 0, "depends": [], "license": "MIT",
                  "name": name, "platform": "linux", "subdir": "linux-64", "timestamp": MTIME * 1000,
                  "version": version}
    info = [("info/index.json", json.dumps(index_json, indent=2, sort_keys=True).encode(), 0o644),
            ("info/paths.json", json.dumps({"paths": paths, "paths_version": 1}, indent=2).encode(), 0o644),
            ("info/files", "".join(p["_path"] + "\n" for p in paths).encode(), 0o644)]
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", compression=zipfile.ZIP_STORED) as z:
        for arcname, data in (("metadata.json", b'{"conda_pkg_format_version": 2}'),
                              ("info-%s.tar.zst" % dist, tar_zst(info, level)),
                              ("pkg-%s.tar.zst" % dist, tar_zst(files, level))):
            zi = zipfile.ZipInfo(arcname, date_time=(2023, 11, 14, 22, 13, 20))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data)
    archive = zbuf.getvalue()
    return index_json, dist, archive, len(files), sum(len(f[1]) for f in files)


def q(s):
    return '"' + s + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--packages", type=int, default=200)
    ap.add_argument("--files-per-package", type=int, default=140)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--level", type=int, default=10, help="zstd level (decompression speed barely depends on it)")
    a = ap.parse_args()
    stats_path = os.path.join(a.out, "stats.json")
    wanted = {"packages": a.packages, "files_per_package": a.files_per_package, "seed": a.seed, "level": a.level}
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            old = json.load(f)
        if all(old.get(k) == v for k, v in wanted.items()):
            print(json.dumps(old, sort_keys=True))  # generated before with the same arguments
            return
    rng = random.Random(a.seed)
    channel = os.path.join(os.path.abspath(a.out), "channel")
    for sub in ("linux-64", "noarch"):
        os.makedirs(os.path.join(channel, sub), exist_ok=True)
    records, total_files, archive_bytes, installed_bytes = {}, 0, 0, 0
    for i in range(a.packages):
        index_json, dist, archive, nfiles, nbytes = make_package(rng, i, a.files_per_package, a.level)
        fn = dist + ".conda"
        with open(os.path.join(channel, "linux-64", fn), "wb") as f:
            f.write(archive)
        rec = dict(index_json)
        rec.update(sha256=hashlib.sha256(archive).hexdigest(), md5=hashlib.md5(archive).hexdigest(),
                   size=len(archive))
        records[fn] = rec
        total_files += nfiles
        archive_bytes += len(archive)
        installed_bytes += nbytes
    with open(os.path.join(channel, "linux-64", "repodata.json"), "w") as f:
        json.dump({"info": {"subdir": "linux-64"}, "packages": {}, "packages.conda": records}, f, indent=1,
                  sort_keys=True)
    with open(os.path.join(channel, "noarch", "repodata.json"), "w") as f:
        json.dump({"info": {"subdir": "noarch"}, "packages": {}, "packages.conda": {}}, f)

    url = "file://" + channel
    lines = ["# envlock.lock — written by bench/gen_packages.py. Format: docs/lockfile.md", "version: 1",
             "manifest_hash: sha256:" + "0" * 64, "environments:", "  default:", "    requested:"]
    lines += ["      - " + r["name"] for r in sorted(records.values(), key=lambda r: r["name"])]
    lines += ["    platforms:", "      linux-64:", "        channels:", "          - " + url,
              "        virtual_packages: []", "        packages:"]
    for fn, r in sorted(records.items(), key=lambda kv: kv[1]["name"]):
        lines += ["          - name: " + r["name"], "            version: " + q(r["version"]),
                  "            build: " + r["build"], "            build_number: 0",
                  "            subdir: linux-64", "            channel: " + url,
                  "            url: " + url + "/linux-64/" + fn, "            sha256: " + r["sha256"],
                  "            md5: " + r["md5"], "            size: %d" % r["size"], "            depends: []",
                  "            constrains: []", "            license: MIT",
                  "            timestamp: %d" % r["timestamp"], "            track_features: []",
                  "            layer: default"]
    with open(os.path.join(a.out, "envlock.lock"), "w") as f:
        f.write("\n".join(lines) + "\n")
    stats = dict(wanted, files=total_files, archive_bytes=archive_bytes, installed_bytes=installed_bytes)
    with open(stats_path, "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    print(json.dumps(stats, sort_keys=True))


if __name__ == "__main__":
    main()
