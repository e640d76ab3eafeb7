# install from lock, cold package cache, file:// channel (issue 6 row 6): `envlock install` with
# the cache deleted before every run (download = copy from the file:// channel, sha256 and size
# checks, extraction, linking) against bench/ref_unpack (OpenSSL sha256 + libarchive zip/zstd/tar
# extraction of the same archives, as many threads as envlock's cache uses), as MB/s of archives.
# The gated row runs on tmpfs (bench/lib.sh work_dir): on the shared VM's ext4, file creation
# itself (journal, virtual disk) varies by 10x between runs and drowns what envlock does; the
# same pair on the data folder's filesystem is reported beside it (full run only).
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
n=200
[[ $BENCH_QUICK == 1 ]] && n=30
data=$BENCH_DATA/install-pkgs-$n
python3 "$BENCH_TOOLS/gen_packages.py" --out "$data" --packages "$n" >&2
archives=$(ls "$data"/channel/linux-64/*.conda | tr '\n' ' ')
mb=$(python3 -c "import json; print(json.load(open('$data/stats.json'))['archive_bytes'] / 1e6)")
places=(tmp)
[[ $BENCH_QUICK == 1 ]] || places=(tmp data)
for place in "${places[@]}"; do
  if [[ $place == tmp ]]; then work=$(work_dir install-cold 2048); else
    work=$BENCH_DATA/install-cold-work; rm -rf "$work"; mkdir -p "$work"
    export HF_WARMUP=1 HF_RUNS=3; fi   # seconds per run on a VM disk: keeps the full run short
  fs=$(fs_of "$work")
  t_env=$(hf "install-cold-$place" --prepare "rm -rf $work/env $work/pkgs" -- \
    env ENVLOCK_PKGS_DIR="$work/pkgs" "$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$work/env")
  t_ref=$(hf "install-cold-ref-$place" --prepare "rm -rf $work/unpacked" -- \
    "$BENCH_BUILD/bench/ref_unpack" "$work/unpacked" $archives)
  env_mbs=$(python3 -c "print('%.3f' % ($mb / $t_env))")
  ref_mbs=$(python3 -c "print('%.3f' % ($mb / $t_ref))")
  goal=">= 80% of the reference's throughput"; check="ratio >= 0.8"
  [[ $place == data ]] && goal="report (the gated row is the tmpfs one)" check=""
  row scenario="install from lock, cold cache, file:// channel ($fs)" \
    inputs="$n packages, $(printf '%.1f' "$mb") MB of .conda" \
    envlock="$env_mbs" reference="$ref_mbs" reference_name="sha256 (OpenSSL) + unpack (libarchive)" unit=MB/s \
    better=higher goal="$goal" check="$check" envlock_s="$t_env" reference_s="$t_ref"
  rm -rf "$work"
done
