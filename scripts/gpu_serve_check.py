#!/usr/bin/env python3
"""Part of the GPU kit (scripts/gpu_check.sh): `truegreen serve` on one SD pipeline.

Starts `TG [--lib-path ORT] --policy POLICY serve` over PIPELINE on an ephemeral loopback port,
waits until /readyz answers 200 or the server exits (at most --wait-s seconds), reads
/v1/capabilities, stops the server, and prints one JSON object for the kit's summary:
  {"serve": {"ready": bool, "exit_code": int|null, "pid_namespace": "pid:[...]",
             "canary": {...the capabilities' canary, whose "gpu" holds the GPU-use proof...},
             "stderr_tail": "..."}}
Exit 0 when the server became ready, 1 when it did not, 2 on a usage error.

With --bench CONCURRENCIES (e.g. 1,16,32) it then runs `TG bench` against the ready server
(--size, --steps, --window seconds per point) and adds its result as "bench".

Usage: gpu_serve_check.py TG ORT_DIR|- POLICY PIPELINE_DIR [--wait-s 600]
                          [--bench 1,16,32 --size 512x512 --steps 20 --window 15]
Run it under `unshare --pid --fork` to see the server in its own PID namespace, as in a pod.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


def run_bench(tg, port, work, concurrency, size, steps, window):
    """`TG bench` against the server: its JSON result (GPU utilisation from NVML included)."""
    out = os.path.join(work, "bench.json")
    cmd = [tg, "bench", "--url", f"http://127.0.0.1:{port}", "--concurrency", concurrency,
           "--size", size, "--steps", steps, "--warmup", "5", "--window", window,
           "--max-trials", "1", "--no-progress", "--out", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    result = {"command": " ".join(cmd), "exit_code": r.returncode,
              "stderr_tail": r.stderr.decode(errors="replace")[-2000:]}
    if os.path.exists(out):
        try:
            result["result"] = json.load(open(out))
        except ValueError as e:
            result["result_error"] = str(e)
    return result


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    tg, ort, policy, pipeline = argv[1:5]
    opt = lambda name, default: argv[argv.index(name) + 1] if name in argv else default  # noqa
    wait_s = float(opt("--wait-s", 600.0))
    bench = opt("--bench", None)
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "models"))
        os.symlink(os.path.abspath(pipeline), os.path.join(work, "models", "sd"))
        port_file = os.path.join(work, "port")
        cmd = [tg] + (["--lib-path", ort] if ort != "-" else []) + [
            "--policy", policy, "serve", "--models", os.path.join(work, "models"),
            "--port", "0", "--port-file", port_file, "--access-log", "off"]
        err_path = os.path.join(work, "stderr")
        with open(err_path, "wb") as err:
            server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        ready, port, deadline = False, None, time.time() + wait_s
        while time.time() < deadline and server.poll() is None:
            if port is None and os.path.exists(port_file):
                text = open(port_file).read()
                port = int(text) if text.endswith("\n") else None
            if port is not None and get(port, "/readyz")[0] == 200:
                ready = True
                break
            time.sleep(0.2)
        canary, bench_result = None, None
        if ready and bench:
            bench_result = run_bench(tg, port, work, bench, opt("--size", "512x512"),
                                     opt("--steps", "20"), opt("--window", "15"))
        if port is not None and server.poll() is None:
            status, body = get(port, "/v1/capabilities")
            if status == 200:
                canary = json.loads(body).get("canary")
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            exit_code = None  # stopped by us
        else:
            exit_code = server.returncode
        try:
            ns = os.readlink("/proc/self/ns/pid")
        except OSError as e:
            ns = f"unreadable: {e}"
        tail = open(err_path, errors="replace").read()[-3000:]
    out = {"ready": ready, "exit_code": exit_code, "pid_namespace": ns, "canary": canary,
           "stderr_tail": tail}
    if bench:
        out["bench"] = bench_result
    print(json.dumps({"serve": out}))
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
