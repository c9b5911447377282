#include "probe/snapshot.h"

#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include "common/file_util.h"
#include "common/json_limits.h"
#include "common/json_writer.h"

namespace tg::probe {
namespace {

using common::Json;
using common::Result;
using common::Status;

// ---------------------------------------------------------------------------------------------
// Writing. Optional values are written as null (never omitted) so that every snapshot has the
// same shape and `diff` reports "was null" rather than "added".

template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json LibJson(const LibInfo& l) {
  return Json{{"soname", l.soname},
              {"loaded", l.loaded},
              {"resolved_path", l.resolved_path},
              {"error", l.error},
              {"version_raw", Opt(l.version_raw)},
              {"version", Opt(l.version)},
              {"version_error", l.version_error}};
}

Json ErrorsJson(const std::map<std::string, std::string>& m) { return Json(m); }

Json ApiJson(const std::optional<ApiResult>& r) {
  if (!r) return nullptr;
  return Json{{"code", r->code}, {"name", r->name}};
}

Json EpDevicesJson(const std::optional<std::vector<EpDevice>>& v) {
  if (!v) return nullptr;
  Json a = Json::array();
  for (const auto& d : *v) {
    a.push_back(Json{{"ep_name", d.ep_name}, {"device_type", d.device_type}, {"vendor", d.vendor}});
  }
  return a;
}

Json PathJson(const PathCheck& p) {
  return Json{{"path", p.path}, {"present", p.present}, {"type", p.type}, {"error", p.error}};
}

// ---------------------------------------------------------------------------------------------
// Reading: a small strict object reader in the spirit of common::YamlMap. Every error names the
// source file and the dotted path of the field, what was expected and what was found.

std::string Describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case Json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "the string \"" + s + "\"";
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "the number " + common::WriteJson(v, -1, common::JsonNotice::kNone);
    case Json::value_t::number_float:
      return "the number " + common::WriteJson(v, -1, common::JsonNotice::kNone);
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default:
      return "an unsupported value";
  }
}

class Reader {
 public:
  Reader(const Json* j, const std::string* source, std::string path)
      : j_(j), source_(source), path_(std::move(path)) {}

  const Json& json() const { return *j_; }

  Status Check() const {
    if (!j_->is_object()) return Error(path_, "an object", *j_);
    return Status::Ok();
  }

  std::string Field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  Status Error(const std::string& field, const std::string& expected, const Json& found) const {
    return Status::InvalidArg(*source_ + ": field '" + (field.empty() ? "(document)" : field) +
                              "': expected " + expected + ", found " + Describe(found));
  }

  // Returns the child or nullptr when absent; marks it seen.
  const Json* Child(const std::string& key) {
    seen_.insert(key);
    auto it = j_->find(key);
    return it == j_->end() ? nullptr : &*it;
  }

  Status Get(const std::string& key, std::string* out) {
    const Json* v = Child(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_string()) return Error(Field(key), "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status Get(const std::string& key, bool* out) {
    const Json* v = Child(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_boolean()) return Error(Field(key), "true or false", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  template <typename I>
  Status GetInt(const std::string& key, I* out) {
    const Json* v = Child(key);
    if (v == nullptr) return Status::Ok();
    return ToInt(*v, Field(key), out);
  }
  Status Get(const std::string& key, int* out) { return GetInt(key, out); }
  Status Get(const std::string& key, std::vector<std::string>* out) {
    const Json* v = Child(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_array()) return Error(Field(key), "an array of strings", *v);
    out->clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& e = (*v)[i];
      if (!e.is_string()) {
        return Error(Field(key) + "[" + std::to_string(i) + "]", "a string", e);
      }
      out->push_back(e.get<std::string>());
    }
    return Status::Ok();
  }
  Status Get(const std::string& key, std::map<std::string, std::string>* out) {
    const Json* v = Child(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_object()) return Error(Field(key), "an object of strings", *v);
    out->clear();
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!it->is_string()) return Error(Field(key) + "." + it.key(), "a string", *it);
      (*out)[it.key()] = it->get<std::string>();
    }
    return Status::Ok();
  }
  Status Get(const std::string& key, std::optional<std::string>* out) {
    const Json* v = Child(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    if (!v->is_string()) return Error(Field(key), "a string or null", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status Get(const std::string& key, std::optional<bool>* out) {
    const Json* v = Child(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    if (!v->is_boolean()) return Error(Field(key), "true, false or null", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  template <typename I>
  Status Get(const std::string& key, std::optional<I>* out) {
    const Json* v = Child(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    I x{};
    TG_RETURN_IF_ERROR(ToInt(*v, Field(key), &x));
    *out = x;
    return Status::Ok();
  }

  // Child object reader; absent (or null when `null_ok`) -> nullopt (caller keeps defaults).
  Result<std::optional<Reader>> Object(const std::string& key, bool null_ok = false) {
    const Json* v = Child(key);
    if (v == nullptr || (null_ok && v->is_null())) return std::optional<Reader>();
    Reader r(v, source_, Field(key));
    TG_RETURN_IF_ERROR(r.Check());
    return std::optional<Reader>(std::move(r));
  }
  // Child array (validated); absent -> nullptr.
  Result<const Json*> Array(const std::string& key) {
    const Json* v = Child(key);
    if (v == nullptr) return static_cast<const Json*>(nullptr);
    if (!v->is_array()) return Error(Field(key), "an array", *v);
    return v;
  }
  Reader Element(const Json& e, const std::string& key, std::size_t i) const {
    return Reader(&e, source_, Field(key) + "[" + std::to_string(i) + "]");
  }

  Status Finish() const {
    for (auto it = j_->begin(); it != j_->end(); ++it) {
      if (seen_.count(it.key()) == 0) {
        std::string allowed;
        for (const auto& k : seen_) allowed += (allowed.empty() ? "" : ", ") + k;
        return Status::InvalidArg(*source_ + ": unknown field '" + Field(it.key()) +
                                  "' (allowed here: " + allowed + ")");
      }
    }
    return Status::Ok();
  }

 private:
  template <typename I>
  Status ToInt(const Json& v, const std::string& field, I* out) const {
    std::string expected = std::is_signed_v<I> ? "an integer" : "a non-negative integer";
    if (!v.is_number_integer()) return Error(field, expected, v);
    if constexpr (std::is_signed_v<I>) {
      if (v.is_number_unsigned() &&
          v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<I>::max())) {
        return Error(field, expected + " in range", v);
      }
      std::int64_t x = v.get<std::int64_t>();
      if (x < std::numeric_limits<I>::min() || x > std::numeric_limits<I>::max()) {
        return Error(field, expected + " in range", v);
      }
      *out = static_cast<I>(x);
    } else {
      if (!v.is_number_unsigned()) return Error(field, expected, v);
      std::uint64_t x = v.get<std::uint64_t>();
      if (x > std::numeric_limits<I>::max()) return Error(field, expected + " in range", v);
      *out = static_cast<I>(x);
    }
    return Status::Ok();
  }

  const Json* j_;
  const std::string* source_;
  std::string path_;
  std::set<std::string> seen_;
};

// Elements per list (devices, libraries, ...) in a snapshot: far above any real node.
constexpr std::size_t kMaxSnapshotArrayElements = 4096;

// Reads an array of objects with `read_one(reader, &element)`.

template <typename T, typename F>
Status ReadArray(Reader& parent, const std::string& key, std::vector<T>* out, F read_one) {
  TG_ASSIGN_OR_RETURN(const Json* arr, parent.Array(key));
  if (arr == nullptr) return Status::Ok();
  // Checked before any element is read: a real node has at most a few dozen devices and
  // libraries, and each element read costs more memory than its text.
  if (arr->size() > kMaxSnapshotArrayElements) {
    return parent.Error(parent.Field(key),
                        "an array of at most " + std::to_string(kMaxSnapshotArrayElements) +
                            " elements (the limit per list in a snapshot); its element count is",
                        Json(arr->size()));
  }
  out->clear();
  for (std::size_t i = 0; i < arr->size(); ++i) {
    Reader r = parent.Element((*arr)[i], key, i);
    TG_RETURN_IF_ERROR(r.Check());
    T e;
    TG_RETURN_IF_ERROR(read_one(r, &e));
    TG_RETURN_IF_ERROR(r.Finish());
    out->push_back(std::move(e));
  }
  return Status::Ok();
}

// Runs `body(reader)` on the child object `key` when present, then rejects unknown fields.
template <typename F>
Status WithObject(Reader& parent, const std::string& key, F body) {
  TG_ASSIGN_OR_RETURN(auto r, parent.Object(key));
  if (!r) return Status::Ok();
  TG_RETURN_IF_ERROR(body(*r));
  return r->Finish();
}

Status ReadLibFields(Reader& r, LibInfo* l) {
  TG_RETURN_IF_ERROR(r.Get("soname", &l->soname));
  TG_RETURN_IF_ERROR(r.Get("loaded", &l->loaded));
  TG_RETURN_IF_ERROR(r.Get("resolved_path", &l->resolved_path));
  TG_RETURN_IF_ERROR(r.Get("error", &l->error));
  TG_RETURN_IF_ERROR(r.Get("version_raw", &l->version_raw));
  TG_RETURN_IF_ERROR(r.Get("version", &l->version));
  return r.Get("version_error", &l->version_error);
}

Status ReadLib(Reader& parent, const std::string& key, LibInfo* l) {
  return WithObject(parent, key, [l](Reader& r) { return ReadLibFields(r, l); });
}

Status ReadApi(Reader& parent, const std::string& key, std::optional<ApiResult>* out) {
  TG_ASSIGN_OR_RETURN(auto r, parent.Object(key, /*null_ok=*/true));
  if (!r) return Status::Ok();
  ApiResult a;
  TG_RETURN_IF_ERROR(r->Get("code", &a.code));
  TG_RETURN_IF_ERROR(r->Get("name", &a.name));
  TG_RETURN_IF_ERROR(r->Finish());
  *out = a;
  return Status::Ok();
}

Status ReadPath(Reader& parent, const std::string& key, PathCheck* p) {
  TG_ASSIGN_OR_RETURN(auto r, parent.Object(key));
  if (!r) return Status::Ok();
  TG_RETURN_IF_ERROR(r->Get("path", &p->path));
  TG_RETURN_IF_ERROR(r->Get("present", &p->present));
  TG_RETURN_IF_ERROR(r->Get("type", &p->type));
  TG_RETURN_IF_ERROR(r->Get("error", &p->error));
  return r->Finish();
}

Status ReadHost(Reader& r, HostInfo* h) {
  TG_RETURN_IF_ERROR(r.Get("kernel", &h->kernel));
  TG_RETURN_IF_ERROR(r.Get("os", &h->os));
  TG_RETURN_IF_ERROR(r.Get("architecture", &h->architecture));
  TG_RETURN_IF_ERROR(r.Get("cpu_model", &h->cpu_model));
  TG_RETURN_IF_ERROR(r.Get("cpu_count", &h->cpu_count));
  TG_RETURN_IF_ERROR(r.Get("memory_total_bytes", &h->memory_total_bytes));
  TG_RETURN_IF_ERROR(r.Get("container", &h->container));
  TG_RETURN_IF_ERROR(r.Get("container_hints", &h->container_hints));
  TG_RETURN_IF_ERROR(r.Get("cgroup_version", &h->cgroup_version));
  TG_RETURN_IF_ERROR(r.Get("cgroup_memory_limit", &h->cgroup_memory_limit));
  TG_RETURN_IF_ERROR(r.Get("cgroup_cpu_limit", &h->cgroup_cpu_limit));
  return r.Get("errors", &h->errors);
}

Status ReadDevices(Reader& r, DeviceNodes* d) {
  TG_RETURN_IF_ERROR(r.Get("root", &d->root));
  TG_RETURN_IF_ERROR(ReadPath(r, "nvidiactl", &d->nvidiactl));
  TG_RETURN_IF_ERROR(ReadPath(r, "nvidia_uvm", &d->nvidia_uvm));
  TG_RETURN_IF_ERROR(ReadArray(r, "gpus", &d->gpus, [](Reader& e, PathCheck* p) {
    TG_RETURN_IF_ERROR(e.Get("path", &p->path));
    TG_RETURN_IF_ERROR(e.Get("present", &p->present));
    TG_RETURN_IF_ERROR(e.Get("type", &p->type));
    return e.Get("error", &p->error);
  }));
  TG_RETURN_IF_ERROR(ReadPath(r, "proc_driver_version", &d->proc_driver_version));
  TG_RETURN_IF_ERROR(r.Get("proc_driver_version_text", &d->proc_driver_version_text));
  return r.Get("kernel_module_version", &d->kernel_module_version);
}

Status ReadNvmlDevice(Reader& r, NvmlDevice* d) {
  TG_RETURN_IF_ERROR(r.Get("index", &d->index));
  TG_RETURN_IF_ERROR(r.Get("name", &d->name));
  TG_RETURN_IF_ERROR(r.Get("uuid", &d->uuid));
  TG_RETURN_IF_ERROR(r.Get("compute_capability", &d->compute_capability));
  TG_RETURN_IF_ERROR(r.Get("memory_total_bytes", &d->memory_total_bytes));
  TG_RETURN_IF_ERROR(r.Get("mig_enabled", &d->mig_enabled));
  TG_RETURN_IF_ERROR(r.Get("mig_pending", &d->mig_pending));
  TG_RETURN_IF_ERROR(r.Get("pcie_generation", &d->pcie_generation));
  TG_RETURN_IF_ERROR(r.Get("pcie_generation_max", &d->pcie_generation_max));
  TG_RETURN_IF_ERROR(r.Get("pcie_width", &d->pcie_width));
  TG_RETURN_IF_ERROR(r.Get("pcie_width_max", &d->pcie_width_max));
  return r.Get("errors", &d->errors);
}

Status ReadNvml(Reader& r, NvmlInfo* n) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &n->library));
  TG_RETURN_IF_ERROR(ReadApi(r, "init", &n->init));
  TG_RETURN_IF_ERROR(r.Get("driver_version", &n->driver_version));
  TG_RETURN_IF_ERROR(r.Get("cuda_driver_version_raw", &n->cuda_driver_version_raw));
  TG_RETURN_IF_ERROR(r.Get("cuda_driver_version", &n->cuda_driver_version));
  TG_RETURN_IF_ERROR(r.Get("device_count", &n->device_count));
  TG_RETURN_IF_ERROR(ReadArray(r, "devices", &n->devices, ReadNvmlDevice));
  return r.Get("errors", &n->errors);
}

Status ReadCudaDevice(Reader& r, CudaDevice* d) {
  TG_RETURN_IF_ERROR(r.Get("index", &d->index));
  TG_RETURN_IF_ERROR(r.Get("name", &d->name));
  TG_RETURN_IF_ERROR(r.Get("compute_capability", &d->compute_capability));
  TG_RETURN_IF_ERROR(r.Get("memory_total_bytes", &d->memory_total_bytes));
  return r.Get("errors", &d->errors);
}

Status ReadCudaDriver(Reader& r, CudaDriverInfo* c) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &c->library));
  TG_RETURN_IF_ERROR(ReadApi(r, "init", &c->init));
  TG_RETURN_IF_ERROR(r.Get("device_count", &c->device_count));
  TG_RETURN_IF_ERROR(ReadArray(r, "devices", &c->devices, ReadCudaDevice));
  return r.Get("errors", &c->errors);
}

Status ReadCudaRuntime(Reader& r, CudaRuntimeInfo* c) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &c->library));
  TG_RETURN_IF_ERROR(r.Get("driver_version_raw", &c->driver_version_raw));
  TG_RETURN_IF_ERROR(r.Get("driver_version", &c->driver_version));
  return r.Get("errors", &c->errors);
}

Status ReadCudnn(Reader& r, CudnnInfo* c) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &c->library));
  TG_RETURN_IF_ERROR(r.Get("cudart_version_raw", &c->cudart_version_raw));
  return ReadArray(r, "sub_libraries", &c->sub_libraries, ReadLibFields);
}

Status ReadTensorRt(Reader& r, TensorRtInfo* t) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &t->library));
  return ReadLib(r, "onnx_parser", &t->onnx_parser);
}

Status ReadProvider(Reader& r, ProviderLibrary* p) {
  TG_RETURN_IF_ERROR(r.Get("provider", &p->provider));
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &p->library));
  TG_RETURN_IF_ERROR(r.Get("load_method", &p->load_method));
  {
    const Json* v = r.Child("ep_devices");
    if (v != nullptr && !v->is_null()) {
      std::vector<EpDevice> devices;
      TG_RETURN_IF_ERROR(ReadArray(r, "ep_devices", &devices, [](Reader& e, EpDevice* d) {
        TG_RETURN_IF_ERROR(e.Get("ep_name", &d->ep_name));
        TG_RETURN_IF_ERROR(e.Get("device_type", &d->device_type));
        return e.Get("vendor", &d->vendor);
      }));
      p->ep_devices = std::move(devices);
    }
  }
  TG_RETURN_IF_ERROR(r.Get("file", &p->file));
  TG_RETURN_IF_ERROR(r.Get("needed", &p->needed));
  TG_RETURN_IF_ERROR(r.Get("cuda_major", &p->cuda_major));
  TG_RETURN_IF_ERROR(r.Get("cudnn_major", &p->cudnn_major));
  TG_RETURN_IF_ERROR(r.Get("tensorrt_major", &p->tensorrt_major));
  TG_RETURN_IF_ERROR(r.Get("elf_error", &p->elf_error));
  return r.Get("origin", &p->origin);
}

Status ReadOrt(Reader& r, OrtInfo* o) {
  TG_RETURN_IF_ERROR(ReadLib(r, "library", &o->library));
  TG_RETURN_IF_ERROR(r.Get("build_info", &o->build_info));
  TG_RETURN_IF_ERROR(r.Get("compiled_providers", &o->compiled_providers));
  TG_RETURN_IF_ERROR(r.Get("core_flavor", &o->core_flavor));
  TG_RETURN_IF_ERROR(ReadLib(r, "providers_shared", &o->providers_shared));
  return ReadArray(r, "provider_libraries", &o->provider_libraries, ReadProvider);
}

}  // namespace

std::optional<std::string> Snapshot::Env(const std::string& name) const {
  for (const auto& e : env) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

std::string CudaVersionString(std::int64_t v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string TripleVersionString(std::int64_t v) {
  // Libraries switched from major*1000 (cuDNN 8, TensorRT 8, NCCL < 2.9) to major*10000 once a
  // minor could exceed 9; a value below 10000 is the old encoding.
  std::int64_t major, minor, patch;
  if (v < 10000) {
    major = v / 1000;
    minor = (v % 1000) / 100;
    patch = v % 100;
  } else {
    major = v / 10000;
    minor = (v % 10000) / 100;
    patch = v % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

namespace {

Json HostJson(const HostInfo& x) {
  return Json{{"kernel", x.kernel},
              {"os", x.os},
              {"architecture", x.architecture},
              {"cpu_model", x.cpu_model},
              {"cpu_count", x.cpu_count},
              {"memory_total_bytes", Opt(x.memory_total_bytes)},
              {"container", x.container},
              {"container_hints", x.container_hints},
              {"cgroup_version", x.cgroup_version},
              {"cgroup_memory_limit", Opt(x.cgroup_memory_limit)},
              {"cgroup_cpu_limit", Opt(x.cgroup_cpu_limit)},
              {"errors", ErrorsJson(x.errors)}};
}

Json DevicesJson(const DeviceNodes& x) {
  Json gpus = Json::array();
  for (const auto& g : x.gpus) gpus.push_back(PathJson(g));
  return Json{{"root", x.root},
              {"nvidiactl", PathJson(x.nvidiactl)},
              {"nvidia_uvm", PathJson(x.nvidia_uvm)},
              {"gpus", std::move(gpus)},
              {"proc_driver_version", PathJson(x.proc_driver_version)},
              {"proc_driver_version_text", x.proc_driver_version_text},
              {"kernel_module_version", Opt(x.kernel_module_version)}};
}

Json NvmlJson(const NvmlInfo& x) {
  Json nvml_devices = Json::array();
  for (const auto& d : x.devices) {
    nvml_devices.push_back(Json{{"index", d.index},
                                {"name", Opt(d.name)},
                                {"uuid", Opt(d.uuid)},
                                {"compute_capability", Opt(d.compute_capability)},
                                {"memory_total_bytes", Opt(d.memory_total_bytes)},
                                {"mig_enabled", Opt(d.mig_enabled)},
                                {"mig_pending", Opt(d.mig_pending)},
                                {"pcie_generation", Opt(d.pcie_generation)},
                                {"pcie_generation_max", Opt(d.pcie_generation_max)},
                                {"pcie_width", Opt(d.pcie_width)},
                                {"pcie_width_max", Opt(d.pcie_width_max)},
                                {"errors", ErrorsJson(d.errors)}});
  }
  return Json{{"library", LibJson(x.library)},
              {"init", ApiJson(x.init)},
              {"driver_version", Opt(x.driver_version)},
              {"cuda_driver_version_raw", Opt(x.cuda_driver_version_raw)},
              {"cuda_driver_version", Opt(x.cuda_driver_version)},
              {"device_count", Opt(x.device_count)},
              {"devices", std::move(nvml_devices)},
              {"errors", ErrorsJson(x.errors)}};
}

Json CudaDriverJson(const CudaDriverInfo& x) {
  Json cuda_devices = Json::array();
  for (const auto& d : x.devices) {
    cuda_devices.push_back(Json{{"index", d.index},
                                {"name", Opt(d.name)},
                                {"compute_capability", Opt(d.compute_capability)},
                                {"memory_total_bytes", Opt(d.memory_total_bytes)},
                                {"errors", ErrorsJson(d.errors)}});
  }
  return Json{{"library", LibJson(x.library)},
              {"init", ApiJson(x.init)},
              {"device_count", Opt(x.device_count)},
              {"devices", std::move(cuda_devices)},
              {"errors", ErrorsJson(x.errors)}};
}

Json OrtJson(const OrtInfo& x) {
  Json providers = Json::array();
  for (const auto& p : x.provider_libraries) {
    providers.push_back(Json{{"provider", p.provider},
                             {"library", LibJson(p.library)},
                             {"load_method", p.load_method},
                             {"ep_devices", EpDevicesJson(p.ep_devices)},
                             {"file", p.file},
                             {"needed", p.needed},
                             {"cuda_major", Opt(p.cuda_major)},
                             {"cudnn_major", Opt(p.cudnn_major)},
                             {"tensorrt_major", Opt(p.tensorrt_major)},
                             {"elf_error", p.elf_error},
                             {"origin", p.origin}});
  }
  return Json{{"library", LibJson(x.library)},
              {"build_info", x.build_info},
              {"compiled_providers", x.compiled_providers},
              {"core_flavor", x.core_flavor},
              {"providers_shared", LibJson(x.providers_shared)},
              {"provider_libraries", std::move(providers)}};
}

}  // namespace

Json ToJson(const Snapshot& s) {
  Json env = Json::object();
  for (const auto& e : s.env) env[e.name] = Opt(e.value);

  Json host = HostJson(s.host);
  Json devices = DevicesJson(s.devices);
  Json nvml = NvmlJson(s.nvml);
  Json cuda_driver = CudaDriverJson(s.cuda_driver);
  Json cuda_runtime{{"library", LibJson(s.cuda_runtime.library)},
                    {"driver_version_raw", Opt(s.cuda_runtime.driver_version_raw)},
                    {"driver_version", Opt(s.cuda_runtime.driver_version)},
                    {"errors", ErrorsJson(s.cuda_runtime.errors)}};

  Json subs = Json::array();
  for (const auto& l : s.cudnn.sub_libraries) subs.push_back(LibJson(l));
  Json cudnn{{"library", LibJson(s.cudnn.library)},
             {"cudart_version_raw", Opt(s.cudnn.cudart_version_raw)},
             {"sub_libraries", std::move(subs)}};

  Json ort = OrtJson(s.onnxruntime);
  return Json{{"schema_version", s.schema_version},
              {"tool_version", s.tool_version},
              {"taken_at", s.taken_at},
              {"lib_search_dirs", s.lib_search_dirs},
              {"host", std::move(host)},
              {"devices", std::move(devices)},
              {"env", std::move(env)},
              {"nvml", std::move(nvml)},
              {"cuda_driver", std::move(cuda_driver)},
              {"cuda_runtime", std::move(cuda_runtime)},
              {"cublas", LibJson(s.cublas)},
              {"cublaslt", LibJson(s.cublaslt)},
              {"cudnn", std::move(cudnn)},
              {"tensorrt", Json{{"library", LibJson(s.tensorrt.library)},
                                {"onnx_parser", LibJson(s.tensorrt.onnx_parser)}}},
              {"nccl", LibJson(s.nccl)},
              {"onnxruntime", std::move(ort)}};
}

Result<Snapshot> SnapshotFromJson(const Json& j, const std::string& source) {
  Reader root(&j, &source, "");
  TG_RETURN_IF_ERROR(root.Check());
  Snapshot s;
  // The schema version is checked first: a document of another kind or version must not be
  // half-read into this one.
  const Json* version = root.Child("schema_version");
  if (version == nullptr) {
    return Status::InvalidArg(source + ": field 'schema_version': missing (required: \"" +
                              std::string(kSnapshotSchemaVersion) +
                              "\"; is this a truegreen snapshot?)");
  }
  if (!version->is_string() || version->get<std::string>() != kSnapshotSchemaVersion) {
    return root.Error("schema_version", std::string("\"") + kSnapshotSchemaVersion + "\"",
                      *version);
  }
  TG_RETURN_IF_ERROR(root.Get("tool_version", &s.tool_version));
  TG_RETURN_IF_ERROR(root.Get("taken_at", &s.taken_at));
  TG_RETURN_IF_ERROR(root.Get("lib_search_dirs", &s.lib_search_dirs));
  TG_RETURN_IF_ERROR(WithObject(root, "host", [&](Reader& r) { return ReadHost(r, &s.host); }));
  TG_RETURN_IF_ERROR(
      WithObject(root, "devices", [&](Reader& r) { return ReadDevices(r, &s.devices); }));
  TG_RETURN_IF_ERROR(WithObject(root, "env", [&](Reader& r) {
    for (auto it = r.json().begin(); it != r.json().end(); ++it) {
      EnvVar e;
      e.name = it.key();
      TG_RETURN_IF_ERROR(r.Get(it.key(), &e.value));
      s.env.push_back(std::move(e));
    }
    return Status::Ok();
  }));
  TG_RETURN_IF_ERROR(WithObject(root, "nvml", [&](Reader& r) { return ReadNvml(r, &s.nvml); }));
  TG_RETURN_IF_ERROR(WithObject(root, "cuda_driver",
                                [&](Reader& r) { return ReadCudaDriver(r, &s.cuda_driver); }));
  TG_RETURN_IF_ERROR(WithObject(root, "cuda_runtime",
                                [&](Reader& r) { return ReadCudaRuntime(r, &s.cuda_runtime); }));
  TG_RETURN_IF_ERROR(ReadLib(root, "cublas", &s.cublas));
  TG_RETURN_IF_ERROR(ReadLib(root, "cublaslt", &s.cublaslt));
  TG_RETURN_IF_ERROR(WithObject(root, "cudnn", [&](Reader& r) { return ReadCudnn(r, &s.cudnn); }));
  TG_RETURN_IF_ERROR(
      WithObject(root, "tensorrt", [&](Reader& r) { return ReadTensorRt(r, &s.tensorrt); }));
  TG_RETURN_IF_ERROR(ReadLib(root, "nccl", &s.nccl));
  TG_RETURN_IF_ERROR(
      WithObject(root, "onnxruntime", [&](Reader& r) { return ReadOrt(r, &s.onnxruntime); }));
  TG_RETURN_IF_ERROR(root.Finish());
  return s;
}

Result<Snapshot> LoadSnapshotFile(const std::string& path) {
  // The per-list cap applies while parsing too: a 16 MB list is refused at its 4097th element,
  // before a document many times the file's size is built.
  const common::JsonLimits limits{kMaxSnapshotArrayElements, "the limit per list in a snapshot"};
  TG_ASSIGN_OR_RETURN(Json j, common::LoadJsonFile(path, common::kMaxConfigBytes, limits));
  return SnapshotFromJson(j, path == "-" ? "<stdin>" : path);
}

}  // namespace tg::probe
