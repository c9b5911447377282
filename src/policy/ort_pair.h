// The fix for a GPU provider beside an ONNX Runtime core that cannot host it (admission's
// onnxruntime.core_flavor check, the session factory's refusal), first remedy first: the pair
// scripts/setup.sh installs (its ORT_CORE_PKG and ORT_GPU_PKG; policy/admission_test.cc checks
// the text against the script), which the build loads by default and truegreen's image ships.
// A constant: no ownership, no failure, thread-safe.
#pragma once

#include <string_view>

namespace tg::policy {

inline constexpr std::string_view kOrtPairRemedy =
    "use the pair scripts/setup.sh installs in third_party/onnxruntime/lib/ (the CUDA-built core "
    "of onnxruntime-node@1.29.0 with the CUDA and TensorRT providers of "
    "com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9: truegreen's default, and what its image "
    "ships); or core and providers from one GPU release archive of the same version, given with "
    "--lib-path or baked into the image";

}  // namespace tg::policy
