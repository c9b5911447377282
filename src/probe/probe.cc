#include "probe/probe.h"

#include <ctime>

#include "common/strings.h"
#include "probe/host_internal.h"
#include "probe/provider_libs.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

namespace tg::probe {
namespace {}  // namespace

Snapshot TakeSnapshot(const common::LibraryLoader& loader, const ProbeOptions& options) {
  Snapshot s;
  s.tool_version = TG_VERSION;
  s.taken_at = common::UtcNow("%Y-%m-%dT%H:%M:%SZ");
  s.lib_search_dirs = loader.search_dirs();
  const std::map<std::string, std::string> env =
      options.env ? *options.env : internal::ProcessEnv();
  const std::string root = options.root.empty() ? "/" : options.root;

  internal::ProbeHost(root, env, &s.host);
  internal::ProbeDeviceNodes(root, &s.devices);
  internal::ProbeEnv(env, &s.env);

  // Which CUDA / cuDNN / TensorRT majors to look for: what the provider libraries were built for
  // (read from their files, nothing loaded yet), else the current majors.
  std::vector<ProviderLibrary> providers;
  std::vector<int> cuda_majors;
  int cudnn_major = 9, trt_major = 10;
  for (const auto& spec : kGpuProviderLibraries) {
    ProviderLibrary p;
    p.provider = spec.provider;
    p.library.soname = spec.file;
    ReadProviderElf(loader, &p);
    if (p.cuda_major) cuda_majors.push_back(*p.cuda_major);
    if (p.cudnn_major) cudnn_major = *p.cudnn_major;
    if (p.tensorrt_major) trt_major = *p.tensorrt_major;
    providers.push_back(std::move(p));
  }
  for (int m : {13, 12}) cuda_majors.push_back(m);

  // Driver first, then the user-space libraries a provider needs, all RTLD_GLOBAL, so that the
  // provider libraries loaded last bind to these copies.
  internal::ProbeNvml(loader, !options.skip_init, &s.nvml);
  internal::ProbeCudaDriver(loader, !options.skip_init, &s.cuda_driver);
  internal::ProbeCudaRuntime(loader, cuda_majors, &s.cuda_runtime);
  internal::ProbeCublas(loader, cuda_majors, &s.cublas, &s.cublaslt);
  internal::ProbeCudnn(loader, cudnn_major, &s.cudnn);
  internal::ProbeTensorRt(loader, trt_major, &s.tensorrt);
  internal::ProbeNccl(loader, &s.nccl);

  // The ONNX Runtime section itself (loading the core, registering the providers) is filled by
  // runtime::TakeSnapshot: only the runtime module talks to ORT.
  s.onnxruntime.provider_libraries = std::move(providers);
  return s;
}

}  // namespace tg::probe
