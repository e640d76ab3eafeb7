#!/usr/bin/env python3
"""Collects $BENCH_OUT/rows.jsonl into results.json and results.md and prints the table.

usage: report.py --out DIR --binary PATH --quick 0|1 --seconds N [--readme README.md]

results.json: {"binary_sha256", "commit", "machine": {cpu, cores, kernel}, "quick", "seconds", "rows": [...]}
(no host or user names). --readme replaces the text between <!-- bench:begin --> and
<!-- bench:end --> in README.md with the table.
"""
import argparse
import hashlib
import json
import os
import platform
import subprocess


def fmt(value, unit):
    if value is None:
        return "—"
    if unit == "s":
        return "%.0f ms" % (value * 1000) if value < 1 else "%.2f s" % value
    if unit in ("files/s", "MB/s", "records/s"):
        return "{:,.0f} {}".format(value, unit)
    return "%.3g %s" % (value, unit or "")


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def commit_of(source_dir):
    """The source tree's commit, with "+changes" when the tree differs from it; "unknown" without git."""
    try:
        rev = subprocess.run(["git", "-C", source_dir, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", source_dir, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    # README.md changes when the table is written: not a change to what was measured
    changed = [l for l in dirty.splitlines() if not l.endswith(" README.md")]
    return rev + ("+changes" if changed else "")


def table(rows):
    out = ["| scenario | inputs | envlock | reference | ratio | goal | pass |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        unit = r.get("unit", "s")
        ref = fmt(r.get("reference"), unit)
        if r.get("reference_name"):
            ref += " (%s)" % r["reference_name"]
        ratio = "%.1fx" % r["ratio"] if r.get("ratio") else "—"
        verdict = {True: "yes", False: "**no**", None: "report"}[r.get("pass")]
        if r.get("skipped"):
            verdict = "skipped"
        extra = " — " + r["note"] if r.get("note") else ""
        shown = fmt(r.get("envlock"), unit)
        if isinstance(r.get("files_per_s"), float):  # the install rows' goal is also in files/s
            shown += " (%s files/s)" % format(int(r["files_per_s"]), ",")
        if isinstance(r.get("rss_ratio"), float):  # the load rows' goal is also on peak RSS
            shown += ", peak RSS %.0f MB (%.2fx the JSON)" % (r["peak_rss_mb"], r["rss_ratio"])
        out.append("| %s | %s | %s | %s | %s | %s%s | %s |" % (
            r.get("scenario", "?"), r.get("inputs", ""), shown, ref, ratio,
            r.get("goal", ""), extra, verdict))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--quick", default="0")
    ap.add_argument("--seconds", default="0")
    ap.add_argument("--readme")
    args = ap.parse_args()
    rows = []
    path = os.path.join(args.out, "rows.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    digest = hashlib.sha256()
    with open(args.binary, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    result = {
        "binary_sha256": digest.hexdigest(),
        "commit": commit_of(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release()},
        "quick": args.quick == "1",
        "seconds": int(args.seconds),
        "rows": rows,
    }
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True)
        f.write("\n")
    text = table(rows)
    header = "%s run of commit %s, %d s, %s, %d cores, envlock sha256 %s" % (
        "quick" if result["quick"] else "full", result["commit"], result["seconds"], result["machine"]["cpu"],
        result["machine"]["cores"] or 0, result["binary_sha256"][:12])
    md = "_%s_\n\n%s\n" % (header, text)
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    if args.readme:
        with open(args.readme, encoding="utf-8") as f:
            readme = f.read()
        begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
        if begin not in readme or end not in readme:
            raise SystemExit("report.py: %s has no %s ... %s markers" % (args.readme, begin, end))
        head, rest = readme.split(begin, 1)
        _, tail = rest.split(end, 1)
        with open(args.readme, "w", encoding="utf-8") as f:
            f.write(head + begin + "\n" + md + end + tail)


if __name__ == "__main__":
    main()
