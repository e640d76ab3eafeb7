# rollback to the previous generation (issue 21 point 4; docs/environments.md "Generations"):
# `envlock rollback --to 1` of the 200-package bench environment (bench/gen_packages.py, seed 1)
# after an update that dropped every tenth package, against what a user without rollback does:
# `envlock install -l` the same lockfile over the updated environment, every package already in
# the package cache — in the same run, on the same filesystem (tmpfs when it has room: bench/lib.sh
# work_dir; the package cache beside the prefix, as hard links need). Both are whole processes
# under hyperfine; each run's --prepare puts the environment back to the updated state.
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
n=200
[[ $BENCH_QUICK == 1 ]] && n=30
data=$BENCH_DATA/install-pkgs-$n
python3 "$BENCH_TOOLS/gen_packages.py" --out "$data" --packages "$n" >&2
work=$(work_dir rollback 2048)
fs=$(fs_of "$work")
export ENVLOCK_PKGS_DIR=$work/pkgs
# The update: the same lockfile less every tenth package (beside the inputs: a lockfile under /dev
# is refused).
update=$data-update.lock
python3 - "$data/envlock.lock" "$update" <<'PY'
import sys
text = open(sys.argv[1]).read()
head, sep, body = text.partition("        packages:\n")
blocks = body.split("          - name: ")[1:]
dropped = {b.split("\n", 1)[0] for i, b in enumerate(blocks) if i % 10 == 9}
head = "\n".join(l for l in head.split("\n") if l.strip()[2:] not in dropped or not l.startswith("      - "))
kept = "".join("          - name: " + b for b in blocks if b.split("\n", 1)[0] not in dropped)
open(sys.argv[2], "w").write(head + sep + kept)
PY
env=$work/env
"$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$env" >/dev/null 2>&1   # generation 1; fills the cache
files=$(find "$env" -type f -o -type l | wc -l)                             # the tree a rollback restores
"$ENVLOCK_BIN" install -l "$update" -p "$env" >/dev/null 2>&1                # generation 2
t_rb=$(hf "rollback-$fs" --prepare "$ENVLOCK_BIN rollback -p $env --to 2" -- "$ENVLOCK_BIN" rollback -p "$env" --to 1)
ref=$work/ref
t_re=$(hf "rollback-reinstall-$fs" \
  --prepare "rm -rf $ref $work/.ref.envlock-generations && $ENVLOCK_BIN install -l $update -p $ref" \
  -- "$ENVLOCK_BIN" install -l "$data/envlock.lock" -p "$ref")
note=""
[[ $fs != tmpfs ]] && note="no tmpfs with room: ran on $fs"
row scenario="rollback to the previous generation ($fs)" inputs="$n packages, $files files" \
  envlock="$t_rb" reference="$t_re" reference_name="install -l of the same lockfile over the updated environment, warm cache" \
  unit=s better=lower goal=">= 100x faster" check="ratio >= 100" note="$note"
rm -rf "$work"
