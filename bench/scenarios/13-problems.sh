# problems: seeded random problems of 1-10 specs (names drawn from the repodata) solved on one
# loaded index, per-problem p50/p95/max (issue 6 row 4). --quick: 50k records, 20 problems;
# full: 500k records, 1,000 problems.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
need_corpus repodata
B=$BENCH_BUILD/bench
n=500000 count=1000
[[ $BENCH_QUICK == 1 ]] && n=50000 count=20
f=$(repodata "$n")
k=$(( n / 1000 ))k
cache=$BENCH_DATA/index-cache-$k
out=$BENCH_OUT/problems-$k.json
"$B/bench_envlock" problems "$f" --cache "$cache" --count "$count" --seed 1 >"$out"
cat "$out" >&2
get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$out" "$1"; }
row scenario="seeded random problems (p95)" inputs="$k records; $count problems of 1-10 specs, seed 1" \
  envlock="$(get p95)" unit=s better=lower goal="report; no problem over 2 s" check="max <= 2" \
  p50="$(get p50)" max="$(get max)" solved="$(get solved)" problems="$(get problems)" \
  note="in-process time per problem (solve on a loaded index, names parsed on first use)"
