#!/usr/bin/env python3
"""Generates a fake host tree for `envlock snapshot capture --root`: conda prefixes whose
conda-meta records (conda's PrefixRecord shape: files, paths_data with sha256 and sizes) describe
files that really exist, a few pip distributions (dist-info with RECORD), /etc/os-release, a
/var/lib/dpkg/status, and the facts a complete capture needs (kernel release, page size, and this
machine's libc.so.6 / libstdc++.so.6 for their ELF version definitions), so the capture exits 0.

usage: gen_host.py --out DIR [--prefixes N] [--packages P] [--files F] [--seed S]

Deterministic for a given seed. Writes DIR/root/ (the host's /) with
  opt/conda/envs/env<i>/conda-meta/<name>-<version>-<build>.json   P records per prefix
  opt/conda/envs/env<i>/lib/python3.12/site-packages/...           ~F files per package
and DIR/stats.json: prefixes, packages, files, bytes, records (conda-meta json files).
A second run with the same arguments only prints stats.json.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import shutil


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--prefixes", type=int, default=1)
    ap.add_argument("--packages", type=int, default=700)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    stats_path = os.path.join(a.out, "stats.json")
    args = {"prefixes": a.prefixes, "packages": a.packages, "files": a.files, "seed": a.seed, "layout": 2}
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            old = json.load(f)
        if old.get("args") == args:
            print(json.dumps(old))
            return
    rng = random.Random(a.seed)
    root = os.path.join(a.out, "root")
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    with open(os.path.join(root, "etc/os-release"), "w") as f:
        f.write('ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    for rel, text in (("proc/sys/kernel/osrelease", "6.1.0-bench-amd64\n"),
                      ("proc/cpuinfo", "processor\t: 0\nmodel name\t: bench CPU\nflags\t\t: fpu cx8 cmov mmx fxsr sse sse2 syscall lm pni ssse3 sse4_1 "
                                       "sse4_2 popcnt cx16 lahf_lm avx avx2 bmi1 bmi2 f16c fma abm movbe xsave\n\n"),
                      ("proc/self/smaps", "00400000-00401000 r-xp 00000000 00:00 0\nKernelPageSize:        4 kB\n")):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    for lib in ("libc.so.6", "libstdc++.so.6"):  # the real libraries: their version definitions
        for d in ("/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"):
            if os.path.exists(os.path.join(d, lib)):
                os.makedirs(root + d, exist_ok=True)
                shutil.copyfile(os.path.join(d, lib), os.path.join(root + d, lib))
                break
    os.makedirs(os.path.join(root, "var/lib/dpkg"), exist_ok=True)
    with open(os.path.join(root, "var/lib/dpkg/status"), "w") as f:
        for i in range(200):
            f.write("Package: sys%03d\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.%d-1\n\n" % (i, i))
    files = total = records = 0
    for p in range(a.prefixes):
        prefix_host = "/opt/conda/envs/env%d" % p
        prefix = os.path.join(root, prefix_host.lstrip("/"))
        meta = os.path.join(prefix, "conda-meta")
        os.makedirs(meta, exist_ok=True)
        for k in range(a.packages):
            name = "pkg%04d" % k
            version = "%d.%d.%d" % (rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 9))
            build = "h%07x_0" % rng.randrange(1 << 28)
            paths = []
            for j in range(max(1, int(rng.expovariate(1 / a.files)))):
                rel = "lib/python3.12/site-packages/%s/m%03d.py" % (name, j)
                size = int(rng.lognormvariate(7.3, 1.2)) + 1
                data = (("# %s %d\n" % (name, j)) * (size // 12 + 1))[:size].encode()
                full = os.path.join(prefix, rel)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "wb") as f:
                    f.write(data)
                paths.append({"_path": rel, "path_type": "hardlink", "sha256": hashlib.sha256(data).hexdigest(),
                              "size_in_bytes": len(data)})
                files += 1
                total += len(data)
            fn = "%s-%s-%s.conda" % (name, version, build)
            rec = {"name": name, "version": version, "build": build, "build_number": 0, "subdir": "linux-64",
                   "depends": ["python >=3.12"], "channel": "https://conda.anaconda.org/conda-forge/linux-64",
                   "url": "https://conda.anaconda.org/conda-forge/linux-64/" + fn, "fn": fn,
                   "sha256": hashlib.sha256(fn.encode()).hexdigest(), "md5": hashlib.md5(fn.encode()).hexdigest(),
                   "size": 1000 + k, "files": [x["_path"] for x in paths],
                   "paths_data": {"paths": paths, "paths_version": 1}, "link": {"source": "", "type": 1}}
            with open(os.path.join(meta, fn[:-6] + ".json"), "w") as f:
                json.dump(rec, f, indent=1, sort_keys=True)
            records += 1
        # A few pip distributions on top.
        site = os.path.join(prefix, "lib/python3.12/site-packages")
        for d in range(5):
            dname = "pipdist%d" % d
            di = os.path.join(site, "%s-1.%d.dist-info" % (dname, d))
            os.makedirs(di, exist_ok=True)
            rows = []
            for rel, data in (("%s.py" % dname, b"x = %d\n" % d), ("%s-1.%d.dist-info/METADATA" % (dname, d),
                              b"Metadata-Version: 2.1\nName: %s\nVersion: 1.%d\n" % (dname.encode(), d)),
                              ("%s-1.%d.dist-info/INSTALLER" % (dname, d), b"pip\n")):
                with open(os.path.join(site, rel), "wb") as f:
                    f.write(data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                rows.append("%s,sha256=%s,%d" % (rel, digest, len(data)))
            rows.append("%s-1.%d.dist-info/RECORD,," % (dname, d))
            with open(os.path.join(di, "RECORD"), "w") as f:
                f.write("\n".join(rows) + "\n")
    stats = {"args": args, "prefixes": a.prefixes, "packages": a.packages * a.prefixes, "files": files, "bytes": total,
             "records": records}
    with open(stats_path, "w") as f:
        json.dump(stats, f)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
