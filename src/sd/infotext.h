// Generation parameters in the "infotext" form that AUTOMATIC1111's web UI writes into a PNG's
// `parameters` text chunk, and that A1111-style tools (PNG Info, civitai, ComfyUI loaders, image
// browsers) read back:
//
//   <prompt, possibly several lines>
//   Negative prompt: <negative prompt>          (line omitted when there is none; present and
//                                                empty for an explicit "", which SDXL encodes)
//   Steps: 30, Sampler: Euler a, CFG scale: 7.5, Seed: 42, Size: 512x512, Model hash: 0123456789,
//   Model: sd15, Version: truegreen 0.1.0        (one line; wrapped here)
//
// A value containing ',', ':' or a newline is written as a JSON string, as A1111 does; numbers use
// the shortest text that reads back exactly (CFG scale keeps a ".0", like Python's float repr).
// Sampler names are the ones A1111 writes ("Euler a", "DPM++ 2M Karras", "PLMS", ...; the table
// is A1111SamplerName's and README's), so readers map them to theirs. Generate leaves the negative
// prompt out when guidance <= 1 ignored it.
//
// Model hash: the first 10 hex digits of SHA-256 over the UNet folder (see PipelineHash) —
// A1111's hash is the same length over its checkpoint file; an ONNX pipeline has no single file,
// and the UNet's weights are what tell one fine-tune from another.
//
// Thread safety: pure functions, except PipelineHash, which reads files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::sd {

struct GenerationParameters {
  std::string prompt;
  std::optional<std::string> negative_prompt;  // absent: no "Negative prompt:" line
  int steps = 0;
  std::string sampler;  // A1111 display name (A1111SamplerName)
  double cfg_scale = 0.0;
  std::uint64_t seed = 0;
  int width = 0;
  int height = 0;
  std::string model_hash;  // "" = the field is left out
  std::string model;       // "Model": the pipeline's name (A1111: the checkpoint's); "" = left out
  std::string version;     // "" = the field is left out; Generate writes TruegreenVersion()
};

// A1111's name of a truegreen scheduler ("euler_a" → "Euler a", "pndm" → "PLMS": diffusers' PNDM
// as SD's configs set it, skip_prk_steps, is the PLMS method); unknown names pass through.
std::string_view A1111SamplerName(std::string_view scheduler);
// "truegreen x.y.z" (the project version this library was built as).
std::string TruegreenVersion();

// The infotext of `p` (see above). Never fails.
std::string FormatInfotext(const GenerationParameters& p);
// The inverse, following A1111's parser: the last line holds the parameters when it has at least
// three "Key: value" pairs; lines before it are the prompt up to a line starting with
// "Negative prompt:". INVALID_ARG naming the field when a known field's value does not parse
// (Steps, Seed, CFG scale, Size); unknown fields are ignored.
[[nodiscard]] common::Result<GenerationParameters> ParseInfotext(std::string_view text);

// The model hash of a pipeline folder: SHA-256 over "<file name>\n<sha256 of file>\n" for every
// regular file directly in DIR/unet, in name order; the first 10 hex digits. Reads every UNet
// file once (about 0.5 s per GB with SHA-NI). NOT_FOUND when DIR/unet is missing.
[[nodiscard]] common::Result<std::string> PipelineHash(const std::string& dir);

}  // namespace tg::sd
