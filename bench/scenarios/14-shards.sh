# shards: a cold `envlock lock` of python + numpy + pytorch-cpu from a local HTTP server
# (tests/support/http_server.py on 127.0.0.1) holding the generated channel twice: sharded
# (CEP-16: repodata_shards.msgpack.zst + one shard per name) and as repodata.json.zst only.
# Whole process, empty repodata cache each run. Reports bytes transferred (the server's count of
# body bytes), wall time and peak RSS of each (issue 16). --quick: 50k records; full: 500k.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
need_corpus repodata
B=$BENCH_BUILD/bench
n=500000
[[ $BENCH_QUICK == 1 ]] && n=50000
f=$(repodata "$n")
k=$(( n / 1000 ))k
www=$BENCH_DATA/http-$k
if [[ ! -s $www/sharded/linux-64/repodata_shards.msgpack.zst || ! -s $www/zst/linux-64/repodata.json.zst ]]; then
  rm -rf "$www"
  for s in linux-64 noarch; do
    mkdir -p "$www/zst/$s" "$www/sharded/$s"
    src=$(dirname "$(dirname "$f")")/$s/repodata.json
    # A high zstd level for the .zst (conda-forge publishes it compressed hard); the shards get the
    # writer's level 3, so the byte ratio does not flatter the shards.
    zstd -q -12 -T0 -o "$www/zst/$s/repodata.json.zst" "$src"
    "$B/gen_shards" "$src" "$www/sharded/$s" "$s" >&2
  done
fi

log=$(mktemp)
python3 "$ENVLOCK_SOURCE_DIR/tests/support/http_server.py" --root "$www" >"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 50); do grep -q '^PORT ' "$log" && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' "$log")
[[ -n $port ]] || { echo "14-shards: the HTTP server did not start" >&2; exit 1; }
served() { python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
  "http://127.0.0.1:$port/__bytes"; }

work=$(work_dir shards-$k 64)
specs='[python, numpy, pytorch-cpu]'
for kind in sharded zst; do
  printf 'channels: [http://127.0.0.1:%s/%s]\nplatforms: [linux-64]\ndependencies: %s\n' "$port" "$kind" "$specs" \
    >"$work/$kind.yaml"
done
lock_cmd() {  # KIND: a cold lock (fresh repodata cache) of KIND's manifest
  echo "rm -rf '$work/cache-$1' && ENVLOCK_CACHE_DIR='$work/cache-$1' '$ENVLOCK_BIN' lock -f '$work/$1.yaml' -o '$work/$1.lock'"
}

declare -A bytes rss
for kind in sharded zst; do
  before=$(served)
  bash -c "$(lock_cmd "$kind")" >&2
  bytes[$kind]=$(( $(served) - before ))
  rm -rf "$work/cache-$kind"
  rss[$kind]=$(ENVLOCK_CACHE_DIR="$work/cache-$kind" peak_rss_mb "$ENVLOCK_BIN" lock -f "$work/$kind.yaml" -o "$work/$kind.lock")
done
# The two channels differ only in their URL (and so in the manifest hash): compare the rest.
same() { sed -e "s#127.0.0.1:$port/$1#CHANNEL#g" -e '/^manifest_hash:/d' "$work/$1.lock"; }
identical=1
cmp -s <(same sharded) <(same zst) || { echo "14-shards: the sharded and .zst lockfiles differ" >&2; identical=0; }
timed() {  # KIND: hyperfine of a cold lock, the repodata cache removed before each run
  hf "lock-cold-$1-$k" --prepare "rm -rf '$work/cache-$1'" -- \
    env "ENVLOCK_CACHE_DIR=$work/cache-$1" "$ENVLOCK_BIN" lock -f "$work/$1.yaml" -o "$work/$1.lock"
}
e=$(timed sharded)
r=$(timed zst)
ratio_bytes=$(python3 -c 'import sys; print("%.4f" % (int(sys.argv[1]) / int(sys.argv[2])))' "${bytes[sharded]}" "${bytes[zst]}")
mb() { python3 -c 'import sys; print("%.2f MB" % (int(sys.argv[1]) / 1e6))' "$1"; }
row scenario="cold lock over HTTP, CEP-16 shards vs repodata.json.zst" \
  inputs="$k records; python numpy pytorch-cpu; sharded $(mb "${bytes[sharded]}"), peak RSS ${rss[sharded]} MB; .zst $(mb "${bytes[zst]}"), peak RSS ${rss[zst]} MB" \
  envlock="$e" reference="$r" reference_name="the same lock from repodata.json.zst" unit=s better=lower \
  goal="sharded transfers <= 5% of the bytes and finishes >= 5x sooner; identical lockfiles" \
  check="ratio >= 5 and bytes_ratio <= 0.05 and identical == 1" \
  bytes_sharded="${bytes[sharded]}" bytes_zst="${bytes[zst]}" bytes_ratio="$ratio_bytes" \
  rss_sharded_mb="${rss[sharded]}" rss_zst_mb="${rss[zst]}" identical="$identical" \
  note="whole envlock lock process, empty repodata cache per run; bytes = body bytes the server sent"
