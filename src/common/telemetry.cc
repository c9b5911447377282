#include "common/telemetry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tg::common {
namespace {

std::once_flag g_once;
bool g_opted_in = false;

}  // namespace

bool IsOrtTelemetryOptIn(const char* opt_in_value) {
  return opt_in_value != nullptr && std::strcmp(opt_in_value, "1") == 0;
}

void ApplyOrtTelemetryPolicy() {
  std::call_once(g_once, [] {
    const char* value = std::getenv(kOrtTelemetryOptInVar);
    g_opted_in = IsOrtTelemetryOptIn(value);
    if (g_opted_in) return;
    if (value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0) {
      // Logging may not be initialised yet (main calls this first): a plain stderr line.
      std::fprintf(stderr, "warning: %s is neither 1 nor 0: ONNX Runtime's telemetry stays off\n",
                   kOrtTelemetryOptInVar);
    }
    // Overwrites an ORT_DISABLE_TELEMETRY=0 too: only our own variable opts in.
    ::setenv(kOrtDisableTelemetryVar, "1", 1);
  });
}

bool OrtTelemetryOptedIn() {
  ApplyOrtTelemetryPolicy();
  return g_opted_in;
}

}  // namespace tg::common
