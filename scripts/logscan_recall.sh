#!/usr/bin/env bash
# Recall and false-positive rate of `truegreen logscan` on the real log excerpts quoted in public
# issues (tests/data/logscan/real_excerpts.txt): each block is piped into logscan and its exit
# code compared with the one the block expects (0 = a healthy excerpt). Targets: recall
# >= 97 % at the right exit code, no finding at a wrong exit code, no false positive.
# Usage: bash scripts/logscan_recall.sh [build/bin/truegreen]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${1:-build/bin/truegreen}"
/usr/bin/python3 - "${BIN}" tests/data/logscan/real_excerpts.txt <<'PY'
import re, subprocess, sys
binary, corpus = sys.argv[1], sys.argv[2]
blocks = re.split(r"^=== (?=exit )", open(corpus, encoding="utf-8").read(), flags=re.M)[1:]
hit = failures = fp = healthy = wrong = 0
for block in blocks:
    head, _, body = block.partition("\n")
    want = int(re.match(r"exit (\d)", head).group(1))
    got = subprocess.run([binary, "logscan", "-"], input=body.encode(), capture_output=True).returncode
    if want == 0:
        healthy += 1
        if got != 0:
            fp += 1
            print(f"false positive (exit {got}): {head}")
    else:
        failures += 1
        if got == want:
            hit += 1
        elif got != 0:
            wrong += 1
            print(f"wrong exit code (exit {got}, want {want}): {head}")
        else:
            print(f"missed (exit {got}, want {want}): {head}")
print(f"logscan recall: {hit}/{failures} failure excerpts at the right exit code "
      f"({100.0 * hit / max(failures, 1):.1f} %)")
print(f"logscan false positives: {fp}/{healthy} healthy excerpts "
      f"({100.0 * fp / max(healthy, 1):.1f} %)")
print(f"logscan wrong exit codes: {wrong}/{failures} failure excerpts")
sys.exit(0 if hit * 100 >= failures * 97 and wrong == 0 and fp == 0 else 1)
PY
