#include "runtime/engines.h"

#include <cstdlib>
#include <filesystem>

#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "policy/matrix.h"

namespace tg::runtime {

common::Json EngineKeyInputs::ToJson() const {
  common::Json shapes = common::Json::object();
  for (const auto& [name, list] : profile_shapes) shapes[name] = list;
  return common::Json{{"schema", 1},
                      {"matrix_fingerprint", matrix_fingerprint},
                      {"gpu_name", gpu.name},
                      {"compute_capability", gpu.compute_capability},
                      {"model_sha256", model_sha256},
                      {"precision", precision},
                      {"profile_shapes", shapes}};
}

EngineKeyInputs MakeEngineKeyInputs(const std::string& matrix_fingerprint, const GpuIdentity& gpu,
                                    const std::string& model_sha256, const std::string& precision,
                                    const std::map<std::string, std::vector<std::int64_t>>& min,
                                    const std::map<std::string, std::vector<std::int64_t>>& opt,
                                    const std::map<std::string, std::vector<std::int64_t>>& max) {
  EngineKeyInputs k;
  k.matrix_fingerprint = matrix_fingerprint;
  k.gpu = gpu;
  k.model_sha256 = model_sha256;
  k.precision = precision;
  for (const auto& [name, shape] : min) {
    auto o = opt.find(name);
    auto x = max.find(name);
    k.profile_shapes[name] = {shape, o != opt.end() ? o->second : shape,
                              x != max.end() ? x->second : shape};
  }
  return k;
}

common::Result<std::string> PolicyMatrixFingerprint(const std::string& matrix_path,
                                                    bool production) {
  if (matrix_path.empty()) {
    return (production ? policy::ProductionMatrix() : policy::DevMatrix()).Fingerprint();
  }
  auto m = policy::LoadMatrix(matrix_path);
  if (!m.ok()) return m.status();
  return m->Fingerprint();
}

std::string EngineKey(const EngineKeyInputs& in) {
  // nlohmann's object type is a std::map: dump() is canonical (sorted keys).
  const std::string text = common::WriteJson(in.ToJson(), -1, common::JsonNotice::kNone);
  return common::Sha256Hex(text.data(), text.size()).substr(0, 32);
}

common::Result<GpuIdentity> QueryGpuIdentity(const common::LibraryLoader& loader, int device_id) {
  auto lib = loader.Load("libcuda.so.1");
  if (!lib.ok()) return common::Status::Unavailable("GPU identity: " + lib.status().message());
  using InitFn = int (*)(unsigned);
  using DeviceGetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  using AttrFn = int (*)(int*, int, int);
  using ErrNameFn = int (*)(int, const char**);
  auto init = lib->Function<InitFn>("cuInit");
  auto get = lib->Function<DeviceGetFn>("cuDeviceGet");
  auto name_fn = lib->Function<NameFn>("cuDeviceGetName");
  auto attr = lib->Function<AttrFn>("cuDeviceGetAttribute");
  auto err_name = lib->Function<ErrNameFn>("cuGetErrorName");
  if (!init || !get || !name_fn || !attr) {
    return common::Status::Unavailable("GPU identity: " + lib->resolved_path() +
                                       " lacks the CUDA driver API entry points");
  }
  auto fail = [&](const char* call, int rc) {
    const char* n = nullptr;
    if (err_name) err_name(rc, &n);
    return common::Status::Unavailable("GPU identity: " + std::string(call) + " failed with " +
                                       std::to_string(rc) + (n ? std::string(" (") + n + ")" : "") +
                                       " using " + lib->resolved_path());
  };
  if (int rc = init(0)) return fail("cuInit", rc);
  int dev = 0;
  if (int rc = get(&dev, device_id)) return fail("cuDeviceGet", rc);
  char buf[256] = {};
  if (int rc = name_fn(buf, sizeof(buf) - 1, dev)) return fail("cuDeviceGetName", rc);
  int major = 0, minor = 0;
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76.
  if (int rc = attr(&major, 75, dev)) return fail("cuDeviceGetAttribute", rc);
  if (int rc = attr(&minor, 76, dev)) return fail("cuDeviceGetAttribute", rc);
  return GpuIdentity{buf, std::to_string(major) + "." + std::to_string(minor)};
}

std::string ResolveEngineDir(const std::string& engine_dir) {
  if (!engine_dir.empty()) return engine_dir;
  if (const char* e = std::getenv("TRUEGREEN_ENGINE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    return std::string(x) + "/truegreen/engines";
  }
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/truegreen/engines";
}

bool EngineArtifactPresent(const std::string& engine_dir, const std::string& key) {
  const std::string manifest = engine_dir + "/" + key + "/manifest.json";
  auto j = common::LoadJsonFile(manifest);
  return j.ok() && j->is_object() && j->value("key", std::string()) == key;
}

common::Status WriteEngineManifest(const std::string& engine_dir, const std::string& key,
                                   const EngineKeyInputs& inputs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(engine_dir) / key;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return common::Status::InvalidArg("cannot create engine directory " + dir.string() + ": " +
                                      ec.message());
  }
  common::Json files = common::Json::array();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().filename() != "manifest.json") {
      files.push_back({{"name", e.path().filename().string()}, {"bytes", e.file_size()}});
    }
  }
  common::Json m = {{"key", key}, {"inputs", inputs.ToJson()}, {"files", files}};
  return common::WriteFileAtomic((dir / "manifest.json").string(), common::WriteJson(m, 2) + "\n");
}

common::Result<std::map<std::string, std::vector<std::int64_t>>> ParseShapeList(
    const std::string& text) {
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const std::string& item : common::Split(text, ',', common::SplitMode::kSkipEmpty)) {
    const std::size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      return common::Status::InvalidArg("shape entry '" + item +
                                        "' is not of the form name:1x4x64x64");
    }
    std::vector<std::int64_t> dims;
    std::string d;
    for (char c : item.substr(colon + 1) + "x") {
      if (c == 'x') {
        if (d.size() > 1 && d[0] == '-' && d.find_first_not_of("0123456789", 1) == d.npos) {
          return common::Status::InvalidArg("shape entry '" + item + "' has a negative dimension " +
                                            d + " (dimensions are integers 1.." +
                                            std::to_string(kMaxShapeDimension) + ")");
        }
        if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos) {
          return common::Status::InvalidArg("shape entry '" + item +
                                            "' has an invalid dimension '" + d +
                                            "' (expected positive integers joined by x)");
        }
        // An ONNX dimension of 0 makes an empty tensor: a run or a TensorRT profile over no
        // elements proves nothing about the GPU path, so it is refused like a negative one.
        if (d.find_first_not_of('0') == std::string::npos) {
          return common::Status::InvalidArg(
              "shape entry '" + item + "' has a dimension " + d + " (dimensions are integers 1.." +
              std::to_string(kMaxShapeDimension) + "; a 0 dimension makes an empty tensor)");
        }
        if (d.size() > 12 || std::stoll(d) > kMaxShapeDimension) {
          return common::Status::InvalidArg("shape entry '" + item + "' has a dimension " + d +
                                            " above the limit of " +
                                            std::to_string(kMaxShapeDimension));
        }
        dims.push_back(std::stoll(d));
        d.clear();
      } else {
        d += c;
      }
    }
    if (!out.emplace(item.substr(0, colon), std::move(dims)).second) {
      return common::Status::InvalidArg("shape entry '" + item + "' names input '" +
                                        item.substr(0, colon) + "' a second time");
    }
  }
  return out;
}

std::string FormatShapeList(const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  std::string s;
  for (const auto& [name, dims] : shapes) {
    if (!s.empty()) s += ",";
    s += name + ":";
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i) s += "x";
      s += std::to_string(dims[i]);
    }
  }
  return s;
}

}  // namespace tg::runtime
