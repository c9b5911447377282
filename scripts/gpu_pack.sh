#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a GPU node that only accepts limited uploads: the
# truegreen binaries of a build tree, their Debian shared libraries (ldd; all but the C runtime
# every Linux has: libc, libm, libstdc++, libgcc_s, the loader), the small generic runtime models
# (no Stable Diffusion weights: gpu_check.sh writes every SD pipeline on the node with
# tools/gen_sd.py, so weights never travel), the bundled
# (npm) ONNX Runtime pair, the data and deploy files the binaries read, and the ONNX Runtime GPU
# release libraries the user points at (--ort-dir: the lib/ of onnxruntime-linux-x64-gpu-<ver>).
#
# The binaries have the source and build folders compiled in, so the pack keeps every file at its
# absolute path; unpack.sh (written next to the parts) restores them there. Output: parts of at
# most 60 MiB (split), their sha256s in MANIFEST, and unpack.sh.
#
# Usage: scripts/gpu_pack.sh [--build DIR] [--ort-dir DIR] [--out DIR] [--part-size 60M]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
ort_dir=""
out="$root/gpu-pack"
part_size="60M"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --ort-dir) ort_dir="$(cd "$2" && pwd)"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --part-size) part_size="$2"; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) echo "gpu_pack: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$build/bin/truegreen" ] || { echo "gpu_pack: no $build/bin/truegreen: build first" >&2; exit 2; }
if [ -n "$ort_dir" ] && [ ! -f "$ort_dir/libonnxruntime.so" ] && ! ls "$ort_dir"/libonnxruntime.so.* >/dev/null 2>&1; then
  echo "gpu_pack: --ort-dir $ort_dir has no libonnxruntime.so (give the GPU archive's lib/)" >&2
  exit 2
fi
mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# Debian libraries of every binary, copied into <build>/gpu-pack-libs (LD_LIBRARY_PATH there).
libs="$build/gpu-pack-libs"
rm -rf "$libs"
mkdir -p "$libs"
for b in "$build"/bin/*; do
  [ -x "$b" ] || continue
  ldd "$b" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | while read -r so; do
  case "$(basename "$so")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    libcuda.so*|libnvidia-*) ;;  # the driver comes from the node, never from a pack
    *) cp -L "$so" "$libs/" ;;
  esac
done

list="$stage/files"
{
  echo "$build/bin"
  echo "$libs"
  [ -d "$build/models/runtime" ] && echo "$build/models/runtime"
  echo "$root/third_party/onnxruntime"
  [ -d "$root/third_party/onnxruntime-cpu" ] && echo "$root/third_party/onnxruntime-cpu"  # flavor-test fixture
  for d in data deploy scripts tools tests/fixtures; do [ -e "$root/$d" ] && echo "$root/$d"; done
  [ -n "$ort_dir" ] && echo "$ort_dir"
} > "$list"

name="truegreen-gpu-pack"
if command -v zstd >/dev/null; then comp=(zstd -T0 -10 -q); ext=tar.zst; else comp=(gzip -6); ext=tar.gz; fi
rm -f "$out/$name".$ext.part-* "$out/MANIFEST" "$out/unpack.sh"
# -h: follow symlinks so the npm layout's links arrive as files; paths stay absolute.
tar -C / -chf - --files-from <(sed 's|^/||' "$list") | "${comp[@]}" |
  split -b "$part_size" -d -a 3 - "$out/$name.$ext.part-"
(cd "$out" && sha256sum "$name".$ext.part-* > MANIFEST)
cat > "$out/unpack.sh" <<UNPACK
#!/usr/bin/env bash
# Restores the truegreen GPU pack at the absolute paths it was built with.
set -euo pipefail
cd "\$(dirname "\$0")"
sha256sum -c MANIFEST
cat $name.$ext.part-* | $( [ "$ext" = tar.zst ] && echo "zstd -dc" || echo "gzip -dc" ) | tar -C / -xf -
echo "unpacked under $root and $build; run: $root/scripts/gpu_check.sh --build $build${ort_dir:+ --gpu-ort $ort_dir}"
UNPACK
chmod +x "$out/unpack.sh"
n=$(ls "$out"/"$name".$ext.part-* | wc -l)
total=$(cat "$out"/"$name".$ext.part-* | wc -c)
echo "gpu_pack: $n part(s), $total bytes, in $out (MANIFEST, unpack.sh)"
