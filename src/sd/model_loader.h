// Loading an ONNX-exported Stable Diffusion pipeline folder (Hugging Face Optimum or diffusers'
// legacy ONNX export) into runtime sessions, with everything the denoising loop needs to feed
// them read from the sessions themselves.
//
// Layout: DIR/model_index.json, text_encoder/, (text_encoder_2/ for SDXL), unet/, vae_decoder/,
// tokenizer/ (+ tokenizer_2/), scheduler/scheduler_config.json. Each model is opened from its own
// folder through runtime::SessionFactory so external weights (model.onnx_data, weights.pb) resolve
// next to it. Input/output names, dtypes and ranks come from the sessions: input_ids int32 or
// int64; timestep float32/float16/int64 of rank 0, [1] or [B]; fp16 or fp32 tensors (converted
// at the boundary by the pipeline). Variant: SDXL when the UNet takes text_embeds/time_ids (two
// encoders required), SD 2.x when text_encoder/config.json says hidden_act "gelu" (OpenCLIP; a
// legacy export without that config: when the text width is 1024), otherwise SD 1.x; the
// prediction type (epsilon / v_prediction) comes from the scheduler config.
//
// Errors name the file and what is wrong: NOT_FOUND for a missing folder or file; INVALID_ARG for
// malformed JSON, a corrupt/unloadable ONNX file, missing tensors or mismatched shapes between
// the parts; UNAVAILABLE (exit 3) when the runtime policy refuses a session (no GPU path);
// UNSUPPORTED for tensor dtypes this pipeline cannot feed.
//
// Ownership/threading: SdModel owns its sessions and tokenizers; it is immutable after Load and
// may be shared by concurrent generations (runtime sessions are thread-safe for Run).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/session.h"
#include "sd/scheduler.h"
#include "sd/tokenizer.h"

namespace tg::sd {

enum class SdVariant { kSd1, kSd2, kSdxl };
enum class ExportStyle { kOptimum, kLegacy };

std::string_view SdVariantName(SdVariant v);      // "sd1" "sd2" "sdxl"
std::string_view ExportStyleName(ExportStyle s);  // "optimum" "legacy"

// How the UNet's timestep input is shaped.
enum class TimestepLayout {
  kScalar,   // rank 0
  kSingle,   // [1] (fixed dim 1)
  kBatched,  // [B] (dynamic or equal to the UNet batch)
};

struct TextEncoderPart {
  std::string model_path;
  runtime::Session session;
  std::string ids_name;
  runtime::DataType ids_dtype = runtime::DataType::kInt64;
  std::int64_t ids_fixed_batch = -1;  // >0 when the export fixed the batch dimension
  std::string hidden_name;            // last_hidden_state, or hidden_states.<N-1> (SDXL)
  std::int64_t hidden_size = -1;      // last dim of hidden_name (-1 dynamic)
  std::string pooled_name;            // text_embeds (SDXL text_encoder_2), else ""
  std::int64_t pooled_size = -1;
};

struct UnetPart {
  std::string model_path;
  runtime::Session session;
  std::string sample_name;
  runtime::DataType sample_dtype = runtime::DataType::kFloat32;
  std::vector<std::int64_t> sample_shape;  // declared, -1 dynamic
  std::string timestep_name;
  runtime::DataType timestep_dtype = runtime::DataType::kFloat32;
  TimestepLayout timestep_layout = TimestepLayout::kBatched;
  std::string context_name;  // encoder_hidden_states
  runtime::DataType context_dtype = runtime::DataType::kFloat32;
  std::int64_t context_size = -1;
  std::string text_embeds_name;  // SDXL only
  runtime::DataType text_embeds_dtype = runtime::DataType::kFloat32;
  std::int64_t text_embeds_size = -1;
  std::string time_ids_name;  // SDXL only
  runtime::DataType time_ids_dtype = runtime::DataType::kFloat32;
  std::string output_name;
};

struct VaeDecoderPart {
  std::string model_path;
  runtime::Session session;
  std::string latent_name;
  runtime::DataType latent_dtype = runtime::DataType::kFloat32;
  std::string output_name;
  double scaling_factor = 0.18215;
  std::string scaling_source;  // "vae_decoder/config.json" or "default for <variant>"
};

struct SdModel {
  std::string dir;
  std::string pipeline_class;  // model_index.json _class_name
  ExportStyle style = ExportStyle::kOptimum;
  SdVariant variant = SdVariant::kSd1;
  bool fp16 = false;                          // the UNet runs in fp16
  bool force_zeros_for_empty_prompt = false;  // SDXL: empty negative prompt -> zero embeddings
  int default_size = 512;                     // diffusers' default width/height for the variant
  double default_guidance = 7.5;
  SchedulerConfig scheduler_config;
  std::optional<ClipTokenizer> tokenizer;
  std::optional<ClipTokenizer> tokenizer_2;
  TextEncoderPart text_encoder;
  std::optional<TextEncoderPart> text_encoder_2;
  UnetPart unet;
  VaeDecoderPart vae;

  bool degraded() const;                // any session is degraded (dev policy on CPU)
  std::string degraded_reason() const;  // first session's reason
  // Reports of every session (text_encoder, text_encoder_2, unet, vae_decoder), for outputs.
  std::vector<const runtime::SessionReport*> reports() const;
};

// Loads the pipeline in `dir` with sessions from `factory`.
[[nodiscard]] common::Result<std::unique_ptr<SdModel>> LoadSdModel(
    const std::string& dir, const runtime::SessionFactory& factory);

}  // namespace tg::sd
