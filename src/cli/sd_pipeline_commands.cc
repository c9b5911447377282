// `truegreen generate`: text-to-image with an ONNX Stable Diffusion pipeline folder, through the
// runtime layer's policy (production by default: no GPU path → exit 3 with the cause; `--policy
// dev` runs on the CPU and says it is degraded). Results (paths, seeds, timings) on stdout, text or
// --json; a progress bar on stderr when stderr is a terminal.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/command_areas.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/status.h"
#include "runtime/runtime_policy.h"
#include "runtime/session.h"
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
  int steps = 50;
  std::string scheduler;
  std::optional<double> guidance;  // unset: the variant's default (no sentinel value)
  std::string size;                // "WxH"; empty: the variant's default
  int batch = 1;
  std::uint64_t seed = 0;
  std::string rng = "numpy";
  std::string output = "out.png";
  bool no_progress = false;
};

std::atomic<bool> g_interrupted{false};
extern "C" void OnSigint(int) { g_interrupted.store(true); }

int Fail(const GlobalOptions& g, const Status& s) {
  const int code = common::ExitCodeFromStatus(s);
  if (g.json) {
    Json j = {{"ok", false},
              {"error",
               {{"code", std::string(common::StatusCodeName(s.code()))}, {"message", s.message()}}},
              {"exit_code", code}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  std::fprintf(stderr, "truegreen generate: %s\n", s.message().c_str());
  return code;
}

common::Status ParseSize(const std::string& text, int* w, int* h) {
  const auto x = text.find_first_of("xX");
  auto bad = [&] {
    return Status::InvalidArg("--size '" + text + "' is not WIDTHxHEIGHT (e.g. 512x512)");
  };
  if (x == std::string::npos || x == 0 || x + 1 >= text.size() || text.size() > 11) return bad();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i != x && (text[i] < '0' || text[i] > '9')) return bad();
  }
  *w = std::stoi(text.substr(0, x));
  *h = std::stoi(text.substr(x + 1));
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
    return !g_interrupted.load();
  }

 private:
  bool enabled_;
};

int RunGenerate(const GlobalOptions& g, const GenerateFlags& f) {
  sd::GenerateRequest req;
  // Input checks that need no model come first: a usage error is reported as one (exit 2) even
  // where the production policy would refuse the node.
  if (!f.prompt_file.empty()) {
    if (!f.prompt.empty()) {
      return Fail(g, Status::InvalidArg("give either --prompt or --prompt-file, not both"));
    }
    auto text = common::ReadFileLimited(f.prompt_file, sd::kMaxPromptBytes);
    if (!text.ok()) return Fail(g, text.status().WithPrefix("--prompt-file"));
    req.prompt = *text;
    while (!req.prompt.empty() && (req.prompt.back() == '\n' || req.prompt.back() == '\r')) {
      req.prompt.pop_back();
    }
  } else {
    req.prompt = f.prompt;
  }
  req.negative_prompt = f.negative;
  req.steps = f.steps;
  req.scheduler = f.scheduler;
  req.guidance = f.guidance;  // any given value is range-checked (NaN, < 0 rejected)
  if (!f.size.empty()) {
    if (Status s = ParseSize(f.size, &req.width, &req.height); !s.ok()) return Fail(g, s);
  }
  req.batch = f.batch;
  req.seed = f.seed;
  auto mode = sd::ParseRngMode(f.rng);
  if (!mode.ok()) return Fail(g, mode.status().WithPrefix("--rng"));
  req.rng = *mode;
  if (Status s = sd::ValidateRequestBasics(req); !s.ok()) return Fail(g, s);
  // The output is checked before any work: a device, a FIFO, a directory or a missing folder is
  // refused now, not after the last denoising step.
  for (int k = 0; k < req.batch; ++k) {
    if (Status s = common::CheckOutputPath(ImagePath(f.output, k, req.batch)); !s.ok()) {
      return Fail(g, s.WithPrefix("-o"));
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(f.model, ec)) {
    return Fail(
        g, Status::NotFound("--model: Stable Diffusion pipeline folder not found: " + f.model));
  }

  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return Fail(g, policy.status().WithPrefix("--policy"));
  auto factory = runtime::SessionFactory::Create(*policy, g.Loader());
  if (!factory.ok()) return Fail(g, factory.status());
  auto model = sd::LoadSdModel(f.model, *factory);
  if (!model.ok()) return Fail(g, model.status());
  const sd::SdModel& m = **model;
  if (m.degraded()) {
    std::fprintf(stderr, "truegreen generate: DEGRADED: %s\n", m.degraded_reason().c_str());
  }

  sd::Pipeline pipeline(m);
  ProgressBar bar(!g.json && !f.no_progress && isatty(STDERR_FILENO) == 1);
  g_interrupted.store(false);
  auto previous = std::signal(SIGINT, OnSigint);
  auto result = pipeline.Generate(
      req, [&bar](const sd::StepProgress& p) { return bar.Update(p); }, &g_interrupted);
  std::signal(SIGINT, previous);
  if (!result.ok()) return Fail(g, result.status());
  sd::GenerateOutput& out = *result;
  if (out.cancelled) {
    return Fail(g, Status::Unavailable("interrupted after " + std::to_string(out.steps_done) +
                                       " steps; no image written"));
  }

  // Write the images (encoded by the pipeline; the write time is added to the PNG stage).
  const auto w0 = std::chrono::steady_clock::now();
  Json images = Json::array();
  const int batch = static_cast<int>(out.images.size());
  for (int k = 0; k < batch; ++k) {
    const std::string path = ImagePath(f.output, k, batch);
    if (Status s = common::WriteFileAtomic(path, out.images[k].png); !s.ok()) return Fail(g, s);
    images.push_back(
        {{"path", path},
         {"seed", out.images[k].seed},
         {"width", out.width},
         {"height", out.height},
         {"bytes", out.images[k].png.size()},
         {"sha256", common::Sha256Hex(out.images[k].png.data(), out.images[k].png.size())}});
  }
  auto& tm = out.timings;
  const double write_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
  tm.png_ms += write_ms;
  tm.total_ms += write_ms;

  const int calls = static_cast<int>(tm.unet_ms.size());
  if (g.json) {
    Json j = {
        {"ok", true},
        {"model", f.model},
        {"variant", std::string(sd::SdVariantName(m.variant))},
        {"export", std::string(sd::ExportStyleName(m.style))},
        {"pipeline_class", m.pipeline_class},
        {"precision", m.fp16 ? "fp16" : "fp32"},
        {"prediction_type",
         std::string(sd::PredictionTypeName(m.scheduler_config.prediction_type))},
        {"vae_scaling_factor", m.vae.scaling_factor},
        {"scheduler", out.scheduler},
        {"steps", req.steps},
        {"unet_calls", calls},
        {"guidance", out.guidance},
        {"width", out.width},
        {"height", out.height},
        {"batch", batch},
        {"rng", f.rng},
        {"policy", g.policy},
        {"degraded", m.degraded()},
        {"degraded_reason", m.degraded_reason()},
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
    };
    std::printf("%s\n", j.dump(2).c_str());
    return common::kExitOk;
  }
  std::printf(
      "generated %d image%s %dx%d: %s pipeline (%s export, %s), scheduler %s, %d UNet "
      "calls, guidance %.2f%s\n",
      batch, batch == 1 ? "" : "s", out.width, out.height,
      std::string(sd::SdVariantName(m.variant)).c_str(),
      std::string(sd::ExportStyleName(m.style)).c_str(), m.fp16 ? "fp16" : "fp32",
      out.scheduler.c_str(), calls, out.guidance, m.degraded() ? " [DEGRADED: CPU]" : "");
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
  cmd->add_option("--negative", f->negative, "Negative prompt");
  cmd->add_option("--steps", f->steps, "Denoising steps (1..1000)")->capture_default_str();
  cmd->add_option("--scheduler", f->scheduler,
                  "pndm | ddim | euler | euler_a | dpmpp_2m | dpmpp_2m_karras | lms (default: the "
                  "pipeline's scheduler_config)");
  cmd->add_option("--guidance", f->guidance,
                  "Classifier-free guidance scale (default 7.5, SDXL 5.0; <= 1 disables it)");
  cmd->add_option("--size", f->size,
                  "WIDTHxHEIGHT, multiples of 8 in 256..1024 (default: the variant's size)");
  cmd->add_option("--batch", f->batch, "Images per prompt (1..8), image k uses seed+k")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the first image (0..2^64-1)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            // CLI11 would wrap "-1" to 2^64-1 in an unsigned option: refuse the sign instead.
            return v.find('-') == std::string::npos ? std::string()
                                                    : "a seed is 0..2^64-1, found " + v;
          },
          "SEED"));
  cmd->add_option("--rng", f->rng,
                  "numpy (diffusers' ONNX pipeline: RandomState(seed).randn) | philox")
      ->capture_default_str();
  cmd->add_option("-o,--output", f->output, "Output PNG (batch: NAME-0.png, NAME-1.png, ...)")
      ->capture_default_str();
  cmd->add_flag("--no-progress", f->no_progress, "No progress bar on stderr");
  r.Add(cmd, [&g, f] { return RunGenerate(g, *f); });
}

}  // namespace tg::cli
