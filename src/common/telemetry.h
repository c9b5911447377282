// Third-party telemetry: off unless the user opts in.
//
// The ONNX Runtime core truegreen ships (onnxruntime-node 1.29.0) is built with ORT's POSIX
// telemetry. When its environment is created it reads /etc/os-release and /etc/machine-id, writes
// $TMPDIR/mat-debug-<pid>.log and $TMPDIR/.ses, keeps a device id and an event cache under
// $HOME/.cache/Microsoft/DeveloperTools/.onnxruntime, and starts an uploader thread; in an image
// without /etc/os-release or /bin/sh it crashes (fclose(NULL)). ORT reads ORT_DISABLE_TELEMETRY
// once, when that environment is created: with "1" none of this happens.
//
// ApplyOrtTelemetryPolicy() sets ORT_DISABLE_TELEMETRY=1 in this process's environment, so every
// child started afterwards (the op canary's child, bench --ab's servers) inherits it, unless the
// user opted in with TRUEGREEN_ORT_TELEMETRY=1; then it leaves the environment as it is (ORT's own
// ORT_DISABLE_TELEMETRY, if set, still wins). The loader seam (LibraryLoader::Load) and the child
// process starters call it before they act, main() calls it first.
//
// Thread safety: ApplyOrtTelemetryPolicy runs its body once per process (std::call_once); it
// changes the environment, so its first call belongs before other threads read the environment
// (main() makes it). OrtTelemetryOptedIn is safe to call concurrently.
#pragma once

#include <string_view>

namespace tg::common {

// The variable through which a user opts in to ONNX Runtime's telemetry ("1"; anything else,
// or unset, keeps it off).
inline constexpr const char* kOrtTelemetryOptInVar = "TRUEGREEN_ORT_TELEMETRY";
// ONNX Runtime's own opt-out variable.
inline constexpr const char* kOrtDisableTelemetryVar = "ORT_DISABLE_TELEMETRY";

// Whether `opt_in_value` (TRUEGREEN_ORT_TELEMETRY's value; nullptr when unset) opts in. Pure.
bool IsOrtTelemetryOptIn(const char* opt_in_value);

// Sets ORT_DISABLE_TELEMETRY=1 unless TRUEGREEN_ORT_TELEMETRY=1 (once per process). A value of
// TRUEGREEN_ORT_TELEMETRY that is neither "1", "0" nor empty keeps telemetry off and is warned
// about on stderr.
void ApplyOrtTelemetryPolicy();

// The decision ApplyOrtTelemetryPolicy took (it is applied first if it has not run yet).
bool OrtTelemetryOptedIn();

}  // namespace tg::common
