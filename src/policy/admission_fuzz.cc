// libFuzzer target: snapshot JSON -> probe::SnapshotFromJson -> policy::Admit (production and dev
// matrices) -> report rendering, and the snapshot diff of the document against itself. The
// admission engine must handle any snapshot the reader accepts (half-filled, contradictory,
// absurd values) without crashing; a document diffed against itself must be equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config.h"
#include "common/json_writer.h"
#include "policy/admission.h"
#include "policy/snapshot_diff.h"
#include "probe/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto j = tg::common::ParseJson(text, "fuzz.json");
  if (!j.ok()) return 0;
  auto s = tg::probe::SnapshotFromJson(*j, "fuzz.json");
  if (!s.ok()) return 0;
  for (const tg::policy::Matrix* m : {&tg::policy::ProductionMatrix(), &tg::policy::DevMatrix()}) {
    tg::policy::AdmissionReport r = tg::policy::Admit(*s, *m);
    if (r.exit_code != 0 && r.exit_code != 3 && r.exit_code != 4) std::abort();
    (void)tg::common::WriteJson(r.ToJson());
    (void)r.ToText();
  }
  tg::common::Json doc = tg::probe::ToJson(*s);
  if (!tg::policy::DiffJson(doc, doc).empty()) std::abort();
  return 0;
}
