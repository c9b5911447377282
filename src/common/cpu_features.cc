#include "common/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tg::common {

CpuFeatures CpuFeaturesFrom(const CpuidRegisters& r) {
  const bool osxsave = (r.leaf1_ecx & (1u << 27)) != 0;
  const bool avx = (r.leaf1_ecx & (1u << 28)) != 0;
  const bool ymm_saved = (r.xcr0 & 0x6u) == 0x6u;
  const bool vex = osxsave && avx && ymm_saved;
  CpuFeatures f;
  f.avx2 = vex && (r.leaf7_ebx & (1u << 5)) != 0;
  f.f16c = vex && (r.leaf1_ecx & (1u << 29)) != 0;
  return f;
}

namespace {

CpuFeatures Detect() {
#if defined(__x86_64__) || defined(__i386__)
  CpuidRegisters r;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return {};
  r.leaf1_ecx = c;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    r.leaf7_ebx = b;
  }
  // xgetbv faults without OSXSAVE: only asked when the OS enabled it.
  if ((r.leaf1_ecx & (1u << 27)) != 0) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    r.xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  return CpuFeaturesFrom(r);
#else
  return {};
#endif
}

}  // namespace

CpuFeatures ThisCpu() {
  // Asked once: cpuid is cheap but the loops call this per step.
  static const CpuFeatures features = Detect();
  return features;
}

bool CpuHasAvx2() { return ThisCpu().avx2; }
bool CpuHasF16c() { return ThisCpu().f16c; }

}  // namespace tg::common
