#!/usr/bin/env python3
"""Deterministic generator of conda-forge-shaped repodata.json for benchmarks.

Reads the real repodata files under ../shared/corpus (standard {info,packages,packages.conda},
the {metadata,...} variant and the {fn: record} index files), learns their statistics —
versions per name, builds per version, depends per record and the shapes of their specs,
.conda/.tar.bz2 mix — and synthesises a repodata.json with N records over a name universe the
size of conda-forge's (about 18.5 records per name: 465,679 records over ~25,100 names in the
2024 linux-64 subdir). Real names keep their real dependency lists, re-pointed at versions that
exist in the generated universe, so requests like `python numpy pytorch` are solvable.

Same --seed and same corpus: byte-identical output.

usage: gen_repodata.py --records 500000 --seed 1 --out bench/data/cf500k/linux-64/repodata.json
"""
import argparse
import glob
import hashlib
import json
import os
import random
import re
import sys

RECORDS_PER_NAME = 465679 / 25100
SPEC_RE = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


def load_corpus(corpus):
    records = []
    paths = sorted(glob.glob(os.path.join(corpus, "repodata", "*", "*.json")))
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(d, dict):
            continue
        if "packages" in d or "packages.conda" in d:
            groups = [(d.get("packages") or {}, ".tar.bz2"), (d.get("packages.conda") or {}, ".conda")]
        else:
            groups = [(d, ".tar.bz2")]
        for group, ext in groups:
            if not isinstance(group, dict):
                continue
            for fn, r in sorted(group.items()):
                if isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("version"), str):
                    deps = r.get("depends") or []
                    if isinstance(deps, list) and all(isinstance(x, str) for x in deps):
                        records.append((r, fn.endswith(".conda")))
    return records


def stats(records):
    by_name = {}
    for r, is_conda in records:
        by_name.setdefault(r["name"].lower(), []).append((r, is_conda))
    versions_per_name, builds_per_version = [], []
    for name, rs in sorted(by_name.items()):
        per_version = {}
        for r, _ in rs:
            per_version.setdefault(r["version"], 0)
            per_version[r["version"]] += 1
        versions_per_name.append(len(per_version))
        builds_per_version.extend(sorted(per_version.values()))
    conda_share = sum(1 for _, c in records if c) / max(1, len(records))
    return by_name, versions_per_name, builds_per_version, conda_share


def hexdigest(rng, n):
    return "%0*x" % (n, rng.getrandbits(4 * n))


def make_version(rng, i):
    major = i // 10
    return "%d.%d.%d" % (major, i % 10, rng.randrange(0, 5))


def rewrite_spec(spec, universe, versions, rng):
    """Keep the shape of a real spec, re-pointed at a name and versions of the universe."""
    m = SPEC_RE.match(spec.strip())
    if not m:
        return None
    name, rest = m.group(1).lower(), m.group(2).strip()
    if name.startswith("__"):
        return spec  # virtual packages stay as written
    if name not in versions:
        name = universe[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(universe)]
    vs = versions[name]
    if not rest:
        return name
    v = vs[rng.randrange(len(vs))]
    parts = v.split(".")
    if rest.startswith(">=") and ",<" in rest:
        return "%s >=%s,<%d" % (name, v, int(parts[0]) + 1)
    if rest.startswith(">="):
        return "%s >=%s" % (name, v)
    if rest.startswith("<"):
        return "%s <%d" % (name, int(parts[0]) + 1)
    if "*" in rest:
        return "%s %s.%s.*" % (name, parts[0], parts[1])
    if " " in rest:  # version and build
        return "%s %s *_%d" % (name, v, rng.randrange(3))
    return "%s %s" % (name, v)


def generate(n, seed, corpus, subdir):
    rng = random.Random(seed)
    records = load_corpus(corpus)
    if not records:
        sys.exit("gen_repodata: no repodata found under %s/repodata" % corpus)
    by_name, vpn, bpv, conda_share = stats(records)
    real_names = sorted(by_name)
    n_names = max(len(real_names), int(round(n / RECORDS_PER_NAME)))
    universe = list(real_names)
    i = 0
    while len(universe) < n_names:
        base = real_names[i % len(real_names)]
        universe.append("%s-x%d" % (base, i // len(real_names) + 1))
        i += 1
    # Versions per name, drawn from the real distribution, scaled to reach n records.
    mean_builds = sum(bpv) / len(bpv)
    target_versions = n / mean_builds
    raw = [vpn[rng.randrange(len(vpn))] for _ in universe]
    scale = target_versions / sum(raw)
    versions = {}
    for name, k in zip(universe, raw):
        count = max(1, int(round(k * scale + rng.random() - 0.5)))
        versions[name] = [make_version(rng, j) for j in range(count)]
    out_pkgs, out_conda = {}, {}
    total = 0
    ts0 = 1600000000000
    for name in universe:
        template_name = name if name in by_name else real_names[
            int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(real_names)]
        templates = by_name[template_name]
        for v in versions[name]:
            builds = bpv[rng.randrange(len(bpv))]
            for b in range(builds):
                if total >= n:
                    break
                t, _ = templates[rng.randrange(len(templates))]
                deps = []
                for s in t.get("depends") or []:
                    r = rewrite_spec(s, universe, versions, rng)
                    if r and r.split(" ")[0] != name:
                        deps.append(r)
                cons = []
                for s in t.get("constrains") or []:
                    if isinstance(s, str):
                        r = rewrite_spec(s, universe, versions, rng)
                        if r and r.split(" ")[0] != name:
                            cons.append(r)
                build = "h%s_%d" % (hexdigest(rng, 7), b)
                rec = {
                    "build": build,
                    "build_number": b,
                    "depends": deps,
                    "license": t.get("license") or "BSD-3-Clause",
                    "md5": hexdigest(rng, 32),
                    "name": name,
                    "sha256": hexdigest(rng, 64),
                    "size": rng.randrange(2000, 50_000_000),
                    "subdir": subdir,
                    "timestamp": ts0 + rng.randrange(0, 150_000_000_000),
                    "version": v,
                }
                if cons:
                    rec["constrains"] = cons
                if t.get("track_features"):
                    rec["track_features"] = t["track_features"]
                fn_base = "%s-%s-%s" % (name, v, build)
                if rng.random() < conda_share:
                    out_conda[fn_base + ".conda"] = rec
                else:
                    out_pkgs[fn_base + ".tar.bz2"] = rec
                total += 1
        if total >= n:
            break
    return {"info": {"subdir": subdir}, "packages": out_pkgs, "packages.conda": out_conda,
            "repodata_version": 1}, total, len(universe)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subdir", default="linux-64")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    data, total, names = generate(a.records, a.seed, a.corpus, a.subdir)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True, separators=(",", ":"))
    os.replace(tmp, a.out)
    print("gen_repodata: %s: %d records over %d names (seed %d)" % (a.out, total, names, a.seed))


if __name__ == "__main__":
    main()
