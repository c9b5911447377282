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

namespace tg::cli {

void PrintVersion(bool json) {
  if (json) {
    PrintJson(
        {{"truegreen", TG_VERSION}, {"commit", TG_GIT_COMMIT}, {"onnxruntime", TG_ORT_VERSION}});
    return;
  }
  Print(std::string("truegreen ") + TG_VERSION + " (commit " + TG_GIT_COMMIT + ")\n" +
        "ONNX Runtime " + TG_ORT_VERSION +
        " (the release built against; `truegreen probe` shows what this host loads)\n");
}

}  // namespace tg::cli
