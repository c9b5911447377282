// Session internals: the ORT session handle and the two run paths (plain Run, IO binding with
// counted host<->device copies). runtime/ internal; includes ORT headers.
//
// Thread safety: Run is safe to call concurrently (each call owns its IoBinding and values;
// counters are atomic); Init is called once before the Session is handed out.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ort_env.h"
#include "runtime/session.h"

namespace tg::runtime {

struct Session::Impl {
  internal::OrtEnvironment* env = nullptr;
  std::unique_ptr<Ort::Session> session;
  SessionReport report;
  bool io_binding = true;
  bool use_device = false;  // a GPU provider holds nodes: bind device memory
  bool shrink_arena = false;
  AttachPath gpu_path = AttachPath::kNone;
  int device_id = 0;
  const OrtMemoryInfo* device_memory = nullptr;  // plugin EP device memory
  const OrtMemoryInfo* pinned_memory = nullptr;  // plugin EP host-accessible memory
  std::unique_ptr<Ort::MemoryInfo> cpu_memory;
  std::unique_ptr<Ort::RunOptions> run_options;
  std::atomic<std::uint64_t> runs{0}, h2d{0}, d2h{0};

  common::Status Init();
  common::Status Run(const std::vector<NamedTensor>& inputs,
                     const std::vector<std::string>& output_names, std::vector<Tensor>* out,
                     RunMode mode);

 private:
  common::Status Validate(const std::vector<NamedTensor>& inputs,
                          const std::vector<std::string>& output_names,
                          std::vector<std::string>* outputs) const;
  common::Status RunPlain(const std::vector<NamedTensor>& inputs,
                          const std::vector<std::string>& outputs, std::vector<Tensor>* out);
  common::Status RunBound(const std::vector<NamedTensor>& inputs,
                          const std::vector<std::string>& outputs, std::vector<Tensor>* out);
};

// Reads the model's declared inputs and outputs.
common::Status ReadModelIo(const Ort::Session& session, std::vector<TensorInfo>* inputs,
                           std::vector<TensorInfo>* outputs);

// ORT element type <-> DataType.
DataType FromOrtType(ONNXTensorElementDataType t);
ONNXTensorElementDataType ToOrtType(DataType d);

}  // namespace tg::runtime
