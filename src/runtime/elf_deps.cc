#include "runtime/elf_deps.h"

#include "probe/elf.h"

namespace tg::runtime {

common::Result<std::vector<std::string>> ElfNeeded(const std::string& path) {
  // One ELF reader for the whole project: the probe's bounded, untrusted-input parser.
  auto info = probe::ReadElfDynamic(path);
  if (!info.ok()) return info.status();
  return std::move(info->needed);
}

bool IsSystemSoname(const std::string& soname) {
  static const char* const kSystem[] = {
      "libc.so",      "libm.so",     "libdl.so", "librt.so",          "libpthread",
      "libstdc++.so", "libgcc_s.so", "ld-linux", "libonnxruntime.so", "libz.so"};
  for (const char* s : kSystem) {
    if (soname.rfind(s, 0) == 0) return true;
  }
  return false;
}

}  // namespace tg::runtime
