// `truegreen generate`: text-to-image with an ONNX Stable Diffusion pipeline folder, through the
// runtime layer's policy (production by default: no GPU path → exit 3 with the cause; `--policy
// dev` runs on the CPU and says it is degraded). Results (paths, seeds, timings; with --json also
// the prompt and each image's A1111 infotext) on stdout, text or --json; a progress bar and
// warnings (a prompt truncated to 77 tokens) on stderr. Each PNG carries its generation
// parameters as an A1111 `parameters` text chunk (sd/infotext.h).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "audit/report/byte_size.h"
#include "cli/command_areas.h"
#include "cli/integrity_canary.h"
#include "cli/output.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/interrupt.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/status.h"
#include "probe/host_memory.h"
#include "runtime/runtime_policy.h"
#include "runtime/session.h"
#include "runtime/startup.h"
#include "sd/infotext.h"
#include "sd/memory_model.h"
#include "sd/model_loader.h"
#include "sd/pipeline.h"

namespace tg::cli {
namespace {

using common::Json;
using common::Status;

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  std::string negative;
  // Set at registration; count() > 0 after parsing when --negative was given, even as "" (an
  // empty negative prompt, which SDXL encodes, unlike none).
  const CLI::Option* negative_option = nullptr;
  int steps = 50;
  std::string scheduler;
  std::optional<double> guidance;  // unset: the variant's default (no sentinel value)
  std::string size;                // "WxH"; empty: the variant's default
  int batch = 1;
  std::uint64_t seed = 0;
  std::string rng = "numpy";
  std::string output = "out.png";
  bool no_progress = false;
  bool no_fuse_attention = false;
  std::string memory_budget;  // --memory-budget SIZE ("" = read it, when the job needs a check)
};

// The component models of a pipeline folder (<folder>/<component>/*.onnx): the canary's op set.
std::vector<std::string> PipelineModelFiles(const std::string& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& comp : std::filesystem::directory_iterator(folder, ec)) {
    if (!comp.is_directory(ec)) continue;
    for (const auto& f : std::filesystem::directory_iterator(comp.path(), ec)) {
      if (f.path().extension() == ".onnx") out.push_back(f.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "WIDTHxHEIGHT": the form is checked here, the range by sd::CheckSide, so a well-formed size
// out of range says which side and what is allowed.
common::Status ParseSize(const std::string& text, int* w, int* h) {
  const auto x = text.find_first_of("xX");
  auto bad = [&] {
    return Status::InvalidArg("--size '" + text + "' is not WIDTHxHEIGHT (e.g. 512x512, 1216x832)");
  };
  if (x == std::string::npos || x == 0 || x + 1 >= text.size()) return bad();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i != x && (text[i] < '0' || text[i] > '9')) return bad();
  }
  // Seven digits already exceed any allowed side; clamping keeps stoi in range.
  const auto side = [](const std::string& digits) {
    return digits.size() > 7 ? 99999999 : std::stoi(digits);
  };
  *w = side(text.substr(0, x));
  *h = side(text.substr(x + 1));
  for (auto [name, v] : {std::pair<const char*, int>{"width", *w}, {"height", *h}}) {
    if (Status s = sd::CheckSide(name, v); !s.ok()) return s.WithPrefix("--size '" + text + "'");
  }
  return Status::Ok();
}

// out.png → out.png for one image, out-0.png, out-1.png ... for a batch.
std::string ImagePath(const std::string& base, int k, int batch) {
  if (batch == 1) return base;
  std::filesystem::path p(base);
  std::string stem = p.stem().string() + "-" + std::to_string(k);
  std::string ext = p.has_extension() ? p.extension().string() : ".png";
  return (p.parent_path() / (stem + ext)).string();
}

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  bool Update(const sd::StepProgress& p) {
    if (enabled_) {
      constexpr int kWidth = 30;
      const int filled = p.total > 0 ? p.step * kWidth / p.total : kWidth;
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar.resize(kWidth, '.');
      std::fprintf(stderr, "\rgenerate [%s] %d/%d  unet %.1f ms  host %.2f ms", bar.c_str(), p.step,
                   p.total, p.unet_ms, p.host_ms);
      if (p.step == p.total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    }
    return !common::SigintScope::Interrupted();
  }

 private:
  bool enabled_;
};

// Flags to a request, with the checks that need no model: a usage error is reported as one
// (exit 2) even where the production policy would refuse the node.
common::Result<sd::GenerateRequest> BuildRequest(const GenerateFlags& f) {
  sd::GenerateRequest req;
  if (!f.prompt_file.empty()) {
    if (!f.prompt.empty())
      return Status::InvalidArg("give either --prompt or --prompt-file, not both");
    auto text = common::ReadFileLimited(f.prompt_file, sd::kMaxPromptBytes);
    if (!text.ok()) return text.status().WithPrefix("--prompt-file");
    req.prompt = *text;
    while (!req.prompt.empty() && (req.prompt.back() == '\n' || req.prompt.back() == '\r')) {
      req.prompt.pop_back();
    }
  } else {
    req.prompt = f.prompt;
  }
  if (f.negative_option != nullptr && f.negative_option->count() > 0) {
    req.negative_prompt = f.negative;
  }
  req.steps = f.steps;
  req.scheduler = f.scheduler;
  req.guidance = f.guidance;  // any given value is range-checked (NaN, < 0 rejected)
  if (!f.size.empty()) TG_RETURN_IF_ERROR(ParseSize(f.size, &req.width, &req.height));
  req.batch = f.batch;
  req.seed = f.seed;
  auto mode = sd::ParseRngMode(f.rng);
  if (!mode.ok()) return mode.status().WithPrefix("--rng");
  req.rng = *mode;
  if (Status s = sd::ValidateRequestBasics(req); !s.ok()) {
    // The request's own words ("unknown scheduler 'x'") name the flag the value came from.
    return s.message().starts_with("unknown scheduler") ? s.WithPrefix("--scheduler") : s;
  }
  // The output is checked before any work: a device, a FIFO, a directory or a missing folder is
  // refused now, not after the last denoising step.
  for (int k = 0; k < req.batch; ++k) {
    TG_RETURN_IF_ERROR(common::CheckOutputPath(ImagePath(f.output, k, req.batch)).WithPrefix("-o"));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(f.model, ec)) {
    return Status::NotFound("--model: Stable Diffusion pipeline folder not found: " + f.model);
  }
  // A folder without the pipeline's index is no pipeline: a usage error (exit 2) before the
  // startup chain, on every node. The loader checks the rest once the chain has a factory.
  TG_RETURN_IF_ERROR(common::CheckInputPath(
      (std::filesystem::path(f.model) / "model_index.json").string(), "--model"));
  return req;
}

// Writes the encoded images (out.png, or out-K.png for a batch); their JSON descriptions.
common::Result<Json> WriteImages(const std::string& base, const sd::GenerateOutput& out) {
  Json images = Json::array();
  const int batch = static_cast<int>(out.images.size());
  for (int k = 0; k < batch; ++k) {
    const sd::GeneratedImage& im = out.images[k];
    const std::string path = ImagePath(base, k, batch);
    // Never creates folders: -o names a file in an existing one (checked before any work).
    TG_RETURN_IF_ERROR(common::WriteFileAtomic(path, im.png));
    images.push_back({{"path", path},
                      {"seed", im.seed},
                      {"width", out.width},
                      {"height", out.height},
                      {"bytes", im.png.size()},
                      {"sha256", common::Sha256Hex(im.png.data(), im.png.size())},
                      {"parameters", im.parameters}});
  }
  return images;
}

void PrintJson(const GlobalOptions& g, const GenerateFlags& f, const sd::SdModel& m,
               const sd::GenerateRequest& req, const sd::GenerateOutput& out, const Json& images,
               const runtime::StartupReport& startup, const Json& memory) {
  const auto& tm = out.timings;
  Json j = {
      {"ok", true},
      {"model", f.model},
      {"model_hash", req.model_hash},
      {"variant", std::string(sd::SdVariantName(m.variant))},
      {"export", std::string(sd::ExportStyleName(m.style))},
      {"pipeline_class", m.pipeline_class},
      {"precision", m.fp16 ? "fp16" : "fp32"},
      {"prediction_type", std::string(sd::PredictionTypeName(m.scheduler_config.prediction_type))},
      {"vae_scaling_factor", m.vae.scaling_factor},
      {"prompt", req.prompt},
      {"negative_prompt", req.negative_prompt ? Json(*req.negative_prompt) : Json(nullptr)},
      {"negative_prompt_used", req.negative_prompt.has_value() && out.guidance > 1.0},
      {"scheduler", out.scheduler},
      {"steps", req.steps},
      {"unet_calls", tm.unet_ms.size()},
      {"guidance", out.guidance},
      {"width", out.width},
      {"height", out.height},
      {"batch", out.images.size()},
      {"rng", f.rng},
      {"policy", g.policy},
      {"degraded", m.degraded()},
      {"degraded_reason", m.degraded_reason()},
      {"warnings", out.warnings},
      {"images", images},
      {"timings_ms",
       {{"tokenize", tm.tokenize_ms},
        {"encode", tm.encode_ms},
        {"latents", tm.latents_ms},
        {"unet_total", tm.UnetTotal()},
        {"unet_per_step", tm.unet_ms},
        {"scheduler_total", tm.SchedulerTotal()},
        {"scheduler_per_step", tm.scheduler_ms},
        {"decode", tm.decode_ms},
        {"png", tm.png_ms},
        {"total", tm.total_ms}}},
      {"startup", startup.ToJson()},
      {"memory", memory},
  };
  // A prompt file may hold invalid UTF-8: replace it rather than abort the dump.
  std::printf("%s\n", common::WriteJson(j, 2).c_str());
}

void PrintText(const sd::SdModel& m, const sd::GenerateOutput& out, const Json& images,
               const runtime::StartupReport& startup) {
  const auto& tm = out.timings;
  const int batch = static_cast<int>(out.images.size());
  const int calls = static_cast<int>(tm.unet_ms.size());
  std::printf(
      "generated %d image%s %dx%d: %s pipeline (%s export, %s), scheduler %s, %d UNet "
      "calls, guidance %.2f%s\n",
      batch, batch == 1 ? "" : "s", out.width, out.height,
      std::string(sd::SdVariantName(m.variant)).c_str(),
      std::string(sd::ExportStyleName(m.style)).c_str(), m.fp16 ? "fp16" : "fp32",
      out.scheduler.c_str(), calls, out.guidance, m.degraded() ? " [DEGRADED: CPU]" : "");
  std::fputs(startup.Format().c_str(), stdout);
  for (const auto& im : images) {
    std::printf("  %s  seed %llu  sha256 %s\n", im["path"].get<std::string>().c_str(),
                static_cast<unsigned long long>(im["seed"].get<std::uint64_t>()),
                im["sha256"].get<std::string>().substr(0, 16).c_str());
  }
  std::printf(
      "timings ms: tokenize %.2f  encode %.2f  unet %.1f (%.2f/step)  host/step %.3f  "
      "decode %.1f  png %.1f  total %.1f\n",
      tm.tokenize_ms, tm.encode_ms, tm.UnetTotal(), calls ? tm.UnetTotal() / calls : 0.0,
      calls ? tm.SchedulerTotal() / calls : 0.0, tm.decode_ms, tm.png_ms, tm.total_ms);
}

// Whether generate checks the job against a memory budget: when --memory-budget is given, or the
// job is larger than the memory model's calibration runs (one 512² image), which it would
// otherwise allocate itself. A default size is not known before the model loads: checked.
bool NeedsMemoryCheck(const GenerateFlags& f, const sd::GenerateRequest& req) {
  return !f.memory_budget.empty() || req.width == 0 || req.height == 0 ||
         static_cast<std::int64_t>(req.width) * req.height * req.batch > 512 * 512;
}

// A memory check estimates each phase with the arenas returned after every run
// (sd/memory_model.h); the budget is also the CUDA arena's limit (unless the policy sets one).
Status BudgetPolicy(const GenerateFlags& f, const sd::GenerateRequest& req,
                    runtime::RuntimePolicy* policy) {
  if (NeedsMemoryCheck(f, req)) policy->arena.shrink_after_run = true;
  if (!f.memory_budget.empty() && !policy->cuda.gpu_mem_limit) {
    auto b = audit::ParseByteSizeOrError(f.memory_budget);
    if (!b.ok()) return b.status().WithPrefix("--memory-budget");
    policy->cuda.gpu_mem_limit = static_cast<std::int64_t>(*b);
  }
  return Status::Ok();
}

// Calibrates the memory model on the loaded pipeline (sd/memory_model.h), resolves the budget and
// refuses a job that cannot fit (INVALID_ARG, exit 2: the server's message) before it allocates
// anything; sets the request's VAE tiling from the estimate. *out: the "memory" JSON object.
Status CheckGenerateMemory(const GenerateFlags& f, const sd::Pipeline& pipeline,
                           sd::GenerateRequest* req, Json* out) {
  std::optional<std::int64_t> flag;
  if (!f.memory_budget.empty()) {
    auto b = audit::ParseByteSizeOrError(f.memory_budget);
    if (!b.ok()) return b.status().WithPrefix("--memory-budget");
    flag = static_cast<std::int64_t>(*b);
  }
  sd::GenerateRequest check = *req;
  TG_RETURN_IF_ERROR(sd::ValidateRequest(pipeline.model(), &check));
  sd::RssMeter meter;
  TG_ASSIGN_OR_RETURN(sd::SdMemoryModel model, sd::CalibrateSdMemory(pipeline, meter));
  const std::int64_t held = meter.Now();
  TG_ASSIGN_OR_RETURN(sd::MemoryBudget budget, sd::ResolveBudget(flag, probe::ReadHostMemory(),
                                                                 std::nullopt, std::nullopt, held));
  sd::ImageJob job{check.width, check.height, check.batch, *check.guidance > 1.0, false};
  TG_RETURN_IF_ERROR(sd::CheckOneImageFits(model, job, budget, held));
  const std::int64_t available = budget.bytes - held;
  bool tiled = false;
  const sd::JobEstimate e = sd::EstimateWithTiling(model, job, available, &tiled);
  if (e.admit_bytes > available) {
    const int fit = sd::MaxImagesThatFit(model, job, available, sd::kMaxBatch);
    return Status::InvalidArg(
        "--batch " + std::to_string(job.images) + " at " + std::to_string(job.width) + "x" +
        std::to_string(job.height) + " needs an estimated " + sd::FormatBytes(e.admit_bytes) +
        " but the memory budget is " + sd::FormatBytes(budget.bytes) + " (" + budget.source +
        "), " + sd::FormatBytes(held) + " of it held by the loaded model; --batch " +
        std::to_string(fit) + " fits");
  }
  req->vae_tiling = tiled ? sd::VaeTiling::kOn : sd::VaeTiling::kOff;
  *out = {{"budget_bytes", budget.bytes},
          {"budget_source", budget.source},
          {"held_bytes", held},
          {"estimate_bytes", e.job_bytes},
          {"estimate_unet_bytes", e.unet_bytes},
          {"estimate_vae_bytes", e.vae_bytes},
          {"vae_tiled", tiled}};
  return Status::Ok();
}

// sd::PipelineHash(dir) on its own thread, or deferred to get() when no thread can be started.
std::future<common::Result<std::string>> StartPipelineHash(const std::string& dir) {
  auto job = [dir] { return sd::PipelineHash(dir); };
  try {
    return std::async(std::launch::async, job);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, job);
  }
}

// The policy generate runs under: --policy, then --no-fuse-attention and the memory budget's part.
common::Result<runtime::RuntimePolicy> GeneratePolicy(const GlobalOptions& g,
                                                      const GenerateFlags& f,
                                                      const sd::GenerateRequest& req) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return policy.status().WithPrefix("--policy");
  if (f.no_fuse_attention) policy->session.fuse_attention = false;
  TG_RETURN_IF_ERROR(BudgetPolicy(f, req, &*policy));
  return policy;
}

// The pipeline's name for the PNG text: its folder's name ("dir/" normalises to "dir/", whose
// filename is empty: then the parent path's name).
std::string PipelineName(const std::string& model) {
  const std::filesystem::path p = std::filesystem::path(model).lexically_normal();
  const std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

int RunGenerate(const GlobalOptions& g, const GenerateFlags& f) {
  auto built = BuildRequest(f);
  if (!built.ok()) return ReportError(built.status());
  sd::GenerateRequest& req = *built;
  auto policy = GeneratePolicy(g, f, req);
  if (!policy.ok()) return ReportError(policy.status());
  // The startup chain: snapshot -> admit (production refuses drift, exit 4) -> factory; then the
  // pipeline loader's open (placement proof per component) -> canary over the components' ops.
  runtime::StartupReport startup;
  runtime::StartupOptions so;
  auto chain = StartCommandChain(g, *policy, &so, &startup);
  if (!chain.ok()) return ReportChainError(g, chain.status(), startup);
  const auto open0 = std::chrono::steady_clock::now();
  auto model = sd::LoadSdModel(f.model, chain->factory());
  runtime::StartupChain::RecordStep(&startup, "open", common::MsSince(open0), model.status(), true,
                                    f.model);
  if (!model.ok()) return ReportChainError(g, model.status(), startup);
  if (Status st = chain->Finish(PipelineModelFiles(f.model), so, &startup); !st.ok()) {
    return ReportChainError(g, st, startup);
  }
  const sd::SdModel& m = **model;
  if (m.degraded()) Warn("DEGRADED: " + m.degraded_reason());

  // The model hash reads every UNet file (about 0.5 s per GB): on a thread while the pipeline runs
  // (the GPU does the work then), after loading so a refused node does not pay for it. The PNGs
  // are encoded once it is known.
  std::future<common::Result<std::string>> hash = StartPipelineHash(f.model);
  req.encode_png = false;

  sd::Pipeline pipeline(m);
  Json memory;  // null when the job needed no memory check
  if (NeedsMemoryCheck(f, req)) {
    if (Status s = CheckGenerateMemory(f, pipeline, &req, &memory); !s.ok()) return ReportError(s);
    // The peak of this generation alone, not of the calibration runs before it.
    memory["peak_rss_reset"] = probe::ResetPeakRss();
  }
  // No bar under --log-format json: every stderr line must then be a JSON object.
  ProgressBar bar(!g.json && !f.no_progress && g.log_format != "json" &&
                  isatty(STDERR_FILENO) == 1);
  auto result = [&] {
    common::SigintScope sigint;
    return pipeline.Generate(
        req, [&bar](const sd::StepProgress& p) { return bar.Update(p); },
        common::SigintScope::Flag());
  }();
  if (!result.ok()) return ReportError(result.status());
  sd::GenerateOutput& out = *result;
  if (out.cancelled) {
    return ReportError(Status::Unavailable("interrupted after " + std::to_string(out.steps_done) +
                                           " steps; no image written"));
  }
  for (const std::string& w : out.warnings) Warn(w);
  if (!memory.is_null()) memory["peak_rss_bytes"] = probe::PeakRssBytes().value_or(0);
  auto model_hash = hash.get();
  if (!model_hash.ok()) return ReportError(model_hash.status());
  req.model_hash = *model_hash;
  req.model_name = PipelineName(f.model);
  req.encode_png = true;
  if (Status s = sd::DescribeAndEncode(req, &out); !s.ok()) return ReportError(s);

  // The write time is added to the PNG stage.
  const auto w0 = std::chrono::steady_clock::now();
  auto images = WriteImages(f.output, out);
  if (!images.ok()) return ReportError(images.status());
  const double write_ms = common::MsSince(w0);
  out.timings.png_ms += write_ms;
  out.timings.total_ms += write_ms;
  if (g.json) {
    PrintJson(g, f, m, req, out, *images, startup, memory);
  } else {
    PrintText(m, out, *images, startup);
  }
  return common::kExitOk;
}

}  // namespace

void RegisterSdPipelineCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate images with an ONNX Stable Diffusion pipeline (SD 1.x, 2.x, SDXL)");
  cmd->add_option("--model", f->model, "Pipeline folder (Optimum or diffusers legacy export)")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--prompt", f->prompt, "Prompt text");
  cmd->add_option("--prompt-file", f->prompt_file, "Read the prompt from FILE")->type_name("FILE");
  f->negative_option = cmd->add_option(
      "--negative", f->negative,
      "Negative prompt; \"\" is an empty one, not none (SDXL: none means zero embeddings, as in "
      "diffusers; ignored when guidance <= 1)");
  cmd->add_option("--steps", f->steps, "Denoising steps (1..1000)")->capture_default_str();
  cmd->add_option("--scheduler", f->scheduler,
                  "pndm | ddim | euler | euler_a | dpmpp_2m | dpmpp_2m_karras | lms (default: the "
                  "pipeline's scheduler_config)");
  cmd->add_option("--guidance", f->guidance,
                  "Classifier-free guidance scale (default 7.5, SDXL 5.0; <= 1 disables it)");
  cmd->add_option("--size", f->size,
                  "WIDTHxHEIGHT, each a multiple of 8 in 256..2048, e.g. 1216x832 (default: the "
                  "variant's size)");
  cmd->add_option("--batch", f->batch, "Images per prompt (1..8), image k uses seed+k")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed,
                  "Seed of the first image; image k uses seed+k: 0..4294967295 (2^32-1) with "
                  "--rng numpy, 0..2^64-1 with --rng philox")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            // CLI11 would wrap "-1" to 2^64-1 in an unsigned option: refuse the sign instead.
            return v.find('-') == std::string::npos
                       ? std::string()
                       : "found " + v + "; a seed is " + std::string(sd::kSeedRangeText);
          },
          "SEED"));
  cmd->add_option("--rng", f->rng,
                  "numpy (diffusers' ONNX pipeline: RandomState(seed).randn) | philox")
      ->capture_default_str();
  cmd->add_option("-o,--output", f->output, "Output PNG file (batch: NAME-0.png, NAME-1.png, ...)")
      ->type_name("FILE")
      ->capture_default_str();
  cmd->add_flag("--no-progress", f->no_progress, "No progress bar on stderr");
  cmd->add_flag("--no-fuse-attention", f->no_fuse_attention,
                "Run attention as exported: no rewrite into com.microsoft.MultiHeadAttention at "
                "load (the policy's session.fuse_attention: false)");
  cmd->add_option("--memory-budget", f->memory_budget,
                  "Memory the run may use (default: the cgroup limit, else MemAvailable, less a "
                  "reserve); a size that cannot fit is refused (exit 2) before it runs")
      ->envname("TRUEGREEN_MEMORY_BUDGET")
      ->type_name("SIZE");
  r.Add(cmd, [&g, f] { return RunGenerate(g, *f); });
}

}  // namespace tg::cli
