// NVIDIA library parts of the snapshot: NVML, CUDA driver and runtime, cuBLAS, cuDNN, TensorRT,
// NCCL. Function-pointer types below restate the vendors' C signatures (we include no vendor
// headers: none is needed to build truegreen, and none may be linked).
#include <cstdint>

#include "probe/host_internal.h"
#include "probe/nvml_internal.h"

namespace tg::probe {
namespace {

struct CodeName {
  int code;
  const char* name;
};

constexpr CodeName kCudaErrors[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

constexpr CodeName kCudaRuntimeErrors[] = {
    {0, "cudaSuccess"},
    {1, "cudaErrorInvalidValue"},
    {3, "cudaErrorInitializationError"},
    {34, "cudaErrorStubLibrary"},
    {35, "cudaErrorInsufficientDriver"},
    {100, "cudaErrorNoDevice"},
    {803, "cudaErrorSystemDriverMismatch"},
    {804, "cudaErrorCompatNotSupportedOnDevice"},
    {999, "cudaErrorUnknown"},
};

constexpr CodeName kNvmlErrors[] = {
    {0, "NVML_SUCCESS"},
    {1, "NVML_ERROR_UNINITIALIZED"},
    {2, "NVML_ERROR_INVALID_ARGUMENT"},
    {3, "NVML_ERROR_NOT_SUPPORTED"},
    {4, "NVML_ERROR_NO_PERMISSION"},
    {5, "NVML_ERROR_ALREADY_INITIALIZED"},
    {6, "NVML_ERROR_NOT_FOUND"},
    {7, "NVML_ERROR_INSUFFICIENT_SIZE"},
    {8, "NVML_ERROR_INSUFFICIENT_POWER"},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED"},
    {10, "NVML_ERROR_TIMEOUT"},
    {11, "NVML_ERROR_IRQ_ISSUE"},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {13, "NVML_ERROR_FUNCTION_NOT_FOUND"},
    {14, "NVML_ERROR_CORRUPTED_INFOROM"},
    {15, "NVML_ERROR_GPU_IS_LOST"},
    {16, "NVML_ERROR_RESET_REQUIRED"},
    {17, "NVML_ERROR_OPERATING_SYSTEM"},
    {18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
    {19, "NVML_ERROR_IN_USE"},
    {20, "NVML_ERROR_MEMORY"},
    {21, "NVML_ERROR_NO_DATA"},
    {22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"},
    {23, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
    {999, "NVML_ERROR_UNKNOWN"},
};

template <std::size_t N>
std::string Lookup(const CodeName (&table)[N], int code) {
  for (const auto& e : table) {
    if (e.code == code) return e.name;
  }
  return "UNKNOWN_" + std::to_string(code);
}

std::string Describe(const std::string& name, int code) {
  return name + " (" + std::to_string(code) + ")";
}

}  // namespace

std::string CudaErrorName(int code) { return Lookup(kCudaErrors, code); }
std::string CudaRuntimeErrorName(int code) { return Lookup(kCudaRuntimeErrors, code); }
std::string NvmlErrorName(int code) { return Lookup(kNvmlErrors, code); }

namespace internal {
namespace {

// Vendor C signatures (return codes are int enums; handles are opaque pointers).
using IntFn = int (*)(int*);
using VoidIntFn = int (*)();
using UIntFn = int (*)(unsigned*);
using CuInitFn = int (*)(unsigned);
using CuDeviceGetFn = int (*)(int*, int);
using CuNameFn = int (*)(char*, int, int);
using CuAttrFn = int (*)(int*, int, int);
using CuMemFn = int (*)(unsigned long long*, int);
using SizeFn = std::size_t (*)();
using PropFn = int (*)(int, int*);
using IntRetFn = int (*)();

// Reads a version with `read`, recording it in `l` or why it failed.
template <typename F>
void ReadVersion(LibInfo* l, F read, std::string (*decode)(std::int64_t)) {
  if (!l->loaded) return;
  std::string error;
  std::optional<std::int64_t> v = read(&error);
  if (v) {
    l->version_raw = *v;
    l->version = decode(*v);
  } else {
    l->version_error = error;
  }
}

std::string MissingSymbol(const common::DynamicLibrary& lib, const char* symbol) {
  return "symbol " + std::string(symbol) + " not found in " + lib.resolved_path();
}

// Calls `int symbol(int* out)` — the shape of cuDriverGetVersion, cudaRuntimeGetVersion,
// ncclGetVersion — and returns *out; on a missing symbol or a non-zero return sets *error, naming
// the return code with `error_name` when given.
std::optional<std::int64_t> CallIntOut(const common::DynamicLibrary& lib, const char* symbol,
                                       std::string (*error_name)(int), std::string* error) {
  auto f = lib.Function<IntFn>(symbol);
  if (f == nullptr) {
    *error = MissingSymbol(lib, symbol);
    return std::nullopt;
  }
  int v = 0;
  int rc = f(&v);
  if (rc != 0) {
    *error = std::string(symbol) + (error_name != nullptr ? ": " + Describe(error_name(rc), rc)
                                                          : " returned " + std::to_string(rc));
    return std::nullopt;
  }
  return v;
}

// Tries `stem.so.<major>` for each major in order; the first that loads wins. When none loads,
// the first candidate's error is kept (the most likely one to be expected).
common::DynamicLibrary LoadFirst(const common::LibraryLoader& loader, const std::string& stem,
                                 const std::vector<int>& majors, LibInfo* out) {
  LibInfo first;
  for (std::size_t i = 0; i < majors.size(); ++i) {
    LibInfo attempt;
    common::DynamicLibrary lib =
        LoadInto(loader, stem + ".so." + std::to_string(majors[i]), &attempt);
    if (lib.loaded()) {
      *out = attempt;
      return lib;
    }
    if (i == 0) first = attempt;
  }
  *out = first;
  return {};
}

}  // namespace

namespace {

// NVML's system-wide facts: driver version and the CUDA version the driver supports.
void ProbeNvmlSystem(const common::DynamicLibrary& lib, const NvmlApi& api, NvmlInfo* n) {
  auto record = [&](const char* field, int code) {
    n->errors[field] = Describe(NvmlErrorName(code), code);
  };
  if (api.system_driver_version != nullptr) {
    char buf[96] = {};
    int rc = api.system_driver_version(buf, sizeof buf);
    if (rc == 0) {
      n->driver_version = buf;
      n->library.version = buf;
    } else {
      record("driver_version", rc);
    }
  } else {
    n->errors["driver_version"] = MissingSymbol(lib, "nvmlSystemGetDriverVersion");
  }
  if (api.system_cuda_driver_version != nullptr) {
    int v = 0;
    int rc = api.system_cuda_driver_version(&v);
    if (rc == 0) {
      n->cuda_driver_version_raw = v;
      n->cuda_driver_version = CudaVersionString(v);
    } else {
      record("cuda_driver_version", rc);
    }
  } else {
    n->errors["cuda_driver_version"] = MissingSymbol(lib, "nvmlSystemGetCudaDriverVersion");
  }
}

// One device's facts from its NVML handle; each failing query is recorded under its field (an
// entry point the library lacks leaves its field unset).
void ProbeNvmlDevice(const NvmlApi& f, void* h, NvmlDevice* d) {
  auto err = [&](const char* field, int code) {
    d->errors[field] = Describe(NvmlErrorName(code), code);
  };
  auto str_field = [&](int (*fn)(void*, char*, unsigned), const char* field,
                       std::optional<std::string>* out) {
    if (fn == nullptr) return;
    char buf[96] = {};
    int rc = fn(h, buf, sizeof buf);
    if (rc == 0) {
      *out = buf;
    } else {
      err(field, rc);
    }
  };
  str_field(f.device_name, "name", &d->name);
  str_field(f.device_uuid, "uuid", &d->uuid);
  if (f.device_compute_capability != nullptr) {
    int ma = 0, mi = 0;
    int rc = f.device_compute_capability(h, &ma, &mi);
    if (rc == 0) {
      d->compute_capability = std::to_string(ma) + "." + std::to_string(mi);
    } else {
      err("compute_capability", rc);
    }
  }
  if (f.device_memory != nullptr) {
    NvmlMemory m{};
    int rc = f.device_memory(h, &m);
    if (rc == 0) {
      d->memory_total_bytes = m.total;
    } else {
      err("memory_total_bytes", rc);
    }
  }
  if (f.device_mig_mode != nullptr) {
    unsigned cur = 0, pending = 0;
    int rc = f.device_mig_mode(h, &cur, &pending);
    if (rc == 0) {
      d->mig_enabled = cur != 0;
      d->mig_pending = pending != 0;
    } else {
      err("mig_enabled", rc);
    }
  }
  auto uint_field = [&](int (*fn)(void*, unsigned*), const char* field, std::optional<int>* out) {
    if (fn == nullptr) return;
    unsigned v = 0;
    int rc = fn(h, &v);
    if (rc == 0) {
      *out = static_cast<int>(v);
    } else {
      err(field, rc);
    }
  };
  uint_field(f.device_pcie_generation, "pcie_generation", &d->pcie_generation);
  uint_field(f.device_pcie_generation_max, "pcie_generation_max", &d->pcie_generation_max);
  uint_field(f.device_pcie_width, "pcie_width", &d->pcie_width);
  uint_field(f.device_pcie_width_max, "pcie_width_max", &d->pcie_width_max);
}

// Device count, then each device (at most 64: a broken library must not make us loop for ever).
void ProbeNvmlDevices(const common::DynamicLibrary& lib, const NvmlApi& api, NvmlInfo* n) {
  if (api.device_count == nullptr || api.device_handle == nullptr) {
    n->errors["device_count"] = MissingSymbol(lib, "nvmlDeviceGetCount_v2");
    return;
  }
  unsigned count = 0;
  int rc = api.device_count(&count);
  if (rc != 0) {
    n->errors["device_count"] = Describe(NvmlErrorName(rc), rc);
    return;
  }
  n->device_count = static_cast<int>(count);
  for (unsigned i = 0; i < count && i < 64; ++i) {
    NvmlDevice d;
    d.index = static_cast<int>(i);
    void* h = nullptr;
    int hr = api.device_handle(i, &h);
    if (hr != 0) {
      d.errors["handle"] = Describe(NvmlErrorName(hr), hr);
    } else {
      ProbeNvmlDevice(api, h, &d);
    }
    n->devices.push_back(std::move(d));
  }
}

}  // namespace

void ProbeNvml(const common::LibraryLoader& loader, bool init, NvmlInfo* n) {
  common::DynamicLibrary lib = LoadInto(loader, "libnvidia-ml.so.1", &n->library);
  if (!lib.loaded()) return;
  const NvmlApi api(lib);
  if (api.init == nullptr) {
    n->errors["init"] = MissingSymbol(lib, "nvmlInit_v2");
    return;
  }
  // The CUDA version query works without nvmlInit on real NVML; ask after init like nvidia-smi.
  if (!init) {
    n->errors["init"] = "skipped (--no-init)";
    return;
  }
  int r = api.init();
  n->init = ApiResult{r, NvmlErrorName(r)};
  if (r != 0) {
    n->errors["init"] = Describe(NvmlErrorName(r), r);
    return;
  }
  ProbeNvmlSystem(lib, api, n);
  ProbeNvmlDevices(lib, api, n);
  if (api.shutdown != nullptr) api.shutdown();
}

void ProbeCudaDriver(const common::LibraryLoader& loader, bool init, CudaDriverInfo* c) {
  common::DynamicLibrary lib = LoadInto(loader, "libcuda.so.1", &c->library);
  if (!lib.loaded()) return;
  ReadVersion(
      &c->library,
      [&](std::string* e) { return CallIntOut(lib, "cuDriverGetVersion", CudaErrorName, e); },
      CudaVersionString);
  if (!init) {
    c->errors["init"] = "skipped (--no-init)";
    return;
  }
  auto f_init = lib.Function<CuInitFn>("cuInit");
  if (f_init == nullptr) {
    c->errors["init"] = MissingSymbol(lib, "cuInit");
    return;
  }
  int r = f_init(0);
  c->init = ApiResult{r, CudaErrorName(r)};
  if (r != 0) {
    c->errors["init"] = Describe(CudaErrorName(r), r);
    return;
  }
  auto f_count = lib.Function<IntFn>("cuDeviceGetCount");
  if (f_count == nullptr) {
    c->errors["device_count"] = MissingSymbol(lib, "cuDeviceGetCount");
    return;
  }
  int count = 0;
  int rc = f_count(&count);
  if (rc != 0) {
    c->errors["device_count"] = Describe(CudaErrorName(rc), rc);
    return;
  }
  c->device_count = count;
  auto f_get = lib.Function<CuDeviceGetFn>("cuDeviceGet");
  auto f_name = lib.Function<CuNameFn>("cuDeviceGetName");
  auto f_attr = lib.Function<CuAttrFn>("cuDeviceGetAttribute");
  auto f_mem = lib.Function<CuMemFn>("cuDeviceTotalMem_v2");
  for (int i = 0; i < count && i < 64 && f_get != nullptr; ++i) {
    CudaDevice d;
    d.index = i;
    int dev = 0;
    int gr = f_get(&dev, i);
    if (gr != 0) {
      d.errors["device"] = Describe(CudaErrorName(gr), gr);
      c->devices.push_back(std::move(d));
      continue;
    }
    if (f_name != nullptr) {
      char buf[256] = {};
      int r2 = f_name(buf, sizeof buf, dev);
      if (r2 == 0)
        d.name = buf;
      else
        d.errors["name"] = Describe(CudaErrorName(r2), r2);
    }
    if (f_attr != nullptr) {
      int ma = 0, mi = 0;
      int r1 = f_attr(&ma, 75, dev);
      int r2 = f_attr(&mi, 76, dev);
      if (r1 == 0 && r2 == 0) {
        d.compute_capability = std::to_string(ma) + "." + std::to_string(mi);
      } else {
        int bad = r1 != 0 ? r1 : r2;
        d.errors["compute_capability"] = Describe(CudaErrorName(bad), bad);
      }
    }
    if (f_mem != nullptr) {
      unsigned long long bytes = 0;
      int r2 = f_mem(&bytes, dev);
      if (r2 == 0) {
        d.memory_total_bytes = bytes;
      } else {
        d.errors["memory_total_bytes"] = Describe(CudaErrorName(r2), r2);
      }
    }
    c->devices.push_back(std::move(d));
  }
}

void ProbeCudaRuntime(const common::LibraryLoader& loader, const std::vector<int>& majors,
                      CudaRuntimeInfo* c) {
  common::DynamicLibrary lib = LoadFirst(loader, "libcudart", majors, &c->library);
  if (!lib.loaded()) return;
  auto query = [&](const char* symbol, std::string* error) {
    return CallIntOut(lib, symbol, CudaRuntimeErrorName, error);
  };
  ReadVersion(
      &c->library, [&](std::string* e) { return query("cudaRuntimeGetVersion", e); },
      CudaVersionString);
  std::string error;
  if (auto v = query("cudaDriverGetVersion", &error)) {
    c->driver_version_raw = static_cast<int>(*v);
    // 0 is the runtime's way of saying "no driver installed".
    if (*v > 0) c->driver_version = CudaVersionString(*v);
  } else {
    c->errors["driver_version"] = error;
  }
}

void ProbeCublas(const common::LibraryLoader& loader, const std::vector<int>& majors,
                 LibInfo* cublas, LibInfo* cublaslt) {
  auto by_property = [](const common::DynamicLibrary& lib, const char* symbol) {
    return [&lib, symbol](std::string* error) -> std::optional<std::int64_t> {
      auto f = lib.Function<PropFn>(symbol);
      if (f == nullptr) {
        *error = MissingSymbol(lib, symbol);
        return std::nullopt;
      }
      int ma = 0, mi = 0, pa = 0;
      int rc = f(0, &ma);
      if (rc == 0) rc = f(1, &mi);
      if (rc == 0) rc = f(2, &pa);
      if (rc != 0) {
        *error = std::string(symbol) + " returned status " + std::to_string(rc);
        return std::nullopt;
      }
      return std::int64_t{ma} * 10000 + mi * 100 + pa;
    };
  };
  common::DynamicLibrary lt = LoadFirst(loader, "libcublasLt", majors, cublaslt);
  if (lt.loaded())
    ReadVersion(cublaslt, by_property(lt, "cublasLtGetProperty"), TripleVersionString);
  common::DynamicLibrary lib = LoadFirst(loader, "libcublas", majors, cublas);
  if (lib.loaded()) ReadVersion(cublas, by_property(lib, "cublasGetProperty"), TripleVersionString);
}

void ProbeCudnn(const common::LibraryLoader& loader, int major, CudnnInfo* c) {
  std::string suffix = ".so." + std::to_string(major);
  common::DynamicLibrary lib = LoadInto(loader, "libcudnn" + suffix, &c->library);
  if (lib.loaded()) {
    ReadVersion(
        &c->library,
        [&](std::string* error) -> std::optional<std::int64_t> {
          auto f = lib.Function<SizeFn>("cudnnGetVersion");
          if (f == nullptr) {
            *error = MissingSymbol(lib, "cudnnGetVersion");
            return std::nullopt;
          }
          return static_cast<std::int64_t>(f());
        },
        TripleVersionString);
    if (auto f = lib.Function<SizeFn>("cudnnGetCudartVersion")) {
      c->cudart_version_raw = static_cast<int>(f());
    }
  }
  // cuDNN 9 loads these on first use, so a missing one only shows up mid-inference; load them
  // now so the snapshot says so up front.
  for (const char* sub : {"ops", "cnn", "adv", "graph", "heuristic", "engines_precompiled",
                          "engines_runtime_compiled"}) {
    LibInfo l;
    LoadInto(loader, std::string("libcudnn_") + sub + suffix, &l);
    c->sub_libraries.push_back(std::move(l));
  }
}

void ProbeTensorRt(const common::LibraryLoader& loader, int major, TensorRtInfo* t) {
  auto int_version = [](const common::DynamicLibrary& lib, const char* symbol) {
    return [&lib, symbol](std::string* error) -> std::optional<std::int64_t> {
      auto f = lib.Function<IntRetFn>(symbol);
      if (f == nullptr) {
        *error = MissingSymbol(lib, symbol);
        return std::nullopt;
      }
      return f();
    };
  };
  std::string suffix = ".so." + std::to_string(major);
  common::DynamicLibrary lib = LoadInto(loader, "libnvinfer" + suffix, &t->library);
  if (lib.loaded()) {
    ReadVersion(&t->library, int_version(lib, "getInferLibVersion"), TripleVersionString);
  }
  common::DynamicLibrary parser = LoadInto(loader, "libnvonnxparser" + suffix, &t->onnx_parser);
  if (parser.loaded()) {
    ReadVersion(&t->onnx_parser, int_version(parser, "getNvOnnxParserVersion"),
                TripleVersionString);
  }
}

void ProbeNccl(const common::LibraryLoader& loader, LibInfo* l) {
  common::DynamicLibrary lib = LoadInto(loader, "libnccl.so.2", l);
  if (!lib.loaded()) return;
  ReadVersion(
      l, [&](std::string* e) { return CallIntOut(lib, "ncclGetVersion", nullptr, e); },
      TripleVersionString);
}

}  // namespace internal
}  // namespace tg::probe
