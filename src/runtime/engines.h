// TensorRT engines as artifacts (public API of runtime/: no ORT types).
//
// An engine (and its timing cache) is only valid for one exact combination of software and
// hardware, so it lives in a directory named by a key: sha256 over the version matrix fingerprint,
// the GPU name and compute capability, the model file's sha256, the precision and the
// optimisation-profile shapes. `truegreen engines build` fills <engine_dir>/<key>/ and writes a
// manifest.json; production sessions refuse to start when the directory for their key is missing
// (an on-node build would hide drift and inflate cold starts) unless the policy allows it.
//
// Stateless functions; thread-safe. QueryGpuIdentity dlopens libcuda through the LibraryLoader.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/dynlib.h"
#include "common/status.h"

namespace tg::runtime {

struct GpuIdentity {
  std::string name;                // "NVIDIA H200"
  std::string compute_capability;  // "9.0"
};

struct EngineKeyInputs {
  std::string matrix_fingerprint;
  GpuIdentity gpu;
  std::string model_sha256;
  std::string precision;  // "fp32" | "fp16" | "int8"
  // input name -> (min, opt, max) shapes; empty for static-shape models.
  std::map<std::string, std::vector<std::vector<std::int64_t>>> profile_shapes;
  // Every field plus "schema": 1 (GPU as gpu_name and compute_capability). Pure.
  common::Json ToJson() const;
};

// Key inputs for a model opened with TensorRT optimisation profiles `min`/`opt`/`max` (input ->
// shape; an input missing from opt/max uses its min shape). Used by Open and `engines verify`
// alike so both compute the same key.
EngineKeyInputs MakeEngineKeyInputs(const std::string& matrix_fingerprint, const GpuIdentity& gpu,
                                    const std::string& model_sha256, const std::string& precision,
                                    const std::map<std::string, std::vector<std::int64_t>>& min,
                                    const std::map<std::string, std::vector<std::int64_t>>& opt,
                                    const std::map<std::string, std::vector<std::int64_t>>& max);

// Fingerprint of the version matrix a runtime policy refers to (its `matrix:` file, else the
// embedded production/dev matrix of its profile). Errors: LoadMatrix's (NOT_FOUND, INVALID_ARG).
common::Result<std::string> PolicyMatrixFingerprint(const std::string& matrix_path,
                                                    bool production);

// 32 lowercase hex characters (128 bits of the sha256 of common::WriteJson(ToJson())).
std::string EngineKey(const EngineKeyInputs& in);

// Name, compute capability of CUDA device `device_id` via libcuda.so.1 (cuInit, cuDeviceGetName,
// cuDeviceGetAttribute). UNAVAILABLE with the driver's error name otherwise.
common::Result<GpuIdentity> QueryGpuIdentity(const common::LibraryLoader& loader, int device_id);

// `engine_dir` if set, else $TRUEGREEN_ENGINE_DIR, else $XDG_CACHE_HOME/truegreen/engines, else
// $HOME/.cache/truegreen/engines.
std::string ResolveEngineDir(const std::string& engine_dir);

// True when <engine_dir>/<key>/manifest.json exists and records `key`.
bool EngineArtifactPresent(const std::string& engine_dir, const std::string& key);
// Writes <engine_dir>/<key>/manifest.json; INVALID_ARG if the folder fails, else WriteFileAtomic's.
common::Status WriteEngineManifest(const std::string& engine_dir, const std::string& key,
                                   const EngineKeyInputs& inputs);

// The largest single dimension a shape list may name (a product of several is checked, as an
// overflow, where a tensor is made).
inline constexpr std::int64_t kMaxShapeDimension = std::int64_t{1} << 24;

// Parses "name:1x4x64x64,name2:1x77" into input -> shape ("" allowed for no shapes). Refuses
// (INVALID_ARG, naming the entry): a dimension outside 1..kMaxShapeDimension (0 would make an
// empty tensor; a negative one is named as negative), an input named twice.
common::Result<std::map<std::string, std::vector<std::int64_t>>> ParseShapeList(
    const std::string& text);
// Formats input -> shape as ORT's TensorRT option value "name:1x4x64x64,name2:1x77".
std::string FormatShapeList(const std::map<std::string, std::vector<std::int64_t>>& shapes);

}  // namespace tg::runtime
