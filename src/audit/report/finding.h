// The Finding: one result of an audit rule (image, Dockerfile or Kubernetes manifest), shared by
// every `truegreen audit` command so their text and JSON outputs look alike.
//
// A Finding is a plain value type (copyable, no shared state; safe from any thread). Rule ids are
// dotted and stable ("image.build-tools", "k8s.gpu-request") because policy files disable rules by
// id. Rendering never fails: empty optional fields are omitted from text and JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tg::audit {

// How bad a finding is. kError fails the audit (exit 6); kWarning fails it only when a policy asks
// for `fail_on: warning`; kInfo is context (never fails).
enum class Severity { kInfo = 0, kWarning = 1, kError = 2 };

// "info" | "warning" | "error".
std::string_view SeverityName(Severity s);
// Parses "info" | "warning" | "error"; nullopt otherwise.
std::optional<Severity> ParseSeverity(std::string_view s);

struct Finding {
  std::string rule;  // stable rule id, e.g. "image.build-tools"
  Severity severity = Severity::kError;
  std::string path;         // file path inside the image / manifest path / Dockerfile; may be empty
  int layer = -1;           // image layer index (0 = base), -1 when not about one layer
  std::int64_t line = 0;    // 1-based line in a Dockerfile/manifest, 0 when not applicable
  std::uint64_t bytes = 0;  // bytes involved (file size, sum of a directory), 0 when not applicable
  std::string message;      // what was found and why it matters
  std::string fix;          // what to change
  bool suppressed = false;  // matched a live suppression (report_format.h): reported, not gated
  std::string suppression;  // its reason and origin; or why an expired one did not apply
};

// A finding about an image file or layer (line 0). The one builder the image audits share.
Finding MakeImageFinding(std::string rule, Severity severity, std::string path, int layer,
                         std::uint64_t bytes, std::string message, std::string fix);

// True when any finding has severity >= `fail_at`.
bool AnyAtLeast(const std::vector<Finding>& findings, Severity fail_at);

// {"rule","severity","path","layer","line","bytes","message","fix","suppressed","suppression"};
// path/layer/line/bytes/fix/suppression are omitted when empty/-1/0, suppressed when false.
nlohmann::json FindingToJson(const Finding& f);
nlohmann::json FindingsToJson(const std::vector<Finding>& findings);  // array of the above

// Human-readable rendering, one finding per block:
//   error   image.build-tools  usr/bin/gcc-12 (layer 2, 1.2 MiB)
//           a C compiler ships in the runtime image
//           fix: build in a separate stage and copy only the artifacts
// Returns "" for no findings. RenderFindingText is one finding's block.
std::string RenderFindingsText(const std::vector<Finding>& findings);
std::string RenderFindingText(const Finding& f);

// "1.5 GiB", "312 KiB", "17 B" (binary units, one decimal).
std::string HumanBytes(std::uint64_t bytes);

// Parses "2GiB", "2 GiB", "500MB", "1.5G", "1024" (bytes). Binary (KiB/MiB/GiB/TiB and K/M/G/T)
// and decimal (KB/MB/GB/TB) suffixes, case-insensitive. nullopt for anything else or overflow.
std::optional<std::uint64_t> ParseByteSize(std::string_view text);

}  // namespace tg::audit
