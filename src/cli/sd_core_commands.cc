// `truegreen tokenize` and `truegreen schedule`: diagnostics for the Stable Diffusion text
// tokenizer and the diffusion schedulers (what ids a prompt becomes; which timesteps and sigmas a
// scheduler config produces — the first thing to check when an exported model and a scheduler
// disagree). Results on stdout (text or --json), errors on stderr with the exit code of the Status.
// A text longer than the sequence length is truncated as the text encoder sees it, with a warning
// on stderr (and `dropped_tokens` in --json) saying how many tokens were dropped.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command_areas.h"
#include "cli/output.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/status.h"
#include "sd/scheduler.h"
#include "sd/tokenizer.h"

namespace tg::cli {
namespace {

using common::Status;

struct TokenizeOptions {
  std::string dir;
  std::vector<std::string> texts;
  int max_length = 0;  // 0 → the tokenizer's model_max_length
  bool unpadded = false;
  bool show_tokens = false;
};

struct ScheduleOptions {
  std::string config;
  std::string scheduler = "default";
  int steps = 50;
};

int RunTokenize(const TokenizeOptions& o, const GlobalOptions& g) {
  auto tok = sd::ClipTokenizer::Load(o.dir);
  if (!tok.ok()) return ReportError(tok.status());
  const int max_len = o.max_length > 0 ? o.max_length : tok->model_max_length();
  nlohmann::json results = nlohmann::json::array();
  std::string text_out;
  for (const std::string& text : o.texts) {
    auto ids = o.unpadded ? tok->EncodeUnpadded(text, max_len) : tok->Encode(text, max_len);
    if (!ids.ok()) return ReportError(ids.status());
    const std::size_t dropped = tok->DroppedTokens(text, max_len);
    if (dropped > 0) {
      spdlog::warn("tokenize: text {} is longer than {} tokens: the last {}{} token{} were dropped",
                   results.size() + 1, max_len,
                   dropped >= sd::ClipTokenizer::kDroppedTokensCap ? "(at least) " : "", dropped,
                   dropped == 1 ? "" : "s");
    }
    nlohmann::json r;
    r["text"] = text;
    r["ids"] = *ids;
    r["dropped_tokens"] = dropped;
    if (o.show_tokens) {
      std::vector<std::string> toks;
      for (auto id : *ids) toks.emplace_back(tok->IdToToken(id));
      r["tokens"] = toks;
    }
    results.push_back(std::move(r));
    for (std::size_t i = 0; i < ids->size(); ++i) {
      text_out += (i ? " " : "") + std::to_string((*ids)[i]);
    }
    text_out += "\n";
    if (o.show_tokens) {
      for (std::size_t i = 0; i < ids->size(); ++i) {
        text_out += (i ? " " : "") + std::string(tok->IdToToken((*ids)[i]));
      }
      text_out += "\n";
    }
  }
  if (g.json) {
    nlohmann::json out;
    out["tokenizer"] = o.dir;
    out["max_length"] = max_len;
    out["bos_id"] = tok->bos_id();
    out["eos_id"] = tok->eos_id();
    out["pad_id"] = tok->pad_id();
    out["vocab_size"] = tok->vocab_size();
    out["padded"] = !o.unpadded;
    out["results"] = std::move(results);
    // Invalid UTF-8 in a prompt must not abort the dump: replace it.
    std::printf("%s\n", common::WriteJson(out, 2).c_str());
  } else {
    std::fputs(text_out.c_str(), stdout);
  }
  return common::kExitOk;
}

int RunSchedule(const ScheduleOptions& o, const GlobalOptions& g) {
  auto cfg = sd::LoadSchedulerConfig(o.config);
  if (!cfg.ok()) return ReportError(cfg.status());
  auto sched = sd::CreateScheduler(o.scheduler, *cfg);
  if (!sched.ok()) {
    const Status& s = sched.status();
    return ReportError(s.message().starts_with("unknown scheduler") ? s.WithPrefix("--scheduler")
                                                                    : s);
  }
  sd::Scheduler& s = **sched;
  Status st = s.SetTimesteps(o.steps);
  if (!st.ok()) return ReportError(st);
  std::vector<double> scales;
  for (int i = 0; i < s.num_steps(); ++i) scales.push_back(s.ModelInputScale(i));
  if (g.json) {
    nlohmann::json out;
    out["config"] = o.config;
    out["scheduler"] = s.name();
    out["class_name"] = cfg->class_name;
    out["steps"] = o.steps;
    out["unet_calls"] = s.num_steps();
    out["timestep_spacing"] = sd::TimestepSpacingName(s.timestep_spacing());
    out["prediction_type"] = sd::PredictionTypeName(s.prediction_type());
    out["beta_schedule"] = sd::BetaScheduleName(cfg->beta_schedule);
    out["init_noise_sigma"] = s.init_noise_sigma();
    out["timesteps"] = s.timesteps();
    out["sigmas"] = s.sigmas();
    out["model_input_scales"] = scales;
    std::printf("%s\n", common::WriteJson(out, 2).c_str());
    return common::kExitOk;
  }
  std::printf("scheduler:         %s (%s)\n", std::string(s.name()).c_str(), o.config.c_str());
  std::printf("steps:             %d (%d UNet calls)\n", o.steps, s.num_steps());
  std::printf("timestep_spacing:  %s\n",
              std::string(sd::TimestepSpacingName(s.timestep_spacing())).c_str());
  std::printf("prediction_type:   %s\n",
              std::string(sd::PredictionTypeName(s.prediction_type())).c_str());
  std::printf("init_noise_sigma:  %.9g\n", s.init_noise_sigma());
  std::printf("%5s %14s %14s %14s\n", "step", "timestep", "sigma", "input_scale");
  for (int i = 0; i < s.num_steps(); ++i) {
    std::printf("%5d %14.6f %14.8g %14.8g\n", i, s.timesteps()[i], s.sigmas()[i], scales[i]);
  }
  if (s.sigmas().size() > s.timesteps().size()) {
    std::printf("final sigma: %.9g\n", s.sigmas().back());
  }
  return common::kExitOk;
}

}  // namespace

void RegisterSdCoreCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto tok_opts = std::make_shared<TokenizeOptions>();
  CLI::App* tok = app.add_subcommand("tokenize", "Print the CLIP token ids of one or more prompts");
  tok->add_option("--tokenizer", tok_opts->dir,
                  "Tokenizer folder (vocab.json, merges.txt, tokenizer_config.json)")
      ->required()
      ->type_name("DIR");
  tok->add_option("text", tok_opts->texts, "Prompt(s) to tokenize")->required();
  tok->add_option("--max-length", tok_opts->max_length,
                  "Sequence length (default: the tokenizer's model_max_length, 77)")
      ->check(CLI::Range(2, 4096));
  tok->add_flag("--unpadded", tok_opts->unpadded, "Do not pad to the sequence length");
  tok->add_flag("--tokens", tok_opts->show_tokens, "Also print the token strings");
  r.Add(tok, [tok_opts, &g] { return RunTokenize(*tok_opts, g); });

  auto sch_opts = std::make_shared<ScheduleOptions>();
  CLI::App* sch = app.add_subcommand(
      "schedule", "Print a scheduler's timesteps, sigmas and init noise sigma for a config");
  sch->add_option("--config", sch_opts->config, "scheduler_config.json")
      ->required()
      ->type_name("FILE");
  sch->add_option("--scheduler", sch_opts->scheduler,
                  "pndm | ddim | euler | euler_a | dpmpp_2m | dpmpp_2m_karras | lms | default "
                  "(the config's _class_name)");
  sch->add_option("--steps", sch_opts->steps, "Number of inference steps (default 50)");
  r.Add(sch, [sch_opts, &g] { return RunSchedule(*sch_opts, g); });
}

}  // namespace tg::cli
