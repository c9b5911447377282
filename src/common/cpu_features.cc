#include "common/cpu_features.h"

namespace tg::common {

bool CpuHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  // Asked once: cpuid is cheap but the loops call this per step.
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

}  // namespace tg::common
