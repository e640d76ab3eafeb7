# load: a conda-forge-shaped repodata.json into a solver-ready index, fresh process, against
# libsolv's repo_add_conda on the same file (issue 6 row 1). --quick: 50k records; full: 50k,
# 200k and 500k (the goal applies to 500k). Peak RSS is reported against the JSON's size.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
need_corpus repodata
B=$BENCH_BUILD/bench
sizes=(50000)
[[ $BENCH_QUICK == 1 ]] || sizes=(50000 200000 500000)
for n in "${sizes[@]}"; do
  f=$(repodata "$n")
  k=$(( n / 1000 ))k
  json_mb=$(python3 -c 'import os,sys; print("%.1f" % (os.path.getsize(sys.argv[1]) / 1048576))' "$f")
  e=$(hf "load-json-$k" -- "$B/bench_envlock" load-json "$f")
  r=$(hf "ref-load-json-$k" -- "$B/ref_libsolv" load-json "$f")
  rss=$(peak_rss_mb "$B/bench_envlock" load-json "$f")
  ref_rss=$(peak_rss_mb "$B/ref_libsolv" load-json "$f")
  rss_ratio=$(python3 -c "print('%.3f' % ($rss / $json_mb))")
  # Which pass indexed the file: "repodata" (the dedicated scanner) or "simdjson" (its fallback).
  index_pass=$("$B/bench_envlock" load-json "$f" | python3 -c 'import json, sys; print(json.load(sys.stdin)["scanner"])')
  goal="report"; check=""
  if [[ $n == 500000 ]]; then
    goal=">= 20x faster; <= 0.5 s wall; peak RSS <= 2x the JSON size"
    check="ratio >= 20 and envlock <= 0.5 and rss_ratio <= 2"
  fi
  row scenario="load repodata.json, fresh process" inputs="$k records, $json_mb MB" envlock="$e" reference="$r" \
    reference_name="libsolv repo_add_conda" unit=s better=lower goal="$goal" check="$check" \
    peak_rss_mb="$rss" reference_peak_rss_mb="$ref_rss" rss_ratio="$rss_ratio" index_pass="$index_pass" \
    note="bench_envlock load-json: mmap + the repodata scanner (AVX2; simdjson's pass as fallback) indexes spans by name; records parsed per name on demand"
done
