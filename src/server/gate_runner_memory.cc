// The memory part of the warm-up gate (gate_runner.h): after warm-up, each image model's memory
// model is calibrated on its own sessions (CPU sessions: the resident set measures them), the
// budget is resolved (sd::ResolveBudget) and each generic model's graph is kept, without its
// weights, for the KServe estimates (onnx_memory.h); MemoryAdmission (memory_admission.h) admits by
// them.
#include <malloc.h>
#include <unistd.h>

#include <filesystem>

#include "probe/host_memory.h"
#include "probe/nvml_reader.h"
#include "runtime/onnx_model_memory.h"
#include "server/gate_runner.h"

namespace tg::server {

using common::Status;

namespace {

// Device memory free now and held by this process on GPU 0, through NVML; absent when NVML
// cannot say.
void ReadDeviceMemory(const common::LibraryLoader& loader, std::optional<std::int64_t>* free,
                      std::optional<std::int64_t>* held) {
  auto nvml = probe::NvmlReader::Open(loader);
  if (!nvml.ok() || (*nvml)->device_count() == 0) return;
  probe::NvmlFields f;
  f.utilization = f.pcie = f.power = false;
  const probe::NvmlDeviceSample s = (*nvml)->Sample(0, f);
  if (!s.memory_total_bytes || !s.memory_used_bytes) return;
  *free = static_cast<std::int64_t>(*s.memory_total_bytes - *s.memory_used_bytes);
  const auto pid = static_cast<unsigned>(::getpid());
  if (s.processes) {
    for (const auto& p : *s.processes) {
      if (p.pid == pid && p.used_memory_bytes)
        *held = static_cast<std::int64_t>(*p.used_memory_bytes);
    }
  }
}

}  // namespace

Status GateRunner::GateMemory() {
  const bool gpu = AnyGpuSession();
  for (auto& [name, mr] : models_.all()) {
    if (!mr->model->sd) continue;
    if (gpu) {
      Log("memory model of " + name +
          ": not calibrated (GPU sessions: the host's resident set does not measure device "
          "memory); jobs are admitted without an estimate");
      continue;
    }
    sd::RssMeter meter;
    const auto t0 = Clock::now();
    auto m = sd::CalibrateSdMemory(*mr->model->pipeline, meter);
    if (!m.ok()) return m.status().WithPrefix("memory model of " + name);
    memory_.SetModel(name, *m);
    const sd::JobEstimate e = m->Estimate({512, 512, 1, true, false});
    Log("memory model of " + name + ": calibrated in " +
        std::to_string(static_cast<int>(MsSince(t0))) + " ms; one 512x512 image " +
        sd::FormatBytes(e.job_bytes) + " above the loaded models");
  }
  const std::int64_t rss = probe::CurrentRssBytes().value_or(0);
  std::optional<std::int64_t> gpu_free, gpu_held;
  if (gpu) ReadDeviceMemory(loader_, &gpu_free, &gpu_held);
  auto budget =
      sd::ResolveBudget(config_.memory_budget, probe::ReadHostMemory(), gpu_free, gpu_held, rss);
  if (!budget.ok()) return budget.status();
  const std::int64_t held = budget->device ? gpu_held.value_or(0) : rss;
  if (budget->bytes <= held) {
    return Status::InvalidArg("memory budget " + sd::FormatBytes(budget->bytes) + " (" +
                              budget->source + ") is not above what the loaded models hold, " +
                              sd::FormatBytes(held) + "; raise --memory-budget");
  }
  Log("memory budget " + sd::FormatBytes(budget->bytes) + " (" + budget->source + "), " +
      sd::FormatBytes(held) + " held by the loaded models");
  KeepOnnxGraphs(budget->bytes - held);
  memory_.Configure(*budget, held);
  return Status::Ok();
}

void GateRunner::KeepOnnxGraphs(std::int64_t available) {
  for (auto& [name, mr] : models_.all()) {
    if (!mr->model->session) continue;
    const std::string& path = mr->model->spec.path;
    const std::string no = "memory estimate of " + name + ": ";
    const std::string as_before = "; KServe requests are admitted without an estimate";
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    // Reading it holds the file's bytes and the parsed graph at once, for a moment.
    if (ec || size > static_cast<std::uintmax_t>(available / 2)) {
      Log(no + "the graph is not read (" +
              (ec ? ec.message() : sd::FormatBytes(static_cast<std::int64_t>(size))) +
              ", more than half of the memory left)" + as_before,
          "warning");
      continue;
    }
    runtime::OnnxLoadOptions options;
    options.check_external_data = false;  // only shapes are read; the session has the data
    auto m = runtime::OnnxModel::Load(path, options);
    if (!m.ok()) {
      Log(no + "the graph cannot be read (" + m.status().message() + ")" + as_before, "warning");
      continue;
    }
    runtime::OnnxModel shapes = runtime::ShapeOnlyModel(*m);
    const std::int64_t kept = runtime::ModelByteSize(shapes);
    memory_.SetOnnxModel(name, std::make_shared<OnnxMemoryModel>(std::move(shapes)));
    Log(no + "ONNX shape inference at each request's input shapes; the graph without its " +
        "weights is kept (" + BytesText(kept) + ")");
  }
  ::malloc_trim(0);  // the file's bytes and the full graph go back to the system
}

}  // namespace tg::server
