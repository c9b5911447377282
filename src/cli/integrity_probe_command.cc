// `truegreen probe [--root DIR] [--no-init]`: print the capability snapshot (human-readable, or the
// schema-versioned JSON document with the global --json). Exit 0 whenever the probe itself ran —
// judging the snapshot is admit's job — and 2 on usage errors.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command_areas.h"
#include "cli/output.h"
#include "common/json_writer.h"
#include "common/status.h"
#include "probe/probe.h"
#include "runtime/ort_probe.h"

namespace tg::cli {
namespace {

struct ProbeFlags {
  std::string root = "/";
  bool no_init = false;
};

std::string Or(const std::optional<std::string>& v, const std::string& missing) {
  return v ? *v : missing;
}

// "  label<padding>value\n" with values aligned in one column.
std::string Row(const std::string& label, const std::string& value) {
  std::string out = "  " + label;
  if (out.size() < 24) out.resize(24, ' ');
  return out + value + "\n";
}

// One library line: "  name  version  (path)" or "  name  NOT LOADED: error".
std::string LibLine(const std::string& label, const probe::LibInfo& l) {
  std::string out = "  " + label;
  if (out.size() < 24) out.resize(24, ' ');
  if (!l.loaded) return out + "NOT LOADED (" + l.soname + "): " + l.error + "\n";
  if (l.version) {
    out += *l.version;
  } else {
    out += l.version_error.empty() ? "loaded" : "version unknown: " + l.version_error;
  }
  return out + "  [" + l.resolved_path + "]\n";
}

std::string ErrorsLine(const std::map<std::string, std::string>& errors) {
  std::string out;
  for (const auto& [field, why] : errors) out += "    ! " + field + ": " + why + "\n";
  return out;
}

std::string PathLine(const probe::PathCheck& p) {
  std::string out = "  " + p.path;
  if (out.size() < 30) out.resize(30, ' ');
  return out + (p.present ? "present (" + p.type + ")" : "absent: " + p.error) + "\n";
}

std::string HumanHost(const probe::Snapshot& s) {
  std::string o;
  o += "\nHost\n";
  o += "  kernel " + s.host.kernel + " " + s.host.architecture + ", " + s.host.os + "\n";
  o += "  cpu " + s.host.cpu_model + " x" + std::to_string(s.host.cpu_count) + "\n";
  o += "  container " + std::string(s.host.container ? "yes" : "no");
  for (const auto& h : s.host.container_hints) o += "; " + h;
  o += "\n  cgroup " + s.host.cgroup_version +
       (s.host.cgroup_memory_limit ? ", memory limit " + *s.host.cgroup_memory_limit : "") + "\n";
  o += ErrorsLine(s.host.errors);
  return o;
}

std::string HumanDeviceNodes(const probe::Snapshot& s) {
  std::string o;
  o += "\nDevice nodes (root " + s.devices.root + ")\n";
  o += PathLine(s.devices.nvidiactl);
  o += PathLine(s.devices.nvidia_uvm);
  if (s.devices.gpus.empty()) o += "  /dev/nvidiaN                absent: no GPU device nodes\n";
  for (const auto& g : s.devices.gpus) o += PathLine(g);
  o += PathLine(s.devices.proc_driver_version);
  if (s.devices.kernel_module_version) {
    o += "  kernel module version       " + *s.devices.kernel_module_version + "\n";
  }
  return o;
}

// NVML and the CUDA driver API, with one line per GPU NVML reports.
std::string HumanDriver(const probe::Snapshot& s) {
  std::string o;
  o += "\nNVIDIA driver\n";
  o += LibLine("NVML", s.nvml.library);
  if (s.nvml.init) {
    o += Row("nvmlInit", s.nvml.init->name);
  }
  if (s.nvml.cuda_driver_version) {
    o += Row("driver CUDA version", *s.nvml.cuda_driver_version);
  }
  o += ErrorsLine(s.nvml.errors);
  for (const auto& d : s.nvml.devices) {
    o += "  GPU " + std::to_string(d.index) + ": " + Or(d.name, "?") + ", " + Or(d.uuid, "?") +
         ", cc " + Or(d.compute_capability, "?") + ", " +
         (d.memory_total_bytes ? std::to_string(*d.memory_total_bytes >> 20) + " MiB" : "? MiB") +
         ", MIG " + (d.mig_enabled ? (*d.mig_enabled ? "on" : "off") : "n/a") + ", PCIe gen " +
         (d.pcie_generation ? std::to_string(*d.pcie_generation) : "?") + " x" +
         (d.pcie_width ? std::to_string(*d.pcie_width) : "?") + "\n";
    o += ErrorsLine(d.errors);
  }
  o += LibLine("libcuda", s.cuda_driver.library);
  if (s.cuda_driver.init) {
    o += Row("cuInit",
             s.cuda_driver.init->name + " (" + std::to_string(s.cuda_driver.init->code) + ")");
  }
  if (s.cuda_driver.device_count) {
    o += Row("CUDA devices", std::to_string(*s.cuda_driver.device_count));
  }
  o += ErrorsLine(s.cuda_driver.errors);
  return o;
}

std::string HumanCudaLibraries(const probe::Snapshot& s) {
  std::string o;
  o += "\nCUDA libraries\n";
  o += LibLine("CUDA runtime", s.cuda_runtime.library);
  o += LibLine("cuBLAS", s.cublas);
  o += LibLine("cuBLASLt", s.cublaslt);
  o += LibLine("cuDNN", s.cudnn.library);
  int subs_loaded = 0;
  for (const auto& l : s.cudnn.sub_libraries) subs_loaded += l.loaded ? 1 : 0;
  o += Row("cuDNN sub-libraries", std::to_string(subs_loaded) + "/" +
                                      std::to_string(s.cudnn.sub_libraries.size()) + " loaded");
  o += LibLine("TensorRT", s.tensorrt.library);
  o += LibLine("TensorRT ONNX parser", s.tensorrt.onnx_parser);
  o += LibLine("NCCL", s.nccl);
  return o;
}

std::string HumanProvider(const probe::ProviderLibrary& p) {
  std::string o;
  o += "  " + p.provider + " (" + p.library.soname + ")\n";
  o += p.library.loaded ? "    loads (" + p.load_method + "): " + p.library.resolved_path + "\n"
                        : "    FAILS TO LOAD: " + p.library.error + "\n";
  if (p.ep_devices) {
    std::string devices;
    for (const auto& d : *p.ep_devices) {
      devices += (devices.empty() ? "" : ", ") + d.device_type +
                 (d.vendor.empty() ? "" : " (" + d.vendor + ")");
    }
    o += "    offers devices: " +
         (devices.empty() ? "none (the provider found no usable GPU)" : devices) + "\n";
  }
  if (p.cuda_major) o += "    built for CUDA " + std::to_string(*p.cuda_major);
  if (p.cudnn_major) o += ", cuDNN " + std::to_string(*p.cudnn_major);
  if (p.tensorrt_major) o += ", TensorRT " + std::to_string(*p.tensorrt_major);
  if (p.cuda_major) o += "\n";
  if (!p.elf_error.empty()) o += "    DT_NEEDED unreadable: " + p.elf_error + "\n";
  return o;
}

std::string HumanOnnxRuntime(const probe::Snapshot& s) {
  std::string o;
  o += "\nONNX Runtime\n";
  o += LibLine("onnxruntime", s.onnxruntime.library);
  if (!s.onnxruntime.build_info.empty()) o += "  " + s.onnxruntime.build_info + "\n";
  o += "  compiled-in providers:";
  for (const auto& p : s.onnxruntime.compiled_providers) o += " " + p;
  o += "\n";
  o += LibLine("provider host", s.onnxruntime.providers_shared);
  for (const auto& p : s.onnxruntime.provider_libraries) o += HumanProvider(p);
  return o;
}

std::string Human(const probe::Snapshot& s) {
  std::string o;
  o += "truegreen capability snapshot (" + s.schema_version + ", " + s.taken_at + ")\n";
  o += HumanHost(s);
  o += HumanDeviceNodes(s);
  o += "\nEnvironment\n";
  for (const auto& e : s.env) o += "  " + e.name + "=" + Or(e.value, "(unset)") + "\n";
  o += HumanDriver(s);
  o += HumanCudaLibraries(s);
  o += HumanOnnxRuntime(s);
  return o;
}

}  // namespace

void RegisterProbeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto flags = std::make_shared<ProbeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "Capability snapshot: driver, CUDA libraries, ONNX Runtime and its GPU providers");
  cmd->add_option("--root", flags->root,
                  "Root prefix for /dev and /proc/driver/nvidia checks (tests, chroots)")
      ->type_name("DIR");
  cmd->add_flag("--no-init", flags->no_init,
                "Only load libraries and read versions; do not call nvmlInit/cuInit");
  r.Add(cmd, [flags, &g]() -> int {
    probe::ProbeOptions options;
    options.root = flags->root;
    options.skip_init = flags->no_init;
    const common::LibraryLoader loader = g.Loader();
    probe::Snapshot s = runtime::TakeSnapshot(loader, runtime::OrtRuntime::Open(loader), options);
    if (g.json) {
      std::string text = common::WriteJson(probe::ToJson(s), 2);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      std::string text = Human(s);
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    if (std::fflush(stdout) != 0) {
      return ReportError(common::Status::Unavailable("cannot write the snapshot to stdout"));
    }
    return common::kExitOk;
  });
}

}  // namespace tg::cli
