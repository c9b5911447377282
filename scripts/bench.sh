#!/usr/bin/env bash
# Runs every Google Benchmark binary of the release build (see docs/PERFORMANCE.md for targets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for b in build/bin/*_bench; do
  echo "== ${b} =="
  "${b}" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
done
bash scripts/logscan_bench.sh
