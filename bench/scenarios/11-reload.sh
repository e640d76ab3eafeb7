# reload: the same repodata from envlock's index cache, fresh process, against libsolv's
# repo_add_solv of a .solv written from it (issue 6 row 2). --quick: 50k records; full: 500k.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
need_corpus repodata
B=$BENCH_BUILD/bench
n=500000
[[ $BENCH_QUICK == 1 ]] && n=50000
f=$(repodata "$n")
k=$(( n / 1000 ))k
cache=$BENCH_DATA/index-cache-$k
solv=$BENCH_DATA/cf$k.solv
rm -rf "$cache"
"$B/bench_envlock" load-cache "$f" "$cache" >/dev/null          # writes the index cache
[[ -s $solv ]] || "$B/ref_libsolv" write-solv "$f" "$solv" >/dev/null
"$B/bench_envlock" load-cache "$f" "$cache" | grep -q '"from_cache":true' || { echo "index cache not used" >&2; exit 1; }
e=$(hf "load-cache-$k" -- "$B/bench_envlock" load-cache "$f" "$cache")
r=$(hf "ref-load-solv-$k" -- "$B/ref_libsolv" load-solv "$solv")
idx_mb=$(python3 -c 'import os,sys; d=sys.argv[1]; print("%.1f" % (sum(os.path.getsize(os.path.join(d,x)) for x in os.listdir(d)) / 1048576))' "$cache")
goal="report (the goal is set for 500k records)"; check=""
if [[ $n == 500000 ]]; then goal=">= 10x faster; <= 100 ms"; check="ratio >= 10 and envlock <= 0.1"; fi
row scenario="reload repodata from cache" inputs="$k records" envlock="$e" reference="$r" \
  reference_name="libsolv repo_add_solv" unit=s better=lower goal="$goal" check="$check" index_mb="$idx_mb" \
  note="bench_envlock load-cache: index file + JSON mapped, nothing parsed until a name is asked for"
