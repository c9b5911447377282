#!/usr/bin/env bash
# Fetches the OpenAI Node SDK (npm package `openai`, pinned version and tarball sha256) for
# tests/server_openai_sdk_test.cc: `npm pack` by name into the shared tarball cache, checksum,
# unpack into third_party/openai-node/openai. No lock file, no registry URL: the stock npm client
# resolves the name. The package has no dependencies. Prints the package folder on success;
# exit 3 when npm is missing or the registry cannot be reached (the test skips, saying so),
# 1 on a checksum mismatch.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TG_NPM_CACHE:-${ROOT}/third_party/.cache}"
PKG="openai@6.49.0"
SHA="e48de0f4c5dbecebdeb864233f5ea49be07cd3e0ff3bd3e1e6745dc5e168cced"
OUT="${ROOT}/third_party/openai-node"
log() { echo "openai_sdk: $*" >&2; }

if [ -f "${OUT}/.stamp" ] && [ "$(cat "${OUT}/.stamp")" = "${SHA}" ]; then
  echo "${OUT}/openai"; exit 0
fi
command -v npm >/dev/null 2>&1 || { log "npm is not installed"; exit 3; }
mkdir -p "${CACHE}"
tgz="${CACHE}/openai-${PKG##*@}.tgz"
if ! { [ -f "${tgz}" ] && echo "${SHA}  ${tgz}" | sha256sum -c --status; }; then
  log "npm pack ${PKG}"
  if ! (cd "${CACHE}" && npm pack --silent "${PKG}" >/dev/null 2>&1); then
    log "npm pack ${PKG} failed (no registry access?)"; exit 3
  fi
  if ! echo "${SHA}  ${tgz}" | sha256sum -c --status; then
    log "checksum mismatch for ${tgz}: expected ${SHA}, got $(sha256sum "${tgz}" | cut -d' ' -f1)"
    rm -f "${tgz}"; exit 1
  fi
fi
rm -rf "${OUT}.tmp"
mkdir -p "${OUT}.tmp"
tar --no-same-owner -xzf "${tgz}" -C "${OUT}.tmp"
mv "${OUT}.tmp/package" "${OUT}.tmp/openai"
echo "${SHA}" > "${OUT}.tmp/.stamp"
rm -rf "${OUT}"
mv "${OUT}.tmp" "${OUT}"
echo "${OUT}/openai"
