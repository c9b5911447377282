#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each one briefly (seconds), so `make test`
# exercises the parsers with generated input on every run. FUZZ_SECONDS overrides the duration.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${FUZZ_SECONDS:-15}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
shopt -s nullglob
targets=(build-fuzz/bin/*_fuzz)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no fuzz targets built yet"
  exit 0
fi
for t in "${targets[@]}"; do
  name=$(basename "$t")
  corpus="build-fuzz/corpus/${name}"
  mkdir -p "$corpus"
  seeds=()
  [ -d "tests/fuzz_corpus/${name}" ] && seeds=("tests/fuzz_corpus/${name}")
  echo "fuzz: ${name} for ${secs}s"
  "$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 "$corpus" "${seeds[@]}" \
    >"build-fuzz/${name}.log" 2>&1 || { tail -50 "build-fuzz/${name}.log"; exit 1; }
done
echo "fuzz: ${#targets[@]} targets ran clean"
