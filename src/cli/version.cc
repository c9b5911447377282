#include "cli/version.h"

#include <string>

#include "cli/output.h"
#include "common/config.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif
#ifndef TG_GIT_COMMIT
#define TG_GIT_COMMIT "unknown"
#endif
#ifndef TG_ORT_VERSION
#define TG_ORT_VERSION "unknown"
#endif
#ifndef TG_ORT_CORE_PKG
#define TG_ORT_CORE_PKG "unknown"
#endif
#ifndef TG_ORT_GPU_PKG
#define TG_ORT_GPU_PKG "unknown"
#endif

namespace tg::cli {

// The ORT line names the release the binary was built against and the pair scripts/setup.sh
// installs for it (a core built with CUDA and TensorRT, with its providers in one folder), since a
// CPU-built core beside GPU providers crashes on a GPU. What a host really loads is probe's answer.
void PrintVersion(bool json) {
  if (json) {
    PrintJson({{"truegreen", TG_VERSION},
               {"commit", TG_GIT_COMMIT},
               {"onnxruntime", TG_ORT_VERSION},
               {"onnxruntime_setup",
                {{"core", TG_ORT_CORE_PKG},
                 {"core_flavor", "gpu"},
                 {"providers", TG_ORT_GPU_PKG},
                 {"layout", "one folder (core beside its providers)"}}}});
    return;
  }
  Print(std::string("truegreen ") + TG_VERSION + " (commit " + TG_GIT_COMMIT + ")\n" +
        "ONNX Runtime " + TG_ORT_VERSION +
        " (the release built against; `truegreen probe` shows what this host loads)\n" +
        "  setup installs the GPU-flavor core of " + TG_ORT_CORE_PKG +
        " (built with CUDA and TensorRT) beside the CUDA/TensorRT providers of " + TG_ORT_GPU_PKG +
        ", in one folder: GPU providers need a core built with CUDA\n");
}

}  // namespace tg::cli
