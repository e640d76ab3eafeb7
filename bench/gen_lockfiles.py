#!/usr/bin/env python3
"""gen_lockfiles.py — two envlock.lock files for the `envlock diff` benchmark (issue 5).

usage: gen_lockfiles.py --out DIR [--packages 1000] [--platforms 5] [--seed 1] [--format envlock|conda-lock]

Writes DIR/old.lock and DIR/new.lock (envlock.lock format 1, docs/lockfile.md) — or, with
--format conda-lock, DIR/old.conda-lock.yml and DIR/new.conda-lock.yml (conda-lock format 1) —
holding one environment locked for --platforms platforms with --packages packages each, and
DIR/stats.json with the counts of each change made. Deterministic for a given seed (Python's
random.Random; no clock, host or user names).

The two sides differ the way a real re-lock a few months apart does:
  * ~6% of the packages upgraded (a newer patch/minor version, a new build string and hash),
  * ~3% rebuilt (same version, build number + 1),
  * a variant switch: the `pytorch` family moves from cuda builds to cpu builds (and drops
    `cuda-version`), and `libblas` moves from mkl to openblas,
  * 1% downgraded, a few license changes, one archive re-uploaded under the same name
    (hash-changed), a raised `__glibc` floor,
  * ~1.5% of the packages removed and ~2% added (with edges from existing packages).
Every package depends on 0-6 others (a DAG over the name order), so "pulled by" has work to do.
"""
import argparse
import hashlib
import json
import os
import random

PLATFORMS = ["linux-64", "linux-aarch64", "osx-64", "osx-arm64", "win-64"]
CHANNEL = "https://conda.anaconda.org/conda-forge"
LICENSES = ["MIT", "BSD-3-Clause", "Apache-2.0", "LGPL-2.1-or-later", "GPL-3.0-only", "PSF-2.0", "Zlib"]
SYLLABLES = ["py", "lib", "xt", "arrow", "geo", "net", "cdf", "hdf", "zstd", "blas", "ssl", "curl", "proj",
             "tiff", "png", "jpeg", "yaml", "json", "grpc", "abseil", "re2", "tensor", "torch", "vision",
             "numba", "llvm", "openmp", "sci", "kit", "learn", "dask", "dist", "fs", "spec", "tz", "data"]


def digest(*parts, n=64):
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:n]


def make_names(rng, count):
    names, seen = [], set()
    fixed = ["python", "pytorch", "torchvision", "torchaudio", "cuda-version", "libblas", "libcblas", "liblapack",
             "mkl", "libopenblas", "numpy", "scipy", "pandas", "libgcc-ng", "libstdcxx-ng", "openssl", "libzlib"]
    for n in fixed:
        names.append(n)
        seen.add(n)
    while len(names) < count:
        k = rng.choice([1, 2, 2, 3])
        n = "-".join(rng.choice(SYLLABLES) for _ in range(k))
        if rng.random() < 0.3:
            n = "py" + n if not n.startswith("py") else n
        if n in seen:
            n = n + "-" + str(rng.randint(2, 99))
        if n in seen:
            continue
        seen.add(n)
        names.append(n)
    return names


class Pkg:
    __slots__ = ("name", "version", "build", "build_number", "depends", "constrains", "license", "size",
                 "timestamp", "track_features", "salt")

    def key(self):
        return (self.name, self.version, self.build)


def make_pkg(name, version, build_number, build, depends, license, size, timestamp):
    p = Pkg()
    p.name, p.version, p.build_number, p.build = name, version, build_number, build
    p.depends, p.constrains, p.license, p.size, p.timestamp = depends, [], license, size, timestamp
    p.track_features, p.salt = [], ""
    return p


def base_packages(rng, names):
    pkgs = {}
    order = list(names)
    for i, name in enumerate(order):
        version = "%d.%d.%d" % (rng.randint(0, 12), rng.randint(0, 30), rng.randint(0, 20))
        build_number = rng.randint(0, 5)
        deps = []
        if i > 0:
            for j in sorted(rng.sample(range(i), min(i, rng.randint(0, 6)))):
                d = order[j]
                deps.append(d + " >=" + "0.%d" % rng.randint(0, 9))
        if name not in ("libgcc-ng", "python"):
            deps.append("__glibc >=2.17")
        pkgs[name] = make_pkg(name, version, build_number, "h%s_%d" % (digest(name, version)[:8], build_number), deps,
                              rng.choice(LICENSES), rng.randint(8_000, 80_000_000),
                              1_690_000_000_000 + rng.randint(0, 10**10))
    # the variants the switch moves between
    pkgs["pytorch"].build = "cuda120_py311h%s_300" % digest("pt")[:8]
    pkgs["pytorch"].depends = ["cuda-version >=12.0,<13", "libblas", "python >=3.11,<3.12.0a0"]
    pkgs["libblas"].build = "20_linux64_mkl"
    pkgs["libblas"].depends = ["mkl >=2023.2"]
    pkgs["libblas"].track_features = ["blas_mkl"]
    return pkgs


def evolve(rng, old, names):
    new = {}
    stats = {"upgraded": 0, "rebuilt": 0, "downgraded": 0, "license-changed": 0, "hash-changed": 0,
             "variant-switch": 0, "removed": 0, "added": 0, "host-floor-raised": 0}
    special = {"pytorch", "torchvision", "torchaudio", "cuda-version", "libblas", "python", "libgcc-ng"}
    removed = set()
    for name in names:
        if name in special:
            continue
        if rng.random() < 0.015:
            removed.add(name)
    for name in names:
        if name in removed:
            stats["removed"] += 1
            continue
        o = old[name]
        p = Pkg()
        for f in Pkg.__slots__:
            setattr(p, f, list(getattr(o, f)) if isinstance(getattr(o, f), list) else getattr(o, f))
        p.depends = [d for d in p.depends if d.split()[0] not in removed]
        r = rng.random()
        if name in special:
            pass
        elif r < 0.06:
            a, b, c = (int(x) for x in p.version.split("."))
            p.version = "%d.%d.%d" % ((a, b, c + 1) if rng.random() < 0.7 else (a, b + 1, 0))
            p.build_number = 0
            p.build = "h%s_0" % digest(name, p.version)[:8]
            p.timestamp += rng.randint(10**8, 10**9)
            p.size += rng.randint(-5000, 50_000)
            stats["upgraded"] += 1
        elif r < 0.09:
            p.build_number += 1
            p.build = "h%s_%d" % (digest(name, p.version)[:8], p.build_number)
            p.timestamp += rng.randint(10**7, 10**8)
            stats["rebuilt"] += 1
        elif r < 0.10:
            a, b, c = (int(x) for x in p.version.split("."))
            if c > 0:
                p.version = "%d.%d.%d" % (a, b, c - 1)
                p.build = "h%s_0" % digest(name, p.version)[:8]
                p.build_number = 0
                stats["downgraded"] += 1
        elif r < 0.105:
            p.license = LICENSES[(LICENSES.index(p.license) + 1) % len(LICENSES)]
            stats["license-changed"] += 1
        new[name] = p
    # the archive of one package re-uploaded under the same name: another sha256
    victim = sorted(n for n in new if n not in special and new[n].key() == old[n].key())[3]
    new[victim].salt = "re-uploaded"
    stats["hash-changed"] += 1
    # a raised host floor
    floor = sorted(n for n in new if n not in special and n != victim)[7]
    new[floor].depends = [d for d in new[floor].depends if not d.startswith("__glibc")] + ["__glibc >=2.28"]
    stats["host-floor-raised"] += 1
    # variant switches: cuda -> cpu pytorch, mkl -> openblas
    new["pytorch"].build = "cpu_generic_py311h%s_0" % digest("pt-cpu")[:8]
    new["pytorch"].build_number = 0
    new["pytorch"].depends = ["libblas", "python >=3.11,<3.12.0a0"]
    new["libblas"].build = "20_linux64_openblas"
    new["libblas"].depends = ["libopenblas >=0.3.25"]
    new["libblas"].track_features = []
    stats["variant-switch"] += 2
    # new packages, pulled in by existing ones
    existing = sorted(new)
    n_added = max(1, len(names) // 50)
    for k in range(n_added):
        name = "added-%s-%d" % (rng.choice(SYLLABLES), k)
        new[name] = make_pkg(name, "%d.%d.0" % (rng.randint(0, 5), rng.randint(0, 9)), 0, "h%s_0" % digest(name)[:8],
                             [existing[rng.randrange(len(existing))] + " >=0"], rng.choice(LICENSES),
                             rng.randint(8_000, 8_000_000), 1_720_000_000_000 + rng.randint(0, 10**9))
        parent = new[existing[rng.randrange(len(existing))]]
        parent.depends = parent.depends + [name]
        stats["added"] += 1
    return new, stats


def subdir_of(platform, name):
    return "noarch" if name.startswith("py") and name != "python" and name != "pytorch" else platform


def record(platform, p):
    subdir = subdir_of(platform, p.name)
    ext = ".conda" if len(p.name) % 3 else ".tar.bz2"
    file_name = "%s-%s-%s%s" % (p.name, p.version, p.build, ext)
    return {
        "name": p.name, "version": p.version, "build": p.build, "build_number": p.build_number,
        "subdir": subdir, "channel": CHANNEL, "url": "%s/%s/%s" % (CHANNEL, subdir, file_name),
        "sha256": digest("sha256", subdir, file_name, p.salt), "md5": digest("md5", subdir, file_name, p.salt, n=32),
        "size": p.size, "depends": p.depends, "constrains": p.constrains, "license": p.license,
        "timestamp": p.timestamp, "track_features": p.track_features,
    }


def s(v):
    return json.dumps(v)  # a JSON string is a YAML double-quoted scalar


def write_envlock(path, pkgs, platforms, requested):
    out = ["# envlock.lock — generated by bench/gen_lockfiles.py", "version: 1",
           "manifest_hash: " + s("sha256:" + digest(path.rsplit("/", 1)[-1], len(pkgs))),
           "environments:", "  default:", "    requested:"]
    out += ["      - " + s(r) for r in sorted(requested)]
    out.append("    platforms:")
    for platform in platforms:
        out += ["      %s:" % platform, "        channels:", "          - " + CHANNEL,
                "        virtual_packages:", "          - __glibc=2.28=0", "        packages:"]
        for name in sorted(pkgs):
            r = record(platform, pkgs[name])
            out.append("          - name: " + s(r["name"]))
            for k in ("version", "build"):
                out.append("            %s: %s" % (k, s(r[k])))
            out.append("            build_number: %d" % r["build_number"])
            for k in ("subdir", "channel", "url", "sha256", "md5"):
                out.append("            %s: %s" % (k, s(r[k])))
            out.append("            size: %d" % r["size"])
            for k in ("depends", "constrains", "track_features"):
                if r[k]:
                    out.append("            %s:" % k)
                    out += ["              - " + s(d) for d in r[k]]
                else:
                    out.append("            %s: []" % k)
            out.append("            license: " + s(r["license"]))
            out.append("            timestamp: %d" % r["timestamp"])
            out.append("            layer: default")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_conda_lock(path, pkgs, platforms, requested):
    out = ["version: 1", "metadata:", "  content_hash:"]
    out += ["    %s: %s" % (p, digest(path, p)) for p in platforms]
    out += ["  channels:", "  - url: conda-forge", "    used_env_vars: []", "  platforms:"]
    out += ["  - " + p for p in platforms]
    out += ["  sources:", "  - environment.yml", "package:"]
    for platform in platforms:
        for name in sorted(pkgs):
            r = record(platform, pkgs[name])
            out.append("- name: " + s(r["name"]))
            out.append("  version: " + s(r["version"]))
            out.append("  manager: conda")
            out.append("  platform: " + platform)
            deps = {}
            for d in r["depends"]:
                n, _, spec = d.partition(" ")
                deps[n] = spec
            if deps:
                out.append("  dependencies:")
                out += ["    %s: %s" % (s(k), s(v)) for k, v in deps.items()]
            else:
                out.append("  dependencies: {}")
            out.append("  url: " + s(r["url"]))
            out.append("  hash:")
            out.append("    md5: " + r["md5"])
            out.append("    sha256: " + r["sha256"])
            out.append("  category: main")
            out.append("  optional: false")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--packages", type=int, default=1000)
    ap.add_argument("--platforms", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=["envlock", "conda-lock"], default="envlock")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    names = make_names(rng, a.packages)
    old = base_packages(rng, names)
    new, stats = evolve(rng, old, names)
    platforms = PLATFORMS[: a.platforms]
    requested = ["python 3.11.*", "pytorch", "numpy", "scipy", "pandas"]
    os.makedirs(a.out, exist_ok=True)
    if a.format == "envlock":
        write_envlock(os.path.join(a.out, "old.lock"), old, platforms, requested)
        write_envlock(os.path.join(a.out, "new.lock"), new, platforms, requested)
    else:
        write_conda_lock(os.path.join(a.out, "old.conda-lock.yml"), old, platforms, requested)
        write_conda_lock(os.path.join(a.out, "new.conda-lock.yml"), new, platforms, requested)
    stats.update({"packages_old": len(old), "packages_new": len(new), "platforms": len(platforms)})
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
