#include "policy/matrix.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/json_writer.h"
#include "common/strings.h"

namespace tg::policy {
namespace {

using common::Json;
using common::Result;
using common::Status;
using common::YamlMap;

using common::Trim;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Version

std::optional<Version> Version::Parse(std::string_view text) {
  text = Trim(text);
  Version v;
  std::size_t i = 0;
  while (true) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    int n = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), n);
    if (ec != std::errc()) return std::nullopt;  // out of range
    v.parts.push_back(n);
    i = static_cast<std::size_t>(p - text.data());
    if (v.parts.size() > 4) return std::nullopt;
    // A dot followed by a digit continues the version; anything else ends it. A suffix such as
    // "-rc1" or "+cuda13" after a complete number is build metadata we deliberately ignore, but
    // it must not start with a digit-less dot ("13." is malformed).
    if (i < text.size() && text[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  if (i < text.size() && text[i] != '-' && text[i] != '+' && text[i] != ' ' && text[i] != '~') {
    return std::nullopt;
  }
  v.text = std::string(Trim(text.substr(0, i)));
  return v;
}

int Version::Compare(const Version& other) const {
  std::size_t n = std::max(parts.size(), other.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    int a = i < parts.size() ? parts[i] : 0;
    int b = i < other.parts.size() ? other.parts[i] : 0;
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

std::string Version::ToString() const {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) s += '.';
    s += std::to_string(parts[i]);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// VersionSpec

Result<VersionSpec> VersionSpec::Parse(std::string_view text) {
  VersionSpec spec;
  std::string_view all = Trim(text);
  if (all.empty()) return Status::InvalidArg("empty version specification");
  if (all == "*") {
    spec.text_ = "*";
    return spec;
  }
  std::string normalised;
  while (true) {
    std::size_t comma = all.find(',');
    std::string_view clause = Trim(all.substr(0, comma));
    std::string_view original = clause;
    Op op = Op::kPrefix;
    std::string_view op_text;
    for (auto [t, o] : {std::pair<std::string_view, Op>{">=", Op::kGe},
                        {"<=", Op::kLe},
                        {"==", Op::kEq},
                        {"!=", Op::kNe},
                        {">", Op::kGt},
                        {"<", Op::kLt},
                        {"=", Op::kEq}}) {
      if (clause.substr(0, t.size()) == t) {
        op = o;
        op_text = t;
        clause.remove_prefix(t.size());
        break;
      }
    }
    clause = Trim(clause);
    std::optional<Version> v = Version::Parse(clause);
    // Build suffixes are fine in observed versions but not in a requirement: be strict here.
    bool clean = !clause.empty() && std::all_of(clause.begin(), clause.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
    if (!v || !clean) {
      return Status::InvalidArg("'" + std::string(original) +
                                "' is not a version clause (expected e.g. \"13.0\", \"=1.29.0\", "
                                "\">=9.1,<10\" or \"*\")");
    }
    if (op_text == "==") op_text = "=";
    spec.clauses_.push_back({op, *v});
    if (!normalised.empty()) normalised += ",";
    normalised += std::string(op_text) + v->ToString();
    if (comma == std::string_view::npos) break;
    all.remove_prefix(comma + 1);
  }
  spec.text_ = normalised;
  return spec;
}

bool VersionSpec::Matches(const Version& v) const {
  for (const Clause& c : clauses_) {
    int cmp = v.Compare(c.v);
    bool ok = false;
    switch (c.op) {
      case Op::kPrefix:
        ok = v.parts.size() >= c.v.parts.size() &&
             std::equal(c.v.parts.begin(), c.v.parts.end(), v.parts.begin());
        break;
      case Op::kEq:
        ok = cmp == 0;
        break;
      case Op::kNe:
        ok = cmp != 0;
        break;
      case Op::kGe:
        ok = cmp >= 0;
        break;
      case Op::kGt:
        ok = cmp > 0;
        break;
      case Op::kLe:
        ok = cmp <= 0;
        break;
      case Op::kLt:
        ok = cmp < 0;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

bool VersionSpec::Matches(std::string_view version_text) const {
  std::optional<Version> v = Version::Parse(version_text);
  return v.has_value() && Matches(*v);
}

std::optional<int> VersionSpec::SingleMajor() const {
  // Probe majors 0..999 against the spec with only the major given: cheap and exact for the
  // clause forms we accept (a lower bound like ">=9.1" admits 9.x, so test 9.max too).
  std::optional<int> found;
  for (int m = 0; m < 1000; ++m) {
    Version lo{{m}, ""}, hi{{m, 1 << 30}, ""};
    bool any = false;
    for (const Version& v : {lo, hi}) any = any || Matches(v);
    // Prefix clauses need the given components: test the spec's own versions within this major.
    for (const Clause& c : clauses_) {
      if (!c.v.parts.empty() && c.v.parts[0] == m) any = any || Matches(c.v);
    }
    if (!any) continue;
    if (found) return std::nullopt;
    found = m;
  }
  return found;
}

std::string_view MigExpectationName(MigExpectation m) {
  switch (m) {
    case MigExpectation::kDisabled:
      return "disabled";
    case MigExpectation::kEnabled:
      return "enabled";
    case MigExpectation::kAny:
      break;
  }
  return "any";
}

// ---------------------------------------------------------------------------------------------
// Matrix

namespace {

Json SpecJson(const std::optional<VersionSpec>& s) { return s ? Json(s->text()) : Json(nullptr); }

// Reads an optional VersionSpec field; errors carry file:line:col and the dotted field path.
Status GetSpec(YamlMap& m, std::string_view key, std::optional<VersionSpec>* out) {
  std::optional<std::string> text;
  TG_RETURN_IF_ERROR(m.Get(key, &text));
  if (!text) return Status::Ok();
  Result<VersionSpec> spec = VersionSpec::Parse(*text);
  if (!spec.ok()) {
    return Status::InvalidArg(common::YamlWhere(m.node()[std::string(key)], m.source()) +
                              ": field '" + m.FieldPath(key) + "': " + spec.status().message());
  }
  *out = std::move(spec).value();
  return Status::Ok();
}

Status GetVersion(YamlMap& m, std::string_view key, std::optional<Version>* out) {
  std::optional<std::string> text;
  TG_RETURN_IF_ERROR(m.Get(key, &text));
  if (!text) return Status::Ok();
  std::optional<Version> v = Version::Parse(*text);
  bool clean = v && std::all_of(text->begin(), text->end(), [](char c) {
                 return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
               });
  if (!clean) return m.FieldError(key, "a version such as \"580.65.06\"");
  *out = *v;
  return Status::Ok();
}

Status GetPositiveInt(YamlMap& m, std::string_view key, std::optional<int>* out, int lo, int hi) {
  std::optional<std::int64_t> v;
  TG_RETURN_IF_ERROR(m.Get(key, &v));
  if (!v) return Status::Ok();
  if (*v < lo || *v > hi) {
    return m.FieldError(key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  *out = static_cast<int>(*v);
  return Status::Ok();
}

Status ParseOnnxRuntimeSection(YamlMap& ort, Matrix* out) {
  TG_RETURN_IF_ERROR(GetSpec(ort, "version", &out->onnxruntime.version));
  TG_RETURN_IF_ERROR(
      GetPositiveInt(ort, "provider_cuda_major", &out->onnxruntime.provider_cuda_major, 1, 99));
  TG_RETURN_IF_ERROR(ort.Get("providers", &out->onnxruntime.providers));
  std::vector<std::string> seen;
  for (const std::string& p : out->onnxruntime.providers) {
    bool valid = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (!valid || std::find(seen.begin(), seen.end(), p) != seen.end()) {
      return ort.FieldError("providers",
                            "distinct provider names such as [TensorrtExecutionProvider, "
                            "CUDAExecutionProvider]");
    }
    seen.push_back(p);
  }
  return ort.Finish();
}

Status ParseDevicesSection(YamlMap& dev, Matrix* out) {
  std::optional<int> count;
  TG_RETURN_IF_ERROR(GetPositiveInt(dev, "count", &count, 0, 4096));
  out->devices.count = count.value_or(0);
  TG_RETURN_IF_ERROR(
      GetVersion(dev, "min_compute_capability", &out->devices.min_compute_capability));
  std::optional<std::int64_t> mem;
  TG_RETURN_IF_ERROR(dev.Get("min_memory_mib", &mem));
  if (mem && (*mem < 0 || *mem > (std::int64_t{1} << 40))) {
    return dev.FieldError("min_memory_mib", "a non-negative number of MiB");
  }
  out->devices.min_memory_mib = mem;
  std::optional<std::string> mig;
  TG_RETURN_IF_ERROR(dev.Get("mig", &mig));
  if (mig) {
    if (*mig == "any") {
      out->devices.mig = MigExpectation::kAny;
    } else if (*mig == "disabled") {
      out->devices.mig = MigExpectation::kDisabled;
    } else if (*mig == "enabled") {
      out->devices.mig = MigExpectation::kEnabled;
    } else {
      return dev.FieldError("mig", "one of any, disabled, enabled");
    }
  }
  return dev.Finish();
}

Status ParseContainerSection(YamlMap& ctr, Matrix* out) {
  TG_RETURN_IF_ERROR(ctr.Get("driver_capabilities", &out->container.driver_capabilities));
  for (const std::string& c : out->container.driver_capabilities) {
    static const char* kKnown[] = {"compute", "utility",  "graphics", "video",
                                   "display", "compat32", "all"};
    if (std::find(std::begin(kKnown), std::end(kKnown), c) == std::end(kKnown)) {
      return ctr.FieldError("driver_capabilities",
                            "capabilities among compute, utility, graphics, video, display, "
                            "compat32, all");
    }
  }
  TG_RETURN_IF_ERROR(ctr.Get("device_nodes", &out->container.device_nodes));
  return ctr.Finish();
}

Status ParseInto(const YAML::Node& root, const std::string& source, Matrix* out) {
  TG_ASSIGN_OR_RETURN(YamlMap top, YamlMap::From(root, source, ""));
  std::int64_t schema = 1;
  TG_RETURN_IF_ERROR(top.Get("schema", &schema));
  if (schema != 1) return top.FieldError("schema", "1 (the only matrix schema version)");
  TG_RETURN_IF_ERROR(top.Get("name", &out->name));
  TG_RETURN_IF_ERROR(top.Get("require_gpu", &out->require_gpu));

  TG_ASSIGN_OR_RETURN(std::optional<YamlMap> driver, top.GetMap("driver"));
  if (driver) {
    TG_RETURN_IF_ERROR(GetPositiveInt(*driver, "branch", &out->driver.branch, 1, 100000));
    TG_RETURN_IF_ERROR(GetVersion(*driver, "minimum", &out->driver.minimum));
    TG_RETURN_IF_ERROR(driver->Finish());
  }
  TG_ASSIGN_OR_RETURN(std::optional<YamlMap> cuda, top.GetMap("cuda"));
  if (cuda) {
    TG_RETURN_IF_ERROR(GetSpec(*cuda, "runtime", &out->cuda.runtime));
    TG_RETURN_IF_ERROR(GetSpec(*cuda, "cublas", &out->cuda.cublas));
    TG_RETURN_IF_ERROR(cuda->Finish());
  }
  TG_RETURN_IF_ERROR(GetSpec(top, "cudnn", &out->cudnn));
  TG_RETURN_IF_ERROR(GetSpec(top, "tensorrt", &out->tensorrt));

  TG_ASSIGN_OR_RETURN(std::optional<YamlMap> ort, top.GetMap("onnxruntime"));
  if (ort) {
    TG_RETURN_IF_ERROR(ParseOnnxRuntimeSection(*ort, out));
  }

  TG_ASSIGN_OR_RETURN(std::optional<YamlMap> dev, top.GetMap("devices"));
  if (dev) {
    TG_RETURN_IF_ERROR(ParseDevicesSection(*dev, out));
  }

  TG_ASSIGN_OR_RETURN(std::optional<YamlMap> ctr, top.GetMap("container"));
  if (ctr) {
    TG_RETURN_IF_ERROR(ParseContainerSection(*ctr, out));
  }
  return top.Finish();
}

}  // namespace

Json Matrix::ToJson() const {
  Json j;
  j["schema"] = 1;
  j["require_gpu"] = require_gpu;
  j["driver"] = {{"branch", driver.branch ? Json(*driver.branch) : Json(nullptr)},
                 {"minimum", driver.minimum ? Json(driver.minimum->ToString()) : Json(nullptr)}};
  j["cuda"] = {{"runtime", SpecJson(cuda.runtime)}, {"cublas", SpecJson(cuda.cublas)}};
  j["cudnn"] = SpecJson(cudnn);
  j["tensorrt"] = SpecJson(tensorrt);
  j["onnxruntime"] = {
      {"version", SpecJson(onnxruntime.version)},
      {"provider_cuda_major",
       onnxruntime.provider_cuda_major ? Json(*onnxruntime.provider_cuda_major) : Json(nullptr)},
      {"providers", onnxruntime.providers}};
  j["devices"] = {
      {"count", devices.count},
      {"min_compute_capability", devices.min_compute_capability
                                     ? Json(devices.min_compute_capability->ToString())
                                     : Json(nullptr)},
      {"min_memory_mib", devices.min_memory_mib ? Json(*devices.min_memory_mib) : Json(nullptr)},
      {"mig", std::string(MigExpectationName(devices.mig))}};
  j["container"] = {{"driver_capabilities", container.driver_capabilities},
                    {"device_nodes", container.device_nodes}};
  return j;
}

std::string Matrix::Fingerprint() const {
  std::string canonical = common::WriteJson(
      ToJson(), -1, common::JsonNotice::kNone);  // nlohmann objects are key-sorted
  return common::Sha256Hex(canonical.data(), canonical.size());
}

Result<Matrix> ParseMatrix(const std::string& text, const std::string& source) {
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(text, source));
  Matrix m;
  m.source = source;
  // yaml-cpp can throw on pathological trees (e.g. non-scalar keys reached through Scalar());
  // keep every library exception inside this module as a usage error.
  try {
    TG_RETURN_IF_ERROR(ParseInto(root, source, &m));
  } catch (const std::exception& e) {
    return Status::InvalidArg(source + ": invalid matrix: " + e.what());
  }
  return m;
}

Result<Matrix> LoadMatrix(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  return ParseMatrix(text, path);
}

// The embedded defaults. deploy/matrix.production.yaml and deploy/matrix.dev.yaml carry the same
// requirements with comments; policy/matrix_test.cc fails if their fingerprints differ, so the
// binary needs no data files at run time and the documented files never go stale. Production is
// what truegreen's image carries: the CUDA provider on CUDA 13, cuBLAS 13 and cuDNN 9, no TensorRT
// (deploy/matrix.production-tensorrt.yaml is the variant for an image built with TensorRT).
std::string_view ProductionMatrixYaml() {
  return R"(schema: 1
name: production
require_gpu: true
driver:
  minimum: "580.65.06"
cuda:
  runtime: "13.0"
  cublas: "13"
cudnn: ">=9.1,<10"
onnxruntime:
  version: "1.29"
  provider_cuda_major: 13
  providers: [CUDAExecutionProvider]
devices:
  count: 1
  min_compute_capability: "7.5"
  min_memory_mib: 8192
  mig: any
container:
  driver_capabilities: [compute, utility]
  device_nodes: true
)";
}

std::string_view DevMatrixYaml() {
  return R"(schema: 1
name: dev
require_gpu: false
onnxruntime:
  version: "1.29"
  providers: [CPUExecutionProvider]
devices:
  count: 0
container:
  driver_capabilities: []
  device_nodes: false
)";
}

namespace {
Matrix MustParse(std::string_view yaml, const char* source) {
  Result<Matrix> m = ParseMatrix(std::string(yaml), source);
  // The embedded text is covered by tests; a failure here is a programming error.
  return m.ok() ? std::move(m).value() : Matrix{};
}
}  // namespace

const Matrix& ProductionMatrix() {
  static const Matrix m = MustParse(ProductionMatrixYaml(), "<embedded production>");
  return m;
}

const Matrix& DevMatrix() {
  static const Matrix m = MustParse(DevMatrixYaml(), "<embedded dev>");
  return m;
}

Result<Matrix> ResolvePolicyMatrix(const std::string& policy) {
  if (policy.empty() || policy == "production") return ProductionMatrix();
  if (policy == "dev") return DevMatrix();
  return LoadMatrix(policy);
}

}  // namespace tg::policy
