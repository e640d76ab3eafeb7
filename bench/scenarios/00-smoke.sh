# smoke: the runner itself — envlock --version as a whole process (no goal; proves hyperfine works).
source "$ENVLOCK_SOURCE_DIR/bench/lib.sh"
t=$(hf smoke -N -- "$ENVLOCK_BIN" --version)
row scenario="startup: envlock --version" inputs="-" envlock="$t" unit=s better=lower goal="report"
