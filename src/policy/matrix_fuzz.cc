// libFuzzer target: the version-matrix parser (YAML -> Matrix) and the version syntax.
// Invariants checked beyond "no crash / no sanitizer report": a parsed matrix has a 64-hex-digit
// fingerprint, and its canonical JSON is stable (fingerprinting twice gives the same answer).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "policy/matrix.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto m = tg::policy::ParseMatrix(text, "fuzz.yaml");
  if (m.ok()) {
    std::string fp = m->Fingerprint();
    if (fp.size() != 64 || fp != m->Fingerprint()) std::abort();
  } else if (m.status().message().find("fuzz.yaml") == std::string::npos) {
    std::abort();  // every error must name the file
  }
  // The same bytes as a version and as a version specification.
  auto spec = tg::policy::VersionSpec::Parse(text);
  if (spec.ok()) {
    // The normalised text parses to the same spec.
    auto again = tg::policy::VersionSpec::Parse(spec->text());
    if (!again.ok() || again->text() != spec->text()) std::abort();
    (void)spec->Matches(std::string_view("13.0.1"));
  }
  (void)tg::policy::Version::Parse(text);
  return 0;
}
