// Run-time CPU feature checks for the hand-vectorised host loops (sd/ schedulers and guidance,
// runtime/ fp16 conversion): the one place that reads cpuid.
#pragma once

namespace tg::common {

// What cpuid and xgetbv report (x86), the inputs of the feature decision.
struct CpuidRegisters {
  unsigned leaf1_ecx = 0;       // cpuid(1).ecx: OSXSAVE bit 27, AVX bit 28, F16C bit 29
  unsigned leaf7_ebx = 0;       // cpuid(7, 0).ebx: AVX2 bit 5 (0 when leaf 7 does not exist)
  unsigned long long xcr0 = 0;  // xgetbv(0): the OS saves XMM (bit 1) and YMM (bit 2) state
};

struct CpuFeatures {
  bool avx2 = false;
  bool f16c = false;
};

// The features a program may use given `r`: a VEX-encoded instruction set counts only when the
// CPU has AVX, the OS enabled XSAVE and saves the YMM state. Pure; thread-safe.
CpuFeatures CpuFeaturesFrom(const CpuidRegisters& r);

// This CPU's features (asked once, then cached; all false on a non-x86 CPU). Thread-safe.
CpuFeatures ThisCpu();

// ThisCpu().avx2. Callers pick between a baseline loop and the same loop compiled with
// target("avx2"); both must give the same bits (no FMA), so this choice never changes a result.
bool CpuHasAvx2();
// ThisCpu().f16c (the bulk fp16 conversions).
bool CpuHasF16c();

}  // namespace tg::common
