# snapshot capture (issue 7): `envlock snapshot capture --root HOST -p PREFIX` of a generated host
# tree (bench/gen_host.py, seed 1: one prefix of N packages, their files, 5 pip distributions, a
# dpkg status). Two rows, checked against issue 7's goals on the full run (700 packages; --quick
# uses 100 and only reports):
#  1. conda-meta scan, no file hashing (--no-hash), against `tar -c` of the same conda-meta folder
#     piped to `wc -c` (reads every record once, parses nothing);
#  2. full drift hashing (every owned file sha256'd), against `openssl dgst -sha256` of the same
#     files (OpenSSL's throughput on this machine, same run), reported as MB/s: bytes hashed over
#     the whole capture's time (conservative: the scan and the snapshot writing are included).
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
n=700
[[ $BENCH_QUICK == 1 ]] && n=100
data=$BENCH_DATA/snapshot-host-$n
stats=$(python3 "$BENCH_TOOLS/gen_host.py" --out "$data" --packages "$n")
files=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["files"])' "$stats")
bytes=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes"])' "$stats")
root=$data/root
prefix=/opt/conda/envs/env0
out=$BENCH_DATA/snapshot-$n.yaml
# The generated host has every fact a capture records: the capture must exit 0 (hyperfine fails otherwise).
cap="$ENVLOCK_BIN snapshot capture --root $root -p $prefix -o $out"

goal_scan="report (issue 7: <= 50 ms for 700 packages)"; check_scan=""
goal_hash="report (issue 7: >= 80% of OpenSSL sha256 throughput)"; check_hash=""
if [[ $n == 700 ]]; then
  goal_scan="<= 50 ms (issue 7)"; check_scan="envlock <= 0.05"
  goal_hash=">= 80% of OpenSSL sha256 throughput (issue 7)"; check_hash="envlock >= 0.8 * reference"
fi
# Whole process (start, conda-meta scan, host facts, snapshot written), no file hashing.
t_scan=$(hf snapshot-scan -- "$cap --no-hash")
t_tar=$(hf snapshot-scan-tar -- "tar -cf - -C $root${prefix} conda-meta | wc -c")
row scenario="snapshot capture, conda-meta scan (--no-hash)" inputs="$n packages, 1 prefix" \
  envlock="$t_scan" reference="$t_tar" reference_name="tar -c of conda-meta, piped to wc -c" unit=s better=lower \
  goal="$goal_scan" check="$check_scan"

t_hash=$(hf snapshot-hash -- "$cap")
list=$BENCH_DATA/snapshot-files-$n.txt
(cd "$root$prefix" && find . -type f -not -path './conda-meta/*' -print0) >"$list"
t_ssl=$(hf snapshot-hash-openssl -- "cd $root$prefix && xargs -0 openssl dgst -sha256 <$list >/dev/null")
# Conservative: bytes over the whole capture with hashing (scan and snapshot writing included).
mbs_env=$(python3 -c "print('%.1f' % ($bytes / 1e6 / $t_hash))")
mbs_ssl=$(python3 -c "print('%.1f' % ($bytes / 1e6 / $t_ssl))")
row scenario="snapshot capture, full drift hashing" inputs="$n packages, $files files, $bytes bytes" \
  envlock="$mbs_env" reference="$mbs_ssl" reference_name="openssl dgst -sha256 of the same files" unit=MB/s \
  better=higher goal="$goal_hash" check="$check_hash" seconds="$t_hash"
