# bench/lib.sh — sourced by bench/scenarios/*.sh (run by scripts/bench, which exports BENCH_BUILD,
# BENCH_DATA, BENCH_OUT, BENCH_QUICK, ENVLOCK_SOURCE_DIR, ENVLOCK_BIN (the envlock binary) and SHARED_DIR;
# the reference programs are in $BENCH_BUILD/bench/).
set -euo pipefail
: "${BENCH_BUILD:?run through scripts/bench}"
BENCH_TOOLS=$ENVLOCK_SOURCE_DIR/bench

# hf NAME [HYPERFINE-OPTION...] -- COMMAND: whole-process timing with hyperfine after warm-ups;
# prints the mean wall time in seconds; the raw hyperfine JSON goes to $BENCH_OUT/hf/NAME.json.
# Quick runs: 1 warm-up, 3 runs; full runs: 3 warm-ups, 10 runs. A scenario whose single run takes
# seconds may set HF_WARMUP / HF_RUNS (e.g. 1 and 5) to keep the full run under 20 minutes.
hf() {
  local name=$1; shift
  local opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  local warm=3 runs=10
  if [[ $BENCH_QUICK == 1 ]]; then warm=1 runs=3; fi
  warm=${HF_WARMUP:-$warm} runs=${HF_RUNS:-$runs}
  mkdir -p "$BENCH_OUT/hf"
  hyperfine --style none --warmup "$warm" --runs "$runs" "${opts[@]}" \
    --export-json "$BENCH_OUT/hf/$name.json" -- "$*" >&2
  python3 -c 'import json,sys; print("%.6f" % json.load(open(sys.argv[1]))["results"][0]["mean"])' \
    "$BENCH_OUT/hf/$name.json"
}

# hf_p NAME PERCENTILE: a percentile (0-100) of the wall times of hf run NAME, in seconds.
hf_p() {
  python3 -c 'import json,sys,statistics
t=sorted(json.load(open(sys.argv[1]))["results"][0]["times"]); p=float(sys.argv[2])
print("%.6f" % t[min(len(t)-1, int(round(p/100*(len(t)-1))))])' "$BENCH_OUT/hf/$1.json" "$2"
}

# peak_rss_mb COMMAND...: peak resident set size of one run, in MiB (GNU time's %M).
peak_rss_mb() {
  local f
  f=$(mktemp)
  /usr/bin/time -f %M -o "$f" "$@" >/dev/null 2>&1 || { rm -f "$f"; return 1; }
  python3 -c 'import sys; print("%.1f" % (int(open(sys.argv[1]).read().split()[-1]) / 1024))' "$f"
  rm -f "$f"
}

# row KEY=VALUE...: appends one result row (see bench/row.py for the keys).
row() { python3 "$BENCH_TOOLS/row.py" "$@"; }

# need_corpus SUBDIR: ends the scenario with a "skipped" row (not a failure) when the shared
# corpus folder $SHARED_DIR/corpus/SUBDIR is absent; the generators that learn from it need it.
need_corpus() {
  [[ -d $SHARED_DIR/corpus/$1 ]] && return 0
  local why="skipped: needs the real-data corpus ($SHARED_DIR/corpus/$1 is absent; set ENVLOCK_SHARED_DIR to the folder holding corpus/)"
  echo "$why" >&2
  row scenario="$(basename "$0" .sh)" inputs="-" goal="$why" skipped=1
  exit 0
}

# repodata RECORDS: path of the generated conda-forge-shaped repodata.json with RECORDS records
# (bench/gen_repodata.py, seed 1), generated once and kept in $BENCH_DATA. Call need_corpus
# repodata first when the file may not exist yet.
repodata() {
  local n=$1 dir=$BENCH_DATA/cf$(( $1 / 1000 ))k
  if [[ ! -s $dir/linux-64/repodata.json ]]; then
    mkdir -p "$dir/linux-64" "$dir/noarch"
    python3 "$BENCH_TOOLS/gen_repodata.py" --records "$n" --seed 1 --out "$dir/linux-64/repodata.json" \
      --corpus "$SHARED_DIR/corpus" >&2
    [[ -s $dir/noarch/repodata.json ]] || echo '{"info":{"subdir":"noarch"},"packages":{},"packages.conda":{}}' \
      >"$dir/noarch/repodata.json"
  fi
  echo "$dir/linux-64/repodata.json"
}

# work_dir NAME MIB: a fresh, empty scratch folder for file-creating scenarios (install), on tmpfs
# (/dev/shm) when it exists and has MIB MiB free, else under $BENCH_DATA. Prints the folder; the
# filesystem it is on is printed by `fs_of`. envlock and its reference always run on the same one.
work_dir() {
  local name=$1 mib=$2 base=$BENCH_DATA
  if [[ -d /dev/shm && -w /dev/shm ]] &&
    (( $(df -Pm /dev/shm | awk 'NR==2 {print $4}') > mib )); then
    base=/dev/shm/envlock-bench
  fi
  rm -rf "${base:?}/$name"
  mkdir -p "$base/$name"
  echo "$base/$name"
}

# fs_of DIR: the type of the filesystem DIR is on (ext4, tmpfs, ...).
fs_of() { stat -f -c %T "$1"; }
