// Run-time CPU feature checks for the hand-vectorised host loops (sd/ schedulers and guidance).
// Stateless apart from a cached answer; thread-safe (the cache is a function-local static).
#pragma once

namespace tg::common {

// True when the CPU executes AVX2 (x86 only; false on every other architecture). Callers pick
// between a baseline loop and the same loop compiled with target("avx2"); both must give the
// same bits (no FMA), so this choice never changes a result.
bool CpuHasAvx2();

}  // namespace tg::common
