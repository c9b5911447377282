// Orchestration of the image audit and its renderings.
#include "audit/image/image_audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "audit/image/image_needed.h"
#include "common/file_util.h"

namespace tg::audit {

using common::Json;
using common::Result;

namespace {

Finding Make(std::string rule, std::string path, int layer, std::uint64_t bytes,
             std::string message, std::string fix) {
  return MakeImageFinding(std::move(rule), Severity::kError, std::move(path), layer, bytes,
                          std::move(message), std::move(fix));
}

std::vector<Finding> BudgetRules(const ImageAuditReport& r, const ImagePolicy& p) {
  std::vector<Finding> out;
  if (r.total_bytes > r.budget) {
    out.push_back(Make("image.budget", "", -1, r.total_bytes,
                       fmt::format("image is {} uncompressed, over the {} budget",
                                   HumanBytes(r.total_bytes), HumanBytes(r.budget)),
                       "use a slim runtime base, multi-stage builds and remove build tools, "
                       "caches and headers (see the other findings)"));
  }
  if (p.compressed_budget && r.total_compressed_bytes > *p.compressed_budget) {
    out.push_back(
        Make("image.budget.compressed", "", -1, r.total_compressed_bytes,
             fmt::format("image is {} compressed, over the {} budget",
                         HumanBytes(r.total_compressed_bytes), HumanBytes(*p.compressed_budget)),
             "shrink the image (pull time grows with compressed size)"));
  }
  if (p.layer_budget) {
    for (const auto& l : r.layers) {
      if (l.uncompressed_bytes > *p.layer_budget) {
        out.push_back(
            Make("image.budget.layer", "", l.index, l.uncompressed_bytes,
                 fmt::format("layer {} is {} uncompressed, over the per-layer budget {}"
                             " (created by: {})",
                             l.index, HumanBytes(l.uncompressed_bytes), HumanBytes(*p.layer_budget),
                             l.created_by.empty() ? "?" : l.created_by.substr(0, 120)),
                 "split or slim this layer"));
      }
    }
  }
  const Efficiency& e = r.efficiency;
  std::string top;
  for (std::size_t i = 0; i < e.inefficient.size() && i < 3; ++i) {
    top += fmt::format("{}{} ({}x, {})", i ? ", " : "", e.inefficient[i].path,
                       e.inefficient[i].copies, HumanBytes(e.inefficient[i].cumulative));
  }
  const char* fix =
      "do not add files in one layer and delete or overwrite them in a later one: clean up in "
      "the same RUN, or copy only the final artifacts into a fresh stage";
  if (e.score < p.lowest_efficiency) {
    out.push_back(
        Make("image.efficiency", "", -1, e.wasted_bytes,
             fmt::format("efficiency {:.4f} is below {:.2f}; largest duplicated paths: {}", e.score,
                         p.lowest_efficiency, top.empty() ? "-" : top),
             fix));
  }
  if (p.highest_wasted_bytes && e.wasted_bytes > *p.highest_wasted_bytes) {
    out.push_back(Make("image.wasted-bytes", "", -1, e.wasted_bytes,
                       fmt::format("{} wasted (paths present in several layers), above {}; "
                                   "largest: {}",
                                   HumanBytes(e.wasted_bytes), HumanBytes(*p.highest_wasted_bytes),
                                   top.empty() ? "-" : top),
                       fix));
  }
  if (e.user_bytes > 0 && e.user_wasted_percent > p.highest_user_wasted_percent) {
    out.push_back(
        Make("image.user-wasted-percent", "", -1, e.wasted_bytes,
             fmt::format("wasted bytes are {:.1f}% of the non-base layers, above {:.1f}%",
                         100 * e.user_wasted_percent, 100 * p.highest_user_wasted_percent),
             fix));
  }
  return out;
}

}  // namespace

Result<ImageAuditReport> AuditImage(const std::string& path, const ImageAuditOptions& options) {
  ReadOptions read;
  read.verify_layer_digests = options.verify_digests;
  // ORT cores and GPU providers are streamed to a private folder for the pair check
  // (image_ort.h); it is removed when the audit returns.
  TG_ASSIGN_OR_RETURN(common::ScopedTempDir extract_dir,
                      common::ScopedTempDir::Create("truegreen-audit"));
  CaptureSpec capture(CaptureForRules);
  // The pair check's cores and providers, and the GPU libraries whose DT_NEEDED are checked
  // (image_needed.h): a core, two providers and their CUDA and TensorRT libraries.
  capture.extract = [](std::string_view p) { return ExtractForOrtPair(p) || ExtractForNeeded(p); };
  capture.extract_dir = extract_dir.path();
  capture.extract_budget = std::make_shared<CaptureSpec::Budget>();
  capture.extract_budget->files_left = 24;
  TG_ASSIGN_OR_RETURN(Image read_image, ReadImage(path, options.policy.limits, capture, read));
  ImageAuditReport r;
  r.image = std::make_shared<const Image>(std::move(read_image));
  const Image& img = *r.image;
  r.source = img.source;
  r.format = std::string(ImageFormatName(img.format));
  r.config_digest = img.config_digest;
  r.history = img.history;
  r.budget = options.budget ? *options.budget : options.policy.budget.value_or(kDefaultImageBudget);
  r.verify_digests = options.verify_digests;
  for (const auto& l : img.layers) {
    LayerSummary s;
    s.index = l.index;
    s.digest = l.digest;
    s.created_by = l.created_by;
    s.compression = std::string(CompressionName(l.scan.compression));
    s.compressed_bytes = l.declared_size ? l.declared_size : l.scan.compressed_bytes;
    s.uncompressed_bytes = l.scan.uncompressed_bytes;
    s.entries = l.scan.entries.size();
    s.digest_verified = !l.actual_digest.empty() && l.actual_digest == l.expected_digest;
    s.streamed = l.streamed;
    for (const auto& e : l.scan.entries) s.file_bytes += e.size;
    r.total_bytes += s.uncompressed_bytes;
    r.total_compressed_bytes += s.compressed_bytes;
    r.layers.push_back(std::move(s));
  }
  r.efficiency = MergeWithEfficiency(img, &r.fs);
  for (const FsNode& n : r.fs) {
    if (n.type() == EntryType::kFile) ++r.files;
  }
  r.snapshot = BuildSnapshot(img, r.fs);
  const policy::Matrix* matrix = options.matrix ? &*options.matrix : nullptr;

  std::vector<Finding> all = img.findings;
  for (auto& f : BudgetRules(r, options.policy)) all.push_back(std::move(f));
  for (auto& f : RunFileRules(img, r.fs)) all.push_back(std::move(f));
  for (auto& f : RunGpuRules(img, r.fs, r.snapshot, matrix)) all.push_back(std::move(f));
  for (auto& f : RunOrtPairRules(img, r.fs, options.ort_inspect, options.ort_inspect_off, &r.ort)) {
    all.push_back(std::move(f));
  }
  for (auto& f : RunNeededRules(img, r.fs)) all.push_back(std::move(f));
  r.findings = ApplyPolicy(std::move(all), options.policy);
  std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.rule != b.rule) return a.rule < b.rule;
    return a.path < b.path;
  });
  r.fail_on = options.policy.fail_on;
  r.failed = AnyAtLeast(r.findings, r.fail_on);
  return r;
}

Json ReportToJson(const ImageAuditReport& r) {
  Json j;
  j["image"] = r.source;
  j["format"] = r.format;
  j["config_digest"] = r.config_digest;
  j["verdict"] = r.failed ? "fail" : "pass";
  j["total_bytes"] = r.total_bytes;
  j["total_compressed_bytes"] = r.total_compressed_bytes;
  j["budget_bytes"] = r.budget;
  j["files"] = r.files;
  j["verify_digests"] = r.verify_digests;
  Json layers = Json::array();
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    const std::uint64_t wasted =
        i < r.efficiency.layer_wasted_bytes.size() ? r.efficiency.layer_wasted_bytes[i] : 0;
    layers.push_back({{"index", l.index},
                      {"wasted_bytes", wasted},
                      {"digest", l.digest},
                      {"created_by", l.created_by},
                      {"compression", l.compression},
                      {"compressed_bytes", l.compressed_bytes},
                      {"uncompressed_bytes", l.uncompressed_bytes},
                      {"file_bytes", l.file_bytes},
                      {"entries", l.entries},
                      {"digest_verified", l.digest_verified}});
  }
  j["layers"] = layers;
  Json hist = Json::array();
  for (const auto& h : r.history) {
    hist.push_back({{"created_by", h.created_by},
                    {"empty_layer", h.empty_layer},
                    {"layer", h.layer >= 0 ? Json(h.layer) : Json(nullptr)}});
  }
  j["history"] = hist;
  Json ineff = Json::array();
  for (std::size_t i = 0; i < r.efficiency.inefficient.size() && i < 20; ++i) {
    const auto& p = r.efficiency.inefficient[i];
    ineff.push_back({{"path", p.path}, {"copies", p.copies}, {"bytes", p.cumulative}});
  }
  j["efficiency"] = {{"score", r.efficiency.score},
                     {"wasted_bytes", r.efficiency.wasted_bytes},
                     {"user_bytes", r.efficiency.user_bytes},
                     {"user_wasted_percent", r.efficiency.user_wasted_percent},
                     {"inefficient_paths", ineff}};
  j["capabilities"] = SnapshotToJson(r.snapshot);
  j["onnxruntime"] = OrtPairToJson(r.ort);
  j["findings"] = FindingsToJson(r.findings);
  j["fail_on"] = std::string(SeverityName(r.fail_on));
  return j;
}

std::string ReportToText(const ImageAuditReport& r) {
  std::string out;
  out += fmt::format("image   {} ({})\n", r.source, r.format);
  out += fmt::format("size    {} uncompressed ({} bytes), {} compressed, budget {}\n",
                     HumanBytes(r.total_bytes), r.total_bytes, HumanBytes(r.total_compressed_bytes),
                     HumanBytes(r.budget));
  out += fmt::format("files   {} in {} layers\n", r.files, r.layers.size());
  if (r.verify_digests) {
    std::size_t ok = 0;
    for (const auto& l : r.layers) ok += l.digest_verified ? 1 : 0;
    out += fmt::format("digests {} of {} layer blobs match their digests\n", ok, r.layers.size());
  } else {
    out +=
        "digests manifest and config checked; layers by size only (--verify-digests hashes "
        "them)\n";
  }
  out += fmt::format("dive    efficiency {:.4f}, wasted {} ({:.1f}% of user layers)\n",
                     r.efficiency.score, HumanBytes(r.efficiency.wasted_bytes),
                     100 * r.efficiency.user_wasted_percent);
  out += "layers  (index, uncompressed, compressed, compression, wasted, created by)\n";
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    const std::uint64_t wasted =
        i < r.efficiency.layer_wasted_bytes.size() ? r.efficiency.layer_wasted_bytes[i] : 0;
    out += fmt::format("  {:>3}  {:>10}  {:>10}  {:<5} {:>10}  {}\n", l.index,
                       HumanBytes(l.uncompressed_bytes), HumanBytes(l.compressed_bytes),
                       l.compression, HumanBytes(wasted), l.created_by.substr(0, 80));
  }
  if (!r.snapshot.components.empty()) {
    out += "capabilities\n";
    for (const auto& [name, c] : r.snapshot.components) {
      out += fmt::format("  {:<22} {:<14} {}\n", name, c.version.empty() ? "-" : c.version, c.path);
    }
  }
  if (!r.ort.gpu_providers.empty()) {
    out += r.ort.checked
               ? fmt::format("ort     core {} ({}, {}-built) with {} GPU provider(s)\n", r.ort.core,
                             r.ort.core_version, r.ort.core_flavor, r.ort.gpu_providers.size())
               : fmt::format("ort     core/provider pair NOT checked: {}\n", r.ort.skipped_reason);
  }
  out += fmt::format("findings ({})\n", r.findings.size());
  out += RenderFindingsText(r.findings);
  out += fmt::format("verdict {}\n", r.failed ? "FAIL" : "PASS");
  return out;
}

ImageDiff DiffImages(const ImageAuditReport& a, const ImageAuditReport& b) {
  ImageDiff d;
  auto ia = a.fs.begin();
  auto ib = b.fs.begin();
  auto bytes = [](const FsNode& n) { return n.type() == EntryType::kFile ? n.size() : 0; };
  while (ia != a.fs.end() || ib != b.fs.end()) {
    if (ib == b.fs.end() || (ia != a.fs.end() && ia->path() < ib->path())) {
      if (ia->type() != EntryType::kDir) {
        d.files.push_back({std::string(ia->path()), "removed", bytes(*ia), 0, ""});
        d.removed_bytes += bytes(*ia);
      }
      ++ia;
    } else if (ia == a.fs.end() || ib->path() < ia->path()) {
      if (ib->type() != EntryType::kDir) {
        d.files.push_back({std::string(ib->path()), "added", 0, bytes(*ib), ""});
        d.added_bytes += bytes(*ib);
      }
      ++ib;
    } else {
      const FsNode& x = *ia;
      const FsNode& y = *ib;
      std::string what;
      if (x.type() != y.type()) {
        what = fmt::format("type {}->{}", EntryTypeName(x.type()), EntryTypeName(y.type()));
      } else if (x.size() != y.size()) {
        what = "size";
      } else if (x.link() != y.link()) {
        what = "link";
      } else if (x.mode() != y.mode()) {
        what = fmt::format("mode {:o}->{:o}", x.mode(), y.mode());
      }
      if (!what.empty()) {
        d.files.push_back({std::string(ia->path()), "changed", bytes(x), bytes(y), what});
        d.changed_delta +=
            static_cast<std::int64_t>(bytes(y)) - static_cast<std::int64_t>(bytes(x));
      }
      ++ia;
      ++ib;
    }
  }
  std::set<std::string> names;
  for (const auto& [k, v] : a.snapshot.components) names.insert(k);
  for (const auto& [k, v] : b.snapshot.components) names.insert(k);
  for (const auto& n : names) {
    auto x = a.snapshot.components.find(n);
    auto y = b.snapshot.components.find(n);
    std::string va = x == a.snapshot.components.end()
                         ? ""
                         : (x->second.version.empty() ? "present" : x->second.version);
    std::string vb = y == b.snapshot.components.end()
                         ? ""
                         : (y->second.version.empty() ? "present" : y->second.version);
    if (va != vb) d.components.push_back({n, va, vb});
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : a.snapshot.env) keys.insert(k);
  for (const auto& [k, v] : b.snapshot.env) keys.insert(k);
  for (const auto& k : keys) {
    auto x = a.snapshot.env.find(k);
    auto y = b.snapshot.env.find(k);
    std::string va = x == a.snapshot.env.end() ? "" : x->second;
    std::string vb = y == b.snapshot.env.end() ? "" : y->second;
    if (va != vb) d.components.push_back({"env:" + k, va, vb});
  }
  d.total_delta =
      static_cast<std::int64_t>(b.total_bytes) - static_cast<std::int64_t>(a.total_bytes);
  return d;
}

Json DiffToJson(const ImageAuditReport& a, const ImageAuditReport& b, const ImageDiff& d) {
  Json j;
  j["a"] = {{"image", a.source}, {"total_bytes", a.total_bytes}, {"files", a.files}};
  j["b"] = {{"image", b.source}, {"total_bytes", b.total_bytes}, {"files", b.files}};
  j["total_delta_bytes"] = d.total_delta;
  j["added_bytes"] = d.added_bytes;
  j["removed_bytes"] = d.removed_bytes;
  j["changed_delta_bytes"] = d.changed_delta;
  Json files = Json::array();
  for (const auto& f : d.files) {
    Json e = {{"path", f.path}, {"change", f.kind}, {"size_a", f.size_a}, {"size_b", f.size_b}};
    if (!f.detail.empty()) e["detail"] = f.detail;
    files.push_back(std::move(e));
  }
  j["files"] = files;
  Json comps = Json::array();
  for (const auto& c : d.components) {
    comps.push_back({{"component", c.component},
                     {"a", c.a.empty() ? Json(nullptr) : Json(c.a)},
                     {"b", c.b.empty() ? Json(nullptr) : Json(c.b)}});
  }
  j["capabilities"] = comps;
  return j;
}

std::string DiffToText(const ImageAuditReport& a, const ImageAuditReport& b, const ImageDiff& d) {
  std::string out;
  out += fmt::format("a  {} ({}, {} files)\n", a.source, HumanBytes(a.total_bytes), a.files);
  out += fmt::format("b  {} ({}, {} files)\n", b.source, HumanBytes(b.total_bytes), b.files);
  std::size_t added = 0, removed = 0, changed = 0;
  for (const auto& f : d.files) {
    if (f.kind == "added") ++added;
    if (f.kind == "removed") ++removed;
    if (f.kind == "changed") ++changed;
  }
  out += fmt::format("files  +{} added ({}), -{} removed ({}), ~{} changed ({:+} bytes)\n", added,
                     HumanBytes(d.added_bytes), removed, HumanBytes(d.removed_bytes), changed,
                     d.changed_delta);
  for (const auto& f : d.files) {
    char sign = f.kind == "added" ? '+' : f.kind == "removed" ? '-' : '~';
    if (f.kind == "changed") {
      out += fmt::format("  {} {}  {} -> {} ({})\n", sign, f.path, f.size_a, f.size_b, f.detail);
    } else {
      out += fmt::format("  {} {}  {}\n", sign, f.path, f.kind == "added" ? f.size_b : f.size_a);
    }
  }
  out += fmt::format("capabilities ({} differences)\n", d.components.size());
  for (const auto& c : d.components) {
    out += fmt::format("  {:<26} {} -> {}\n", c.component, c.a.empty() ? "absent" : c.a,
                       c.b.empty() ? "absent" : c.b);
  }
  return out;
}

}  // namespace tg::audit
