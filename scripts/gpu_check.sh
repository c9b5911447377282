#!/usr/bin/env bash
# The GPU verification kit: run on a GPU node (after scripts/gpu_pack.sh + unpack.sh, or in a
# build tree) and get ONE JSON summary of what truegreen sees and does there:
#   probe; doctor in production and CUDA-only with the default GPU-capable pair (setup's
#   third_party/onnxruntime/lib, or another folder with --gpu-ort), each with the op canary; run on every
#   runtime model; generate on every tiny pipeline on the GPU and on the CPU (image sha256 per
#   scheduler); the `gpu` tests; `serve` ready on the GPU with its GPU-use proof, also in its own
#   PID namespace (scripts/gpu_serve_check.py); the fault cases (CUDA_VISIBLE_DEVICES=, provider
#   not beside the core, the CPU-built core beside the GPU providers: the build-flavor trap, which
#   must be refused); wall time of every step.
# The real workload (the weights never travel: tools/gen_sd.py writes them here, on the node):
#   the full-size SD 1.5 and SDXL pipelines in fp16 (computing in fp16) and SD 1.5 in fp32; `run`
#   on the SD 1.5 UNet (batch 2, 512x512: placement, IO binding, first-call and steady latency);
#   `generate` SD 1.5 512x512 at 20 and 50 steps and SDXL 1024x1024 at 20 steps; `serve` + `bench`
#   at concurrency 1, 16 and 32 (images/min, GPU utilisation from NVML) and the in-process time of
#   the same request, for the HTTP overhead; pathology A: the same SD 1.5 (fp32) request on the
#   GPU and on the CPU under --policy dev, and the slowdown per UNet step.
# The small pipelines of the build are generated here too when the tree has none (the pack does
# not carry models).
# Without a GPU (no nvidia-smi / no libcuda) it still writes the JSON, with "gpu": false and why,
# and runs only the steps that need none (the full-size models' parameter counts among them).
#
# Usage: scripts/gpu_check.sh [--build DIR] [--gpu-ort DIR] [--out FILE]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
gpu_ort=""
out="$root/gpu-check.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --gpu-ort) gpu_ort="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# The GPU pair steps run on setup's default pair unless --gpu-ort names another folder.
[ -z "$gpu_ort" ] && gpu_ort="$root/third_party/onnxruntime/lib"
tg="$build/bin/truegreen"
[ -x "$tg" ] || { echo "gpu_check: no $tg" >&2; exit 2; }
[ -d "$build/gpu-pack-libs" ] && export LD_LIBRARY_PATH="$build/gpu-pack-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
steps="$work/steps"
mkdir -p "$steps"
n=0

# step NAME [ENV=V ...] -- CMD ARGS: runs it, keeps stdout/stderr/exit code/wall seconds.
step() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  n=$((n + 1))
  local d="$steps/$(printf %03d $n)"
  mkdir -p "$d"
  echo "$name" > "$d/name"
  printf '%q ' "${envs[@]}" "$@" > "$d/cmd"
  local t0 t1
  t0=$(date +%s.%N)
  env "${envs[@]}" timeout 900 "$@" > "$d/out" 2> "$d/err"
  echo $? > "$d/rc"
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}' > "$d/wall"
  echo "gpu_check: $name -> exit $(cat "$d/rc") ($(cat "$d/wall") s)" >&2
}

# The real workload on the GPU (CUDA provider; the default pair, or --gpu-ort).
real_workload() {
  local full="$work/sd-full" lib=() pol=(--policy "$work/cuda_policy.yaml")
  [ -n "$gpu_ort" ] && lib=(--lib-path "$gpu_ort")
  local p="a photo of a cat"
  step "write full-size SD 1.5 fp16, SDXL fp16 and SD 1.5 fp32 pipelines (on the node)" -- bash -c \
    "'$py' '$gen_sd' --out '$full/a' --width 1 --depth 1 --fp16-compute fp16 --variant sd15-optimum-fp16 & a=\$!
     '$py' '$gen_sd' --out '$full/b' --width 1 --depth 1 --fp16-compute fp16 --variant sdxl-optimum-fp16 & b=\$!
     '$py' '$gen_sd' --out '$full/c' --width 1 --depth 1 --variant sd15-optimum & c=\$!
     wait \$a && wait \$b && wait \$c"
  local sd15="$full/a/sd15-optimum-fp16" xl="$full/b/sdxl-optimum-fp16" sd15f="$full/c/sd15-optimum"
  step "run full SD 1.5 fp16 UNet, batch 2, 512x512" -- "$tg" "${lib[@]}" "${pol[@]}" --json run --model "$sd15/unet/model.onnx" --shape sample:2x4x64x64 --shape encoder_hidden_states:2x77x768 --mode bound --runs 20 --min-time 0 --warmup 3
  step "generate full SD 1.5 fp16 512x512 20 steps gpu" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$sd15" --prompt "$p" --steps 20 --size 512x512 -o "$work/full-sd15-20.png"
  step "generate full SD 1.5 fp16 512x512 50 steps gpu" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$sd15" --prompt "$p" --steps 50 --size 512x512 -o "$work/full-sd15-50.png"
  step "generate full SDXL fp16 1024x1024 20 steps gpu" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$xl" --prompt "$p" --steps 20 --size 1024x1024 -o "$work/full-sdxl-20.png"
  # The attention rewrite off: the unfused graph's time and memory beside the above.
  step "generate full SD 1.5 fp16 512x512 50 steps gpu, rewrite off" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$sd15" --prompt "$p" --steps 50 --size 512x512 --no-fuse-attention -o "$work/full-sd15-50-unfused.png"
  step "generate full SDXL fp16 1024x1024 20 steps gpu, rewrite off" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$xl" --prompt "$p" --steps 20 --size 1024x1024 --no-fuse-attention -o "$work/full-sdxl-20-unfused.png"
  step "serve full SD 1.5 fp16 + bench 1,16,32" -- python3 "$root/scripts/gpu_serve_check.py" "$tg" "${gpu_ort:--}" "$work/cuda_policy.yaml" "$sd15" --bench 1,16,32 --size 512x512 --steps 20 --window 15
  step "pathology A: full SD 1.5 fp32 512x512 2 steps gpu" -- "$tg" "${lib[@]}" "${pol[@]}" --json generate --model "$sd15f" --prompt "$p" --steps 2 --size 512x512 -o "$work/patho-gpu.png"
  step "pathology A: full SD 1.5 fp32 512x512 2 steps cpu" -- "$tg" --policy dev --json generate --model "$sd15f" --prompt "$p" --steps 2 --size 512x512 -o "$work/patho-cpu.png"
  rm -rf "$full"
}

gpu=true
why=""
if ! command -v nvidia-smi >/dev/null 2>&1; then gpu=false; why="nvidia-smi not found"; fi
if $gpu && ! nvidia-smi -L >/dev/null 2>&1; then gpu=false; why="nvidia-smi -L failed (no driver or no GPU)"; fi

gen_sd="$root/tools/gen_sd.py"
# The generator needs numpy and onnx: Debian's python3-onnx here, the node image's python3 there.
py=python3
for cand in python3 /usr/bin/python3; do
  if "$cand" -c 'import numpy, onnx' 2>/dev/null; then py="$cand"; break; fi
done
if [ ! -f "$build/models/sd-tiny/.complete" ]; then
  step "generate the small SD pipelines" -- "$py" "$gen_sd" --out "$build/models/sd-tiny" --external-data unet
fi
step "full-size SD models: parameters and MACs (dry run)" -- "$py" "$gen_sd" --dry-run --json --width 1 --depth 1 --variant sd15-optimum-fp16 --variant sdxl-optimum-fp16 --size 512 --batch 2

step probe -- "$tg" --json probe
step "doctor production (default pair)" -- "$tg" --json doctor --canary --canary-no-cache
step "doctor dev (default pair) with canary" -- "$tg" --policy dev --json doctor --canary --canary-no-cache

cuda_matrix="$work/cuda_only.yaml"
sed -e 's/^tensorrt:.*$//' -e 's/providers: \[TensorrtExecutionProvider, CUDAExecutionProvider\]/providers: [CUDAExecutionProvider]/' \
  "$root/deploy/matrix.production.yaml" > "$cuda_matrix"
printf 'profile: production\nproviders: [CUDA]\nmatrix: %s\n' "$cuda_matrix" > "$work/cuda_policy.yaml"

if $gpu; then
  if [ -n "$gpu_ort" ]; then
    step "doctor CUDA-only (GPU pair)" -- "$tg" --lib-path "$gpu_ort" --json doctor --matrix "$cuda_matrix" --canary --canary-no-cache
    for m in "$build"/models/runtime/*.onnx; do
      step "run $(basename "$m") (GPU pair)" -- "$tg" --lib-path "$gpu_ort" --policy "$work/cuda_policy.yaml" --json run --model "$m" --runs 20
    done
    # Two schedulers (the SD 1.5 default and an ancestral one) keep the device time in budget.
    for p in "$build"/models/sd-tiny/*/; do
      [ "$(basename "$p")" = bad-shape-mismatch ] && continue
      for s in pndm euler_a; do
        pn=$(basename "$p")
        step "generate $pn $s gpu" -- "$tg" --lib-path "$gpu_ort" --policy "$work/cuda_policy.yaml" --json generate --model "$p" --prompt "a photo of a cat" --steps 4 --size 256x256 --scheduler "$s" -o "$work/$pn-$s-gpu.png"
        step "generate $pn $s cpu" -- "$tg" --policy dev --json generate --model "$p" --prompt "a photo of a cat" --steps 4 --size 256x256 --scheduler "$s" -o "$work/$pn-$s-cpu.png"
      done
    done
    step "gpu tests" TRUEGREEN_GPU_ORT_DIR="$gpu_ort" -- "$build/bin/runtime_session_gpu_test"
    # serve in production on the GPU: ready, and its GPU-use proof (canary.gpu); then the same in
    # a new PID namespace, as in a pod without hostPID, where NVML lists host pids ("proven
    # indirectly" expected: docs/POLICY.md). The second needs the right to make a PID namespace.
    sd="$build/models/sd-tiny/sd15-legacy"
    step "serve tiny SD (GPU pair)" -- python3 "$root/scripts/gpu_serve_check.py" "$tg" "$gpu_ort" "$work/cuda_policy.yaml" "$sd"
    if unshare --pid --fork true 2>/dev/null; then
      step "serve tiny SD in its own PID namespace" -- unshare --pid --fork python3 "$root/scripts/gpu_serve_check.py" "$tg" "$gpu_ort" "$work/cuda_policy.yaml" "$sd"
    else
      echo "gpu_check: cannot make a PID namespace (unshare --pid): skipping the pod-like serve step" >&2
    fi
    # Fault: the provider libraries not beside the core.
    mkdir -p "$work/split/core"
    ln -sf "$gpu_ort"/libonnxruntime.so* "$work/split/core/"
    step "fault: provider not beside the core" -- "$tg" --lib-path "$work/split/core" --json doctor --matrix "$cuda_matrix"
  else
    echo "gpu_check: no --gpu-ort: skipping the GPU release pair steps" >&2
  fi
  real_workload
  step "fault: CUDA_VISIBLE_DEVICES=" CUDA_VISIBLE_DEVICES= -- "$tg" --json doctor --matrix "$cuda_matrix"
  # Fault: the CPU-built core (the flavor-test fixture) beside the GPU providers: doctor must
  # refuse it by the build-flavor rule, and the canary names the ops that crash.
  mkdir -p "$work/cpu-core-pair"
  ln -sf "$root/third_party/onnxruntime-cpu/lib/libonnxruntime.so" "$work/cpu-core-pair/"
  for f in "$gpu_ort"/libonnxruntime_providers_*.so; do ln -sf "$f" "$work/cpu-core-pair/"; done
  step "fault: CPU-built core + GPU providers, CUDA-only" -- "$tg" --lib-path "$work/cpu-core-pair" --json doctor --matrix "$cuda_matrix" --canary --canary-no-cache
fi

python3 - "$steps" "$out" "$gpu" "$why" "$gpu_ort" <<'PY'
import hashlib, json, os, sys
steps_dir, out, gpu, why, gpu_ort = sys.argv[1:6]
steps = []
for d in sorted(os.listdir(steps_dir)):
    p = os.path.join(steps_dir, d)
    rd = lambda f: open(os.path.join(p, f), errors="replace").read()
    s = {"name": rd("name").strip(), "command": rd("cmd").strip(),
         "exit_code": int(rd("rc").strip() or -1), "wall_s": float(rd("wall") or 0)}
    text = rd("out")
    try:
        j = json.loads(text)
        if "verdict" in j:
            s["verdict"] = j["verdict"]
            s["causes"] = j.get("causes", [])
        if "canary" in j:
            c = j["canary"]
            s["canary"] = {"verdict": c["verdict"], "reason": c["reason"], "wall_ms": c["wall_ms"],
                           "failed": [{k: x[k] for k in ("name", "status", "provider", "detail")}
                                      for x in c["cases"] if x["status"] != "ok"]}
        if "session" in j:
            s["placement"] = j["session"].get("placement")
            s["latency"] = j.get("latency")
            s["io"] = j.get("io")
        if "serve" in j:
            s["serve"] = j["serve"]
        if "timings_ms" in j:
            t = j["timings_ms"]
            u = sorted(t.get("unet_per_step") or [0])
            s["generate"] = {"total_ms": t.get("total"), "unet_total_ms": t.get("unet_total"),
                             "unet_median_step_ms": u[len(u) // 2], "decode_ms": t.get("decode"),
                             "encode_ms": t.get("encode"), "unet_calls": j.get("unet_calls"),
                             "degraded": j.get("degraded"), "startup": j.get("startup")}
        if "pipelines" in j and "width" in j:
            s["models"] = {p: {m: {k: v[k] for k in ("params", "macs", "batch")}
                               for m, v in ms.items()} for p, ms in j["pipelines"].items()}
        if "onnxruntime" in j:
            o = j["onnxruntime"]
            s["ort"] = {"version": o["library"].get("version"), "core_flavor": o.get("core_flavor"),
                        "compiled_providers": o.get("compiled_providers")}
    except ValueError:
        s["stdout_tail"] = text[-2000:]
    s["stderr_tail"] = rd("err")[-2000:]
    steps.append(s)
images = {}
for s in steps:
    if s["name"].startswith("generate "):
        png = s["command"].split("-o ")[-1].strip().strip("'")
        if os.path.exists(png):
            images[s["name"]] = hashlib.sha256(open(png, "rb").read()).hexdigest()
def step_named(prefix):
    return next((s for s in steps if s["name"].startswith(prefix)), None)
patho = [step_named("pathology A: full SD 1.5 fp32 512x512 2 steps " + d) for d in ("gpu", "cpu")]
figures = {}
same = {}
for name, digest in images.items():
    if name.endswith(" gpu") and name[:-4] + " cpu" in images:
        same[name[len("generate "):-4]] = digest == images[name[:-4] + " cpu"]
if same:
    figures["gpu_cpu_images_identical"] = same
if all(p and "generate" in p for p in patho):
    g, c = (p["generate"]["unet_median_step_ms"] for p in patho)
    figures["pathology_a_cpu_slowdown_per_unet_step"] = round(c / g, 1) if g else None
summary = {"schema": "truegreen.gpu_check/v1", "figures": figures, "gpu": gpu == "true", "reason": why or None,
           "gpu_ort": gpu_ort or None, "steps": steps, "image_sha256": images,
           "total_wall_s": round(sum(s["wall_s"] for s in steps), 3)}
with open(out, "w") as f:
    json.dump(summary, f, indent=2)
print(f"gpu_check: {len(steps)} step(s), gpu={summary['gpu']}, summary in {out}", file=sys.stderr)
PY
