#include "runtime/ort_runtime.h"

#include <atomic>
#include <mutex>

#include "runtime/ort_env.h"

namespace tg::runtime {
namespace {

// The process's runtime. A plain pointer, never deleted: releasing the environment would unload
// the registered provider libraries, and the CUDA libraries do not survive being unloaded before
// exit. Reachable from here, so LeakSanitizer does not count it.
std::mutex g_mu;
OrtRuntime* g_runtime = nullptr;
std::atomic<int> g_environments{0};

}  // namespace

OrtRuntime::OrtRuntime(common::LibraryLoader loader, const OrtRuntimeOptions& options,
                       std::unique_ptr<internal::OrtEnvironment> env)
    : loader_(std::move(loader)), options_(options), env_(std::move(env)) {}

OrtRuntime::~OrtRuntime() = default;

common::Result<OrtRuntime*> OrtRuntime::Open(const common::LibraryLoader& loader,
                                             const OrtRuntimeOptions& options) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_runtime != nullptr) {
    if (!(g_runtime->options() == options)) {
      return common::Status::InvalidArg(
          std::string("the ONNX Runtime environment of this process was already created ") +
          (g_runtime->options().allow_unhostable_core ? "allowing" : "refusing") +
          " GPU providers on a core that cannot host them; it cannot be reopened " +
          (options.allow_unhostable_core ? "allowing" : "refusing") + " them");
    }
    return g_runtime;
  }
  auto load = LoadOrt(loader);
  if (!load.ok()) return load.status();
  auto env = internal::OrtEnvironment::Create(*load, options.allow_unhostable_core);
  if (!env.ok()) return common::Status::Unavailable(env.status().message());
  g_environments.fetch_add(1);
  g_runtime = new OrtRuntime(loader, options, std::move(env).value());
  return g_runtime;
}

int OrtRuntime::EnvironmentsCreated() { return g_environments.load(); }

const std::string& OrtRuntime::ort_version() const { return env_->load().version; }
const std::string& OrtRuntime::core_path() const { return env_->load().library_path; }

common::Status OrtRuntime::CheckCoreCanHost(const std::string& provider,
                                            const std::string& provider_library) const {
  return env_->CheckCoreCanHost(provider, provider_library);
}

}  // namespace tg::runtime
