#!/usr/bin/env python3
"""bench/gen_wheels.py --out DIR [--wheels N] [--files F] [--seed S]

Writes N generated wheels (deflated, as bdist_wheel writes them), each a package of F modules of a
few hundred bytes to a few KiB, a console entry point, a `.data/scripts` script with `#!python`
and a RECORD listing every member with its sha256, plus copies of Debian's real wheels
(/usr/share/python-wheels) when present, into DIR/wheels; and DIR/pip.yaml, the `pip:` entries
of an envlock.lock platform that pin them (file:// URL and sha256), indented for a platform
block. Deterministic for a given seed. Used by bench/scenarios/22-install-wheels.sh (issue 20
point 5: the wheel installer against `pip install --no-deps --no-index`).
"""
import argparse
import base64
import hashlib
import os
import random
import shutil
import zipfile


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def write_wheel(path, name, version, files):
    di = f"{name}-{version}.dist-info"
    members = list(files)
    members.append((f"{di}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()))
    members.append((f"{di}/WHEEL", b"Wheel-Version: 1.0\nGenerator: gen_wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    members.append((f"{di}/entry_points.txt", f"[console_scripts]\n{name}-cli = {name}:main\n".encode()))
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d in members) + f"{di}/RECORD,,\n"
    members.append((f"{di}/RECORD", record.encode()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members:
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if "/scripts/" in n else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--wheels", type=int, default=50)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    wheels = os.path.join(a.out, "wheels")
    shutil.rmtree(wheels, ignore_errors=True)
    os.makedirs(wheels)
    made = []
    for i in range(a.wheels):
        name, version = f"benchpkg{i:03d}", "1.0"
        files = [(f"{name}/__init__.py", b"def main():\n    return 0\n")]
        for j in range(a.files):
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "value", "return"]) for _ in range(rng.randint(40, 600)))
            files.append((f"{name}/mod{j // 50}/m{j:04d}.py", f"# {words}\nX = {j}\n".encode()))
        files.append((f"{name}-{version}.data/scripts/{name}-tool", b"#!python\nprint('tool')\n"))
        path = os.path.join(wheels, f"{name}-{version}-py3-none-any.whl")
        write_wheel(path, name, version, files)
        made.append((name, version, path))
    debian = "/usr/share/python-wheels"
    if os.path.isdir(debian):
        for f in sorted(os.listdir(debian)):
            if f.endswith(".whl"):
                shutil.copy(os.path.join(debian, f), wheels)
                name, version = f.split("-")[:2]
                made.append((name, version, os.path.join(wheels, f)))
    with open(os.path.join(a.out, "pip.yaml"), "w") as out:
        out.write("        pip:\n")
        for name, version, path in sorted(made):
            sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
            out.write(f"          - name: {name}\n            version: \"{version}\"\n"
                      f"            url: file://{os.path.abspath(path)}\n            sha256: {sha}\n")
    total = sum(len(zipfile.ZipFile(p).namelist()) for _, _, p in made)
    print(f"{len(made)} wheels, {total} members")


if __name__ == "__main__":
    main()
