// Internals shared by the pipeline's source files (sd/ only): pipeline.cc runs generations,
// pipeline_validate.cc checks requests. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "sd/model_loader.h"
#include "sd/pipeline.h"
#include "sd/rng.h"

namespace tg::sd {

// The generator of one image; INVALID_ARG naming the seed and the mode when it is not usable.
[[nodiscard]] common::Result<Rng> MakeRng(RngMode mode, std::uint64_t seed);
// INVALID_ARG: `seed` (of image `image` of a request, 0 for the first) is out of `mode`'s range;
// the message states every generator's range (kSeedRangeText).
common::Status SeedRangeError(RngMode mode, std::uint64_t seed, std::size_t image);

// Validates every request (ValidateRequest) and that they may share one UNet batch: equal
// BatchKey, at most kMaxBatch images together, and a fixed-batch UNet's batch matched. Messages
// name the request index when there are several.
[[nodiscard]] common::Status ValidateBatch(const SdModel& model,
                                           std::vector<GenerateRequest>& requests);

}  // namespace tg::sd
