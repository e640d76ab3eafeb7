#!/usr/bin/env python3
"""Appends one benchmark result row to $BENCH_OUT/rows.jsonl.

usage: row.py scenario=NAME inputs=TEXT envlock=NUM reference=NUM reference_name=TEXT unit=UNIT
              better=lower|higher goal=TEXT check=EXPR [note=TEXT] [any other KEY=NUM]

ratio is how many times better envlock is than the reference: reference/envlock when lower is
better (times), envlock/reference when higher is better (throughputs). check is a Python
expression over envlock, reference, ratio and the extra numeric keys (e.g. "ratio >= 20 and
envlock <= 0.5"); pass is its value, or null when there is no check (report-only rows).
"""
import json
import os
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return text


def main():
    row = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        row[key] = value
    for key in list(row):
        if key not in ("scenario", "inputs", "reference_name", "unit", "better", "goal", "check", "note"):
            row[key] = number(row[key]) if row[key] != "" else None
    env, ref = row.get("envlock"), row.get("reference")
    ratio = None
    if isinstance(env, float) and isinstance(ref, float) and env > 0 and ref > 0:
        ratio = ref / env if row.get("better", "lower") == "lower" else env / ref
    row["ratio"] = ratio
    check = row.pop("check", "")
    if row.get("failed"):
        row["pass"] = False
    elif check:
        names = {k: v for k, v in row.items() if isinstance(v, float)}
        names["ratio"] = ratio
        try:
            row["pass"] = bool(eval(check, {"__builtins__": {}}, names))  # our own scripts' expressions
        except TypeError:
            row["pass"] = False
        row["goal_check"] = check
    else:
        row["pass"] = None
    with open(os.path.join(os.environ["BENCH_OUT"], "rows.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
    print("   %-32s envlock %-12s reference %-12s ratio %s" % (
        row.get("scenario"), env, ref, "%.2f" % ratio if ratio else "-"), file=sys.stderr)


if __name__ == "__main__":
    main()
