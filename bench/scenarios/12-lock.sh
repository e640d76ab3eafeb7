# lock: a python + numpy + pytorch-like request with a warm index cache, whole process (load +
# lazy solve), against libsolv solving the same specs with every record of the channel in its
# pool (issue 6 row 3). --quick: 50k records; full: 500k.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
need_corpus repodata
B=$BENCH_BUILD/bench
n=500000
[[ $BENCH_QUICK == 1 ]] && n=50000
f=$(repodata "$n")
k=$(( n / 1000 ))k
cache=$BENCH_DATA/index-cache-$k
specs=(python numpy pytorch-cpu)
"$B/bench_envlock" solve "$f" --cache "$cache" "${specs[@]}" >"$BENCH_OUT/lock-$k.json"
cat "$BENCH_OUT/lock-$k.json" >&2
e=$(hf "lock-$k" -- "$B/bench_envlock" solve "$f" --cache "$cache" "${specs[@]}")
r=$(hf "ref-solve-all-$k" -- "$B/ref_libsolv" solve-all "$f" "${specs[@]}")
parsed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parsed_names"])' "$BENCH_OUT/lock-$k.json")
row scenario="lock python+numpy+pytorch, warm cache" inputs="$k records; ${specs[*]}" envlock="$e" reference="$r" \
  reference_name="libsolv, every record in the pool" unit=s better=lower goal=">= 5x faster end to end" \
  check="ratio >= 5" parsed_names="$parsed" \
  note="bench_envlock solve: index cache reload + only reachable names parsed and offered to libsolv"
