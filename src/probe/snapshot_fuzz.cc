// libFuzzer target for the snapshot reader: arbitrary bytes -> ParseJson -> SnapshotFromJson ->
// (on success) ToJson -> SnapshotFromJson again, which must succeed and round-trip exactly.
// Crashes, sanitizer reports and a failed round trip are findings.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config.h"
#include "probe/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto j = tg::common::ParseJson(text, "fuzz.json");
  if (!j.ok()) return 0;
  auto s = tg::probe::SnapshotFromJson(*j, "fuzz.json");
  if (!s.ok()) return 0;
  tg::common::Json again = tg::probe::ToJson(*s);
  auto back = tg::probe::SnapshotFromJson(again, "fuzz-roundtrip.json");
  if (!back.ok() || tg::probe::ToJson(*back) != again) std::abort();
  return 0;
}
