# install from lock, warm package cache (issue 6 row 5): `envlock install -l LOCK -p PREFIX` into a
# deleted prefix with every package already extracted in the cache, against `cp -al` of the same
# file tree (the prefix envlock made) in the same run, on the same filesystem (the cache and the
# prefix share it: hard links, as users get). Inputs: bench/gen_packages.py (seed 1).
# The gated row runs on tmpfs (bench/lib.sh work_dir; bench/README.md "Method"): on the shared
# VM's ext4 both envlock and `cp -al` are bound by the journal of the virtual disk (~7,000 links/s,
# +-40% between runs), which hides what envlock itself costs per file. The full run repeats the
# pair on the data folder's filesystem (report-only), and the durability rows run there, where
# fsync means something.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
n=200
[[ $BENCH_QUICK == 1 ]] && n=30
data=$BENCH_DATA/install-pkgs-$n
python3 "$BENCH_TOOLS/gen_packages.py" --out "$data" --packages "$n" >&2
places=(tmp)
[[ $BENCH_QUICK == 1 ]] || places=(tmp data)
for place in "${places[@]}"; do
  if [[ $place == tmp ]]; then
    work=$(work_dir install-warm 2048)
    [[ $BENCH_QUICK == 1 ]] || export HF_WARMUP=2 HF_RUNS=10
  else
    work=$BENCH_DATA/install-warm-work
    rm -rf "$work"
    mkdir -p "$work"
    [[ $BENCH_QUICK == 1 ]] || export HF_WARMUP=1 HF_RUNS=5   # one run moves ~28,000 files on a VM disk
  fi
  fs=$(fs_of "$work")
  export ENVLOCK_PKGS_DIR=$work/pkgs
  "$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$work/tree" >/dev/null  # fills the cache; the tree cp copies
  files=$(find "$work/tree" -type f -o -type l | wc -l)
  t_env=$(hf "install-warm-$place" --prepare "rm -rf $work/env" -- "$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$work/env")
  t_cp=$(hf "install-warm-cp-al-$place" --prepare "rm -rf $work/cp" -- cp -al "$work/tree" "$work/cp")
  rate=$(python3 -c "print('%.0f' % ($files / $t_env))")
  goal=">= 25,000 files/s and <= 2x cp -al"; check="files_per_s >= 25000 and ratio >= 0.5"; note=""
  if [[ $place == data ]]; then
    goal="report (the gated row is the tmpfs one)"; check=""
  elif [[ $fs != tmpfs ]]; then
    note="no tmpfs with room: ran on $fs"
  fi
  row scenario="install from lock, warm package cache ($fs)" inputs="$n packages, $files files" \
    envlock="$t_env" reference="$t_cp" reference_name="cp -al of the same tree" unit=s better=lower \
    files_per_s="$rate" goal="$goal" check="$check" note="$note"
  [[ $place == data ]] || { rm -rf "$work"; continue; }

  # The durability design (docs/install.md, "Durability cost"): the default fsyncs what envlock
  # writes (ENVLOCK_INSTALL_SYNC=written); the same install with syncfs of the filesystem (fs),
  # with an fsync of every file and directory (files: slow, so timed here with few runs rather
  # than with hyperfine's), and with no sync at all (none). Report-only rows, full run only.
  mean_wall() {  # RUNS COMMAND...: mean wall seconds, the prefix (-p) deleted before each run
    python3 - "$@" <<'PY'
import shutil, subprocess, sys, time
runs, cmd, total = int(sys.argv[1]), sys.argv[2:], 0.0
for _ in range(runs):
    shutil.rmtree(cmd[cmd.index("-p") + 1], ignore_errors=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total += time.perf_counter() - t
print("%.6f" % (total / runs))
PY
  }
  for mode in fs files none; do
    runs=3
    [[ $mode == files ]] && runs=1
    t=$(mean_wall $runs env ENVLOCK_INSTALL_SYNC=$mode "$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$work/env")
    row scenario="install warm ($fs), ENVLOCK_INSTALL_SYNC=$mode" inputs="$n packages, $files files" \
      envlock="$t" reference="$t_env" reference_name="the default (written)" unit=s better=lower goal="report" \
      files_per_s="$(python3 -c "print('%.0f' % ($files / $t))")"
  done
  rm -rf "$work"
done
