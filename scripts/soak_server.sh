#!/usr/bin/env bash
# make soak: `truegreen serve` (dev policy, tiny SD 1.5 pipeline + a generic ONNX model) under
# SOAK_SECONDS (default 300) of load at SOAK_CONCURRENCY (default 16) clients, half image requests
# and half KServe inferences. Samples the server's RSS every 5 s and fails when RSS at the end is
# more than SOAK_RSS_GROWTH (default 1.25) x the RSS after the first minute (or the first fifth of a
# shorter run), when any response is not 200/429, or when the server does not drain on SIGTERM.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TG=build/bin/truegreen
SECONDS_TOTAL=${SOAK_SECONDS:-300}
CONC=${SOAK_CONCURRENCY:-16}
GROWTH=${SOAK_RSS_GROWTH:-1.25}
work=build/soak
rm -rf "${work}"
mkdir -p "${work}/models/mm"
ln -s "$(pwd)/build/models/sd-tiny/sd15-legacy" "${work}/models/sd15"
ln -s "$(pwd)/build/models/runtime/matmul_softmax.onnx" "${work}/models/mm/model.onnx"
printf 'max_batch: 8\nbatch_delay_ms: 2\n' > "${work}/models/mm/config.yaml"
$TG --policy dev serve --models "${work}/models" --port 0 --port-file "${work}/port" \
  --queue-size 64 --access-log off 2> "${work}/serve.log" &
srv=$!
trap 'kill -KILL ${srv} 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do [ -s "${work}/port" ] && break; sleep 0.1; done
port=$(cat "${work}/port")
for _ in $(seq 1 1200); do curl -sf "http://127.0.0.1:${port}/readyz" >/dev/null && break; sleep 0.1; done
python3 - "${port}" "${srv}" "${SECONDS_TOTAL}" "${CONC}" "${GROWTH}" <<'PY'
import collections, json, sys, threading, time, urllib.request, urllib.error
port, pid, total, conc, growth = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
base = f"http://127.0.0.1:{port}"
img = json.dumps({"prompt": "a photo of a cat", "size": "256x256", "steps": 4,
                  "response_format": "b64_json"}).encode()
inf = json.dumps({"inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": [1] * 8}]}).encode()
stop = time.time() + total
codes = collections.Counter()
lock = threading.Lock()
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
def client(k):
    path, body = ("/v1/images/generations", img) if k % 2 == 0 else ("/v2/models/mm/infer", inf)
    while time.time() < stop:
        try:
            with urllib.request.urlopen(urllib.request.Request(base + path, body), timeout=120) as r:
                c = r.status
        except urllib.error.HTTPError as e:
            c = e.code
        except Exception:
            c = 0
        with lock:
            codes[c] += 1
threads = [threading.Thread(target=client, args=(k,)) for k in range(conc)]
for t in threads: t.start()
samples, t0, base_rss = [], time.time(), None
while any(t.is_alive() for t in threads):
    time.sleep(5)
    samples.append(rss())
    if base_rss is None and time.time() - t0 >= min(60, total / 5):
        base_rss = samples[-1]
for t in threads: t.join()
end = rss()
base_rss = base_rss or samples[0]
print(json.dumps({"seconds": total, "concurrency": conc, "responses": dict(codes),
                  "rss_base_mib": round(base_rss / 2**20, 1), "rss_end_mib": round(end / 2**20, 1),
                  "rss_max_mib": round(max(samples) / 2**20, 1)}))
bad = sum(n for c, n in codes.items() if c not in (200, 429))
sys.exit(1 if bad or end > growth * base_rss else 0)
PY
rc=$?
kill -TERM "${srv}"
wait "${srv}"
echo "server exit $? after SIGTERM"
exit ${rc}
