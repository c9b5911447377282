#!/usr/bin/env bash
# make demo: the main job of truegreen on this machine, end to end.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TG=build/bin/truegreen
echo "== truegreen doctor (production expectations) =="
$TG doctor; echo "(exit $?)"
