// Pipeline folder loading. Everything about tensor names/dtypes/ranks is read back from the
// sessions because real exports disagree (legacy vs. Optimum, Optimum version to version).
#include "sd/model_loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>

#include "common/config.h"
#include "common/file_util.h"
#include "common/log.h"
#include "sd/config_lines.h"

namespace tg::sd {
namespace {

namespace fs = std::filesystem;
using common::Json;
using common::Result;
using common::Status;
using runtime::DataType;
using runtime::TensorInfo;

Status RequireDir(const std::string& dir, const std::string& rel, const std::string& what) {
  std::error_code ec;
  const fs::path p = fs::path(dir) / rel;
  if (!fs::is_directory(p, ec)) {
    return Status::NotFound("Stable Diffusion pipeline " + dir + ": folder " + rel + "/ (" + what +
                            ") is missing");
  }
  return Status::Ok();
}

Status RequireFile(const std::string& dir, const std::string& rel) {
  std::error_code ec;
  const fs::path p = fs::path(dir) / rel;
  if (!fs::exists(fs::symlink_status(p, ec))) {
    return Status::NotFound("Stable Diffusion pipeline " + dir + ": file " + rel + " is missing");
  }
  // There but not a regular file (a FIFO, a directory, a dangling link): say what it is.
  return common::CheckInputPath(p.string(), "Stable Diffusion pipeline " + dir + ": file " + rel);
}

const TensorInfo* FindTensor(const std::vector<TensorInfo>& list, std::string_view name) {
  for (const auto& t : list) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string NameList(const std::vector<TensorInfo>& list) {
  std::string s;
  for (const auto& t : list) {
    if (!s.empty()) s += ", ";
    s += t.name + " " + std::string(runtime::DataTypeName(t.dtype)) +
         runtime::ShapeToString(t.shape);
  }
  return s.empty() ? "(none)" : s;
}

Result<const TensorInfo*> RequireTensor(const std::vector<TensorInfo>& list, std::string_view name,
                                        const std::string& model, const char* kind) {
  const TensorInfo* t = FindTensor(list, name);
  if (t == nullptr) {
    return Status::InvalidArg(model + ": required " + kind + " '" + std::string(name) +
                              "' not found; the model has " + NameList(list));
  }
  return t;
}

bool IsFloat(DataType d) { return d == DataType::kFloat32 || d == DataType::kFloat16; }

Status RequireFloat(const TensorInfo& t, const std::string& model) {
  if (!IsFloat(t.dtype)) {
    return Status::Unsupported(model + ": tensor '" + t.name + "' has dtype " +
                               std::string(runtime::DataTypeName(t.dtype)) +
                               "; float32 or float16 is required");
  }
  return Status::Ok();
}

Status RequireRank(const TensorInfo& t, std::size_t rank, const std::string& model) {
  if (t.shape.size() != rank) {
    return Status::InvalidArg(model + ": tensor '" + t.name + "' has shape " +
                              runtime::ShapeToString(t.shape) + " (rank " +
                              std::to_string(t.shape.size()) + "); rank " + std::to_string(rank) +
                              " is required");
  }
  return Status::Ok();
}

// Opens one model through the factory; its error names the component's file. The runtime maps
// ORT's refusal of a corrupt or truncated model to INVALID_ARG (exit 2) and policy refusals to
// UNAVAILABLE (exit 3); both pass through unchanged.
Result<runtime::Session> OpenModel(const runtime::SessionFactory& factory, const std::string& dir,
                                   const std::string& rel) {
  TG_RETURN_IF_ERROR(RequireFile(dir, rel));
  const std::string path = (fs::path(dir) / rel).string();
  auto session = factory.Open(path);
  if (!session.ok()) return session.status().WithPrefix(rel);
  return std::move(session).value();
}

Result<TextEncoderPart> LoadTextEncoder(const runtime::SessionFactory& factory,
                                        const std::string& dir, const std::string& folder,
                                        bool sdxl, bool second) {
  TextEncoderPart p;
  const std::string rel = folder + "/model.onnx";
  p.model_path = (fs::path(dir) / rel).string();
  TG_ASSIGN_OR_RETURN(p.session, OpenModel(factory, dir, rel));
  const auto& ins = p.session.inputs();
  const auto& outs = p.session.outputs();
  TG_ASSIGN_OR_RETURN(const TensorInfo* ids, RequireTensor(ins, "input_ids", rel, "input"));
  if (ids->dtype != DataType::kInt32 && ids->dtype != DataType::kInt64) {
    return Status::Unsupported(rel + ": input_ids has dtype " +
                               std::string(runtime::DataTypeName(ids->dtype)) +
                               "; int32 or int64 is required");
  }
  TG_RETURN_IF_ERROR(RequireRank(*ids, 2, rel));
  if (ids->shape[1] > 0 && ids->shape[1] != ClipTokenizer::kDefaultMaxLength) {
    return Status::InvalidArg(rel + ": input_ids has shape " + runtime::ShapeToString(ids->shape) +
                              "; sequence length 77 is required");
  }
  p.ids_name = ids->name;
  p.ids_dtype = ids->dtype;
  p.ids_fixed_batch = ids->shape[0];

  if (sdxl) {
    // SDXL conditions on the penultimate hidden state of each encoder (hidden_states[-2]).
    int last = -1;
    for (const auto& o : outs) {
      if (o.name.rfind("hidden_states.", 0) == 0) {
        try {
          last = std::max(last, std::stoi(o.name.substr(14)));
        } catch (const std::exception&) {
        }
      }
    }
    if (last < 1) {
      return Status::InvalidArg(rel + ": an SDXL text encoder must output hidden_states.0.." +
                                "hidden_states.N (N >= 1) for the penultimate layer; it has " +
                                NameList(outs));
    }
    p.hidden_name = "hidden_states." + std::to_string(last - 1);
  } else {
    p.hidden_name = "last_hidden_state";
  }
  TG_ASSIGN_OR_RETURN(const TensorInfo* hidden, RequireTensor(outs, p.hidden_name, rel, "output"));
  TG_RETURN_IF_ERROR(RequireFloat(*hidden, rel));
  TG_RETURN_IF_ERROR(RequireRank(*hidden, 3, rel));
  p.hidden_size = hidden->shape[2];
  if (second) {
    TG_ASSIGN_OR_RETURN(const TensorInfo* pooled,
                        RequireTensor(outs, "text_embeds", rel, "output"));
    TG_RETURN_IF_ERROR(RequireFloat(*pooled, rel));
    TG_RETURN_IF_ERROR(RequireRank(*pooled, 2, rel));
    p.pooled_name = pooled->name;
    p.pooled_size = pooled->shape[1];
  }
  return p;
}

Result<UnetPart> LoadUnet(const runtime::SessionFactory& factory, const std::string& dir) {
  UnetPart p;
  const std::string rel = "unet/model.onnx";
  p.model_path = (fs::path(dir) / rel).string();
  TG_ASSIGN_OR_RETURN(p.session, OpenModel(factory, dir, rel));
  const auto& ins = p.session.inputs();
  const auto& outs = p.session.outputs();

  TG_ASSIGN_OR_RETURN(const TensorInfo* sample, RequireTensor(ins, "sample", rel, "input"));
  TG_RETURN_IF_ERROR(RequireFloat(*sample, rel));
  TG_RETURN_IF_ERROR(RequireRank(*sample, 4, rel));
  if (sample->shape[1] > 0 && sample->shape[1] != 4) {
    return Status::InvalidArg(rel + ": sample has shape " + runtime::ShapeToString(sample->shape) +
                              "; 4 latent channels are required");
  }
  p.sample_name = sample->name;
  p.sample_dtype = sample->dtype;
  p.sample_shape = sample->shape;

  TG_ASSIGN_OR_RETURN(const TensorInfo* ts, RequireTensor(ins, "timestep", rel, "input"));
  if (ts->dtype != DataType::kFloat32 && ts->dtype != DataType::kFloat16 &&
      ts->dtype != DataType::kInt64 && ts->dtype != DataType::kInt32 &&
      ts->dtype != DataType::kFloat64) {
    return Status::Unsupported(rel + ": timestep has dtype " +
                               std::string(runtime::DataTypeName(ts->dtype)) +
                               "; float32, float16, float64, int32 or int64 is required");
  }
  p.timestep_name = ts->name;
  p.timestep_dtype = ts->dtype;
  if (ts->shape.empty()) {
    p.timestep_layout = TimestepLayout::kScalar;
  } else if (ts->shape.size() == 1) {
    p.timestep_layout = ts->shape[0] == 1 ? TimestepLayout::kSingle : TimestepLayout::kBatched;
  } else {
    return Status::InvalidArg(rel + ": timestep has shape " + runtime::ShapeToString(ts->shape) +
                              "; rank 0, [1] or [batch] is required");
  }

  TG_ASSIGN_OR_RETURN(const TensorInfo* ctx,
                      RequireTensor(ins, "encoder_hidden_states", rel, "input"));
  TG_RETURN_IF_ERROR(RequireFloat(*ctx, rel));
  TG_RETURN_IF_ERROR(RequireRank(*ctx, 3, rel));
  p.context_name = ctx->name;
  p.context_dtype = ctx->dtype;
  p.context_size = ctx->shape[2];

  if (const TensorInfo* te = FindTensor(ins, "text_embeds")) {
    TG_RETURN_IF_ERROR(RequireFloat(*te, rel));
    TG_RETURN_IF_ERROR(RequireRank(*te, 2, rel));
    p.text_embeds_name = te->name;
    p.text_embeds_dtype = te->dtype;
    p.text_embeds_size = te->shape[1];
    TG_ASSIGN_OR_RETURN(const TensorInfo* ti, RequireTensor(ins, "time_ids", rel, "input"));
    TG_RETURN_IF_ERROR(RequireFloat(*ti, rel));
    TG_RETURN_IF_ERROR(RequireRank(*ti, 2, rel));
    if (ti->shape[1] > 0 && ti->shape[1] != 6) {
      return Status::InvalidArg(rel + ": time_ids has shape " + runtime::ShapeToString(ti->shape) +
                                "; [batch,6] is required");
    }
    p.time_ids_name = ti->name;
    p.time_ids_dtype = ti->dtype;
  }
  if (outs.size() != 1 && FindTensor(outs, "out_sample") == nullptr) {
    return Status::InvalidArg(rel + ": expected one output (out_sample); the model has " +
                              NameList(outs));
  }
  const TensorInfo* out = FindTensor(outs, "out_sample");
  if (out == nullptr) out = &outs[0];
  TG_RETURN_IF_ERROR(RequireFloat(*out, rel));
  TG_RETURN_IF_ERROR(RequireRank(*out, 4, rel));
  p.output_name = out->name;
  return p;
}

Result<VaeDecoderPart> LoadVae(const runtime::SessionFactory& factory, const std::string& dir) {
  VaeDecoderPart p;
  const std::string rel = "vae_decoder/model.onnx";
  p.model_path = (fs::path(dir) / rel).string();
  TG_ASSIGN_OR_RETURN(p.session, OpenModel(factory, dir, rel));
  TG_ASSIGN_OR_RETURN(const TensorInfo* lat,
                      RequireTensor(p.session.inputs(), "latent_sample", rel, "input"));
  TG_RETURN_IF_ERROR(RequireFloat(*lat, rel));
  TG_RETURN_IF_ERROR(RequireRank(*lat, 4, rel));
  if (lat->shape[1] > 0 && lat->shape[1] != 4) {
    return Status::InvalidArg(rel + ": latent_sample has shape " +
                              runtime::ShapeToString(lat->shape) +
                              "; 4 latent channels are required");
  }
  p.latent_name = lat->name;
  p.latent_dtype = lat->dtype;
  const auto& outs = p.session.outputs();
  const TensorInfo* out = FindTensor(outs, "sample");
  if (out == nullptr && outs.size() == 1) out = &outs[0];
  if (out == nullptr) {
    return Status::InvalidArg(rel + ": output 'sample' not found; the model has " + NameList(outs));
  }
  TG_RETURN_IF_ERROR(RequireFloat(*out, rel));
  TG_RETURN_IF_ERROR(RequireRank(*out, 4, rel));
  if (out->shape[1] > 0 && out->shape[1] != 3) {
    return Status::InvalidArg(rel + ": output " + out->name + " has shape " +
                              runtime::ShapeToString(out->shape) + "; 3 channels (RGB) required");
  }
  p.output_name = out->name;
  return p;
}

Status ShapeMismatch(const std::string& what_a, std::int64_t a, const std::string& what_b,
                     std::int64_t b) {
  return Status::InvalidArg("mismatched shapes: " + what_a + " is " + std::to_string(a) + " but " +
                            what_b + " is " + std::to_string(b));
}

}  // namespace

std::string_view SdVariantName(SdVariant v) {
  switch (v) {
    case SdVariant::kSd1:
      return "sd1";
    case SdVariant::kSd2:
      return "sd2";
    case SdVariant::kSdxl:
      return "sdxl";
  }
  return "unknown";
}

std::string_view ExportStyleName(ExportStyle s) {
  return s == ExportStyle::kLegacy ? "legacy" : "optimum";
}

bool SdModel::degraded() const {
  for (const auto* r : reports()) {
    if (r->degraded) return true;
  }
  return false;
}

std::string SdModel::degraded_reason() const {
  for (const auto* r : reports()) {
    if (r->degraded) return r->degraded_reason;
  }
  return "";
}

std::vector<const runtime::SessionReport*> SdModel::reports() const {
  std::vector<const runtime::SessionReport*> r{&text_encoder.session.report()};
  if (text_encoder_2) r.push_back(&text_encoder_2->session.report());
  r.push_back(&unet.session.report());
  r.push_back(&vae.session.report());
  return r;
}

namespace {

// Reads model_index.json: the pipeline class (legacy export: OnnxStableDiffusionPipeline) and a
// type check of force_zeros_for_empty_prompt. Returns the parsed index for later defaults.
Result<Json> ReadModelIndex(const std::string& dir, SdModel* m) {
  TG_RETURN_IF_ERROR(RequireFile(dir, "model_index.json"));
  TG_ASSIGN_OR_RETURN(Json index,
                      common::LoadJsonFile((fs::path(dir) / "model_index.json").string(),
                                           kMaxComponentConfigBytes));
  if (!index.is_object()) {
    return Status::InvalidArg(dir + "/model_index.json: a JSON object is required");
  }
  const std::string index_path = (fs::path(dir) / "model_index.json").string();
  if (auto it = index.find("_class_name"); it != index.end()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      return Status::InvalidArg(index_path + ": field '_class_name': found " +
                                std::string(it->is_string() ? "an empty string" : it->type_name()) +
                                ", required the pipeline class name");
    }
    m->pipeline_class = it->get<std::string>();
  }
  if (auto it = index.find("force_zeros_for_empty_prompt");
      it != index.end() && !it->is_boolean() && !it->is_null()) {
    return Status::InvalidArg(index_path + ": field 'force_zeros_for_empty_prompt': found " +
                              std::string(it->type_name()) + ", required true or false");
  }
  return index;
}

// A size field of a component config (diffusers' UNet2DConditionModel and AutoencoderKL,
// transformers' CLIPTextConfig) and the range any real export stays within. `list`: the field may
// also be a list of such integers (attention_head_dim: 8 or [5, 10, 20]).
struct ConfigField {
  const char* name;
  std::int64_t lo, hi;
  bool list;
};

constexpr ConfigField kUnetFields[] = {
    {"sample_size", 1, 512, false},
    {"in_channels", 1, 16, false},
    {"out_channels", 1, 16, false},
    {"cross_attention_dim", 1, 8192, true},
    {"attention_head_dim", 1, 1024, true},
    {"num_attention_heads", 1, 1024, true},
    {"layers_per_block", 1, 16, true},
    {"norm_num_groups", 1, 1024, false},
    {"block_out_channels", 1, 16384, true},
    {"transformer_layers_per_block", 1, 64, true},
    {"addition_time_embed_dim", 1, 8192, false},
    {"projection_class_embeddings_input_dim", 1, 1048576, false},
};
constexpr ConfigField kTextEncoderFields[] = {
    {"hidden_size", 1, 16384, false},
    {"intermediate_size", 1, 65536, false},
    {"num_attention_heads", 1, 1024, false},
    {"num_hidden_layers", 1, 256, false},
    {"max_position_embeddings", 1, 4096, false},
    {"vocab_size", 1, 1048576, false},
    {"projection_dim", 1, 16384, false},
};
constexpr ConfigField kVaeFields[] = {
    {"sample_size", 1, 4096, false},        {"in_channels", 1, 16, false},
    {"out_channels", 1, 16, false},         {"latent_channels", 1, 64, false},
    {"layers_per_block", 1, 16, false},     {"norm_num_groups", 1, 1024, false},
    {"block_out_channels", 1, 16384, true},
};

// Empty when `v` is an integer in the field's range (null: unset), else what was found.
std::string CheckConfigValue(const Json& v, const ConfigField& f) {
  if (v.is_null()) return "";
  const bool integral =
      v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                v.get<double>() == std::floor(v.get<double>()));
  if (!v.is_number() || !integral) return v.is_number() ? v.dump() : std::string(v.type_name());
  const double d = v.get<double>();
  if (d < static_cast<double>(f.lo) || d > static_cast<double>(f.hi)) return v.dump();
  return "";
}

Status CheckConfigFields(const std::string& file, const std::string& text, const Json& c,
                         std::span<const ConfigField> fs) {
  for (const ConfigField& f : fs) {
    auto it = c.find(f.name);
    if (it == c.end()) continue;
    const std::string want = "required an integer " + std::to_string(f.lo) + ".." +
                             std::to_string(f.hi) + (f.list ? " (or a list of them)" : "");
    auto fail = [&](const std::string& field, const std::string& found) {
      return WithFieldLine(
          Status::InvalidArg(file + ": field '" + field + "': found " + found + ", " + want), file,
          text);
    };
    if (f.list && it->is_array()) {
      if (it->empty() || it->size() > 64) {
        return fail(f.name, "a list of " + std::to_string(it->size()) + " elements (1..64)");
      }
      for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string found = CheckConfigValue((*it)[i], f);
        if (!found.empty() || (*it)[i].is_null()) {
          return fail(std::string(f.name) + "[" + std::to_string(i) + "]",
                      found.empty() ? "null" : found);
        }
      }
      continue;
    }
    const std::string found = CheckConfigValue(*it, f);
    if (!found.empty()) return fail(f.name, found);
  }
  return Status::Ok();
}

// Component config.json files are optional, but one that is present must be a JSON object whose
// size fields hold up: a malformed file is reported, not skipped, before any model is opened.
Status CheckComponentConfigs(const std::string& dir) {
  std::error_code ec;
  for (const char* part : {"unet", "text_encoder", "text_encoder_2", "vae_decoder"}) {
    const fs::path cfg = fs::path(dir) / part / "config.json";
    if (!fs::exists(fs::symlink_status(cfg, ec))) continue;
    TG_ASSIGN_OR_RETURN(std::string text,
                        common::ReadFileLimited(cfg.string(), kMaxComponentConfigBytes));
    TG_ASSIGN_OR_RETURN(Json c, common::ParseJson(text, cfg.string()));
    if (!c.is_object()) {
      return Status::InvalidArg(cfg.string() + ": found " + std::string(c.type_name()) +
                                ", required a JSON object");
    }
    const std::string_view p = part;
    using Fields = std::span<const ConfigField>;
    const Fields fields = p == "unet"          ? Fields(kUnetFields)
                          : p == "vae_decoder" ? Fields(kVaeFields)
                                               : Fields(kTextEncoderFields);
    TG_RETURN_IF_ERROR(CheckConfigFields(cfg.string(), text, c, fields));
  }
  return Status::Ok();
}

// Check the layout before opening anything so a missing part is named, not an ORT error.
Status CheckPipelineLayout(const std::string& dir) {
  TG_RETURN_IF_ERROR(RequireDir(dir, "text_encoder", "CLIP text encoder"));
  TG_RETURN_IF_ERROR(RequireDir(dir, "unet", "denoising UNet"));
  TG_RETURN_IF_ERROR(RequireDir(dir, "vae_decoder", "VAE decoder"));
  TG_RETURN_IF_ERROR(RequireDir(dir, "tokenizer", "CLIP tokenizer"));
  TG_RETURN_IF_ERROR(RequireDir(dir, "scheduler", "scheduler config"));
  TG_RETURN_IF_ERROR(RequireFile(dir, "scheduler/scheduler_config.json"));
  for (const char* f : {"text_encoder/model.onnx", "unet/model.onnx", "vae_decoder/model.onnx",
                        "tokenizer/vocab.json", "tokenizer/merges.txt"}) {
    TG_RETURN_IF_ERROR(RequireFile(dir, f));
  }
  return Status::Ok();
}

// SDXL: loads tokenizer_2 and text_encoder_2, widens *context by its hidden size (-1 when either
// width is unknown) and checks its pooled width against the UNet's text_embeds.
Status LoadSdxlSecondEncoder(const runtime::SessionFactory& factory, const std::string& dir,
                             SdModel* m, std::int64_t* context) {
  TG_ASSIGN_OR_RETURN(ClipTokenizer tok2,
                      ClipTokenizer::Load((fs::path(dir) / "tokenizer_2").string()));
  m->tokenizer_2.emplace(std::move(tok2));
  TG_ASSIGN_OR_RETURN(TextEncoderPart te2,
                      LoadTextEncoder(factory, dir, "text_encoder_2", true, true));
  m->text_encoder_2.emplace(std::move(te2));
  if (*context > 0 && m->text_encoder_2->hidden_size > 0) {
    *context += m->text_encoder_2->hidden_size;
  } else {
    *context = -1;
  }
  if (m->text_encoder_2->pooled_size > 0 && m->unet.text_embeds_size > 0 &&
      m->text_encoder_2->pooled_size != m->unet.text_embeds_size) {
    return ShapeMismatch("text_encoder_2/model.onnx output text_embeds width",
                         m->text_encoder_2->pooled_size, "unet/model.onnx input text_embeds width",
                         m->unet.text_embeds_size);
  }
  return Status::Ok();
}

// Loads the text encoder(s) after the UNet and checks that their hidden width matches the UNet's
// encoder_hidden_states. Returns the text-side context width (-1 when unknown).
Result<std::int64_t> LoadTextEncoders(const runtime::SessionFactory& factory,
                                      const std::string& dir, bool sdxl, SdModel* m) {
  TG_ASSIGN_OR_RETURN(m->text_encoder, LoadTextEncoder(factory, dir, "text_encoder", sdxl, false));
  std::int64_t context = m->text_encoder.hidden_size;
  if (sdxl) TG_RETURN_IF_ERROR(LoadSdxlSecondEncoder(factory, dir, m, &context));
  if (context > 0 && m->unet.context_size > 0 && context != m->unet.context_size) {
    return ShapeMismatch(std::string(sdxl ? "the concatenated text encoder hidden states width"
                                          : "text_encoder/model.onnx output " +
                                                m->text_encoder.hidden_name + " width"),
                         context, "unet/model.onnx input encoder_hidden_states width",
                         m->unet.context_size);
  }
  return context;
}

// SD 2.x conditions on OpenCLIP ViT-H (GELU), SD 1.x on OpenAI's CLIP ViT-L (quick-GELU): the text
// encoder's config says which, whatever its width (small test models share the architecture at
// another width). Legacy exports have no config; there the published width (1024) decides.
bool IsSd2TextEncoder(const std::string& dir, std::int64_t width) {
  std::error_code ec;
  const fs::path cfg = fs::path(dir) / "text_encoder" / "config.json";
  if (fs::is_regular_file(cfg, ec)) {
    auto j = common::LoadJsonFile(cfg.string(), kMaxComponentConfigBytes);
    if (j.ok() && j->is_object()) {
      auto it = j->find("hidden_act");
      if (it != j->end() && it->is_string()) return it->get<std::string>() == "gelu";
    }
  }
  return width == 1024;
}

// Variant, precision and the variant's published defaults (size, guidance, empty-prompt zeros).
void SetVariantDefaults(const std::string& dir, const Json& index, bool sdxl, std::int64_t context,
                        SdModel* m) {
  const std::int64_t width = context > 0 ? context : m->unet.context_size;
  m->variant = sdxl                           ? SdVariant::kSdxl
               : IsSd2TextEncoder(dir, width) ? SdVariant::kSd2
                                              : SdVariant::kSd1;
  m->fp16 = m->unet.sample_dtype == DataType::kFloat16;
  m->default_size = sdxl ? 1024
                         : (m->variant == SdVariant::kSd2 && m->scheduler_config.prediction_type ==
                                                                 PredictionType::kVPrediction
                                ? 768
                                : 512);
  m->default_guidance = sdxl ? 5.0 : 7.5;
  if (sdxl) {
    m->force_zeros_for_empty_prompt = true;
    if (auto it = index.find("force_zeros_for_empty_prompt");
        it != index.end() && it->is_boolean()) {
      m->force_zeros_for_empty_prompt = it->get<bool>();
    }
  }
}

// VAE scaling factor from vae_decoder/config.json (Optimum writes it); the variant's published
// constant otherwise (legacy exports have no config).
Status SetVaeScaling(const std::string& dir, bool sdxl, SdModel* m) {
  std::error_code ec;
  m->vae.scaling_factor = sdxl ? 0.13025 : 0.18215;
  m->vae.scaling_source = "default for " + std::string(SdVariantName(m->variant));
  const fs::path vae_cfg = fs::path(dir) / "vae_decoder" / "config.json";
  if (fs::is_regular_file(vae_cfg, ec)) {
    TG_ASSIGN_OR_RETURN(Json cfg, common::LoadJsonFile(vae_cfg.string(), kMaxComponentConfigBytes));
    if (auto it = cfg.find("scaling_factor"); cfg.is_object() && it != cfg.end()) {
      // Real VAEs scale latents by about 0.1-1; a huge factor would saturate every pixel.
      if (!it->is_number() || it->get<double>() <= 0.0 || it->get<double>() > 100.0) {
        return Status::InvalidArg(vae_cfg.string() + ": field scaling_factor must be a number " +
                                  "in (0, 100], found " + it->dump());
      }
      m->vae.scaling_factor = it->get<double>();
      m->vae.scaling_source = "vae_decoder/config.json";
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SdModel>> LoadSdModel(const std::string& dir,
                                             const runtime::SessionFactory& factory) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound("Stable Diffusion pipeline folder not found: " + dir);
  }
  auto m = std::make_unique<SdModel>();
  m->dir = dir;

  TG_ASSIGN_OR_RETURN(Json index, ReadModelIndex(dir, m.get()));
  TG_RETURN_IF_ERROR(CheckComponentConfigs(dir));
  m->style = m->pipeline_class.rfind("Onnx", 0) == 0 ? ExportStyle::kLegacy : ExportStyle::kOptimum;
  TG_RETURN_IF_ERROR(CheckPipelineLayout(dir));

  TG_ASSIGN_OR_RETURN(
      m->scheduler_config,
      LoadSchedulerConfig((fs::path(dir) / "scheduler" / "scheduler_config.json").string()));
  TG_ASSIGN_OR_RETURN(ClipTokenizer tok,
                      ClipTokenizer::Load((fs::path(dir) / "tokenizer").string()));
  m->tokenizer.emplace(std::move(tok));

  // The UNet decides the variant: SDXL takes text_embeds and time_ids.
  TG_ASSIGN_OR_RETURN(m->unet, LoadUnet(factory, dir));
  const bool sdxl = !m->unet.text_embeds_name.empty();
  if (sdxl) {
    TG_RETURN_IF_ERROR(RequireDir(dir, "text_encoder_2", "SDXL second text encoder"));
    TG_RETURN_IF_ERROR(RequireDir(dir, "tokenizer_2", "SDXL second tokenizer"));
    TG_RETURN_IF_ERROR(RequireFile(dir, "text_encoder_2/model.onnx"));
  }
  TG_ASSIGN_OR_RETURN(const std::int64_t context, LoadTextEncoders(factory, dir, sdxl, m.get()));
  TG_ASSIGN_OR_RETURN(m->vae, LoadVae(factory, dir));

  SetVariantDefaults(dir, index, sdxl, context, m.get());
  TG_RETURN_IF_ERROR(SetVaeScaling(dir, sdxl, m.get()));
  spdlog::debug("loaded {} pipeline {} ({} export, {})", SdVariantName(m->variant), dir,
                ExportStyleName(m->style), m->fp16 ? "fp16" : "fp32");
  return m;
}

}  // namespace tg::sd
