// Reading the dynamic section of an ELF64 shared library without loading it.
//
// The probe needs to know which CUDA / cuDNN / TensorRT major a GPU provider library was built
// for, and the answer is in its DT_NEEDED entries (libcudart.so.13 -> CUDA 13). Reading them from
// the file works even when the library cannot be loaded, which is exactly when the answer matters.
// Only ELF64 little-endian (x86-64, aarch64) is supported; anything else is an UNSUPPORTED error.
// The parser reads with pread at bounded offsets (the CUDA provider is hundreds of MB) and treats
// every offset and count in the file as untrusted. Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace tg::probe {

struct ElfDynamicInfo {
  std::string soname;               // DT_SONAME ("" when absent)
  std::vector<std::string> needed;  // DT_NEEDED, in file order
  std::string runpath;              // DT_RUNPATH, else DT_RPATH ("" when absent)
};

// Errors: NOT_FOUND (missing file), INVALID_ARG (not ELF, truncated or inconsistent, naming the
// file and what is wrong), UNSUPPORTED (ELF32 or big-endian).
[[nodiscard]] common::Result<ElfDynamicInfo> ReadElfDynamic(const std::string& path);

// The version suffix of `soname` when it is "<stem>.so.<N>[.<M>...]": ("libcudart.so.13",
// "libcudart") -> 13. nullopt when the stem differs or there is no numeric suffix.
std::optional<int> SonameMajor(const std::string& soname, const std::string& stem);

// The first major found in `needed` for any of `stems` (e.g. {"libcudart", "libcublas"}).
std::optional<int> MajorFromNeeded(const std::vector<std::string>& needed,
                                   const std::vector<std::string>& stems);

}  // namespace tg::probe
