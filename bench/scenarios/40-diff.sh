# lockfile diff (issue 5): `envlock diff OLD NEW --format json` on two envlock.lock files of 1,000
# packages x 5 platforms a realistic re-lock apart (bench/gen_lockfiles.py, seed 1: upgrades,
# rebuilds, cuda->cpu and mkl->openblas switches, downgrades, a re-uploaded archive, added and
# removed packages), reading included, against GNU diff of the same two texts (a line diff
# without parsing) measured in the same run. Second row: the same sets as conda-lock.yml.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
n=1000
data=$BENCH_DATA/diff-$n
[[ -s $data/new.lock && -s $data/new.conda-lock.yml ]] || {
  python3 "$BENCH_TOOLS/gen_lockfiles.py" --out "$data" --packages "$n" --platforms 5 --seed 1 >&2
  python3 "$BENCH_TOOLS/gen_lockfiles.py" --out "$data" --packages "$n" --platforms 5 --seed 1 --format conda-lock >&2
}
# The diff must find the changes the generator made (exit 0: no --fail-on).
changes=$("$ENVLOCK_BIN" diff "$data/old.lock" "$data/new.lock" --format json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["changes"])')
t_env=$(hf diff-envlock -N -- "$ENVLOCK_BIN" diff "$data/old.lock" "$data/new.lock" --format json)
t_ref=$(hf diff-gnu -N -i -- diff "$data/old.lock" "$data/new.lock")
row scenario="lockfile diff, envlock.lock" inputs="2 x ($n packages x 5 platforms), $(du -k "$data/new.lock" | cut -f1) KiB each" \
  envlock="$t_env" reference="$t_ref" reference_name="GNU diff of the two texts" unit=s better=lower \
  goal="< 100 ms including reading" check="envlock < 0.1" note="changes found: $changes"
[[ $BENCH_QUICK == 1 ]] && exit 0   # the conda-lock row is for the full run
t_cl=$(hf diff-conda-lock -N -- "$ENVLOCK_BIN" diff "$data/old.conda-lock.yml" "$data/new.conda-lock.yml" --format json)
t_clref=$(hf diff-conda-lock-gnu -N -i -- diff "$data/old.conda-lock.yml" "$data/new.conda-lock.yml")
row scenario="lockfile diff, conda-lock.yml" inputs="2 x ($n packages x 5 platforms)" \
  envlock="$t_cl" reference="$t_clref" reference_name="GNU diff of the two texts" unit=s better=lower \
  goal="< 100 ms including reading" check="envlock < 0.1"
