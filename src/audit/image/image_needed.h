// The GPU libraries' dependencies inside an image: every DT_NEEDED of each GPU provider library
// (libonnxruntime_providers_cuda.so / _tensorrt.so) and of the CUDA libraries it links must
// resolve to a file in the image, as the dynamic linker in the container would look for it.
//
// Search, per needing library: its DT_RUNPATH/DT_RPATH ($ORIGIN expanded), the directories of the
// image's LD_LIBRARY_PATH and TRUEGREEN_LIB_PATH (truegreen's loader preloads from there), the
// needing library's own directory, then the dynamic linker's defaults (/lib, /usr/lib, /lib64,
// /usr/lib64, /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu). Symlinks resolve inside the image.
// What the NVIDIA container toolkit injects on a GPU node (libcuda, libnvidia-*, libnvcuvid,
// libcudadebugger) is never required. The DT_NEEDED of the libraries a provider needs are read
// too (one level: libcublas needs libcublasLt), when their copies were extracted
// (ExtractForNeeded).
//
// Rules (docs/AUDIT_IMAGE.md):
//   image.gpu.needed            error: a DT_NEEDED that resolves nowhere in the image, naming the
//                               library and who needs it.
//   image.gpu.needed-unchecked  warning: a GPU library whose DT_NEEDED could not be read (not
//                               extracted, not an ELF64 file); the audit says so instead of
//                               passing.
//
// Failure behaviour: never fails; every problem is a Finding. Thread safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "audit/image/image_fs.h"
#include "audit/image/oci_image.h"
#include "audit/report/finding.h"

namespace tg::audit {

// The libraries whose copies the rule reads (GPU providers and the CUDA, cuDNN, TensorRT and
// NVRTC libraries they link).
bool ExtractForNeeded(std::string_view path);

// The rules over the merged filesystem (the image's environment from `image.env`).
std::vector<Finding> RunNeededRules(const Image& image, const FileSystem& fs);

}  // namespace tg::audit
