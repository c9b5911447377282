#include "runtime/elf_deps.h"

#include <elf.h>

#include <cstring>
#include <fstream>

namespace tg::runtime {
namespace {

// Reads `len` bytes at `off`; false when the file is shorter.
bool ReadAt(std::ifstream& in, std::uint64_t off, void* out, std::size_t len) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(off));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(len));
  return static_cast<std::size_t>(in.gcount()) == len;
}

}  // namespace

common::Result<std::vector<std::string>> ElfNeeded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::Status::NotFound("library " + path + " does not exist or is unreadable");
  auto bad = [&](const std::string& why) {
    return common::Status::InvalidArg(path + ": not a usable ELF64 shared library: " + why);
  };
  Elf64_Ehdr eh{};
  if (!ReadAt(in, 0, &eh, sizeof(eh))) return bad("truncated header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return bad("not 64-bit little-endian");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 65000) {
    return bad("no usable section table");
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!ReadAt(in, eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr))) {
    return bad("truncated section table");
  }
  std::vector<std::string> needed;
  for (const auto& s : sh) {
    if (s.sh_type != SHT_DYNAMIC) continue;
    if (s.sh_link >= sh.size()) return bad("dynamic section links to a missing string table");
    const Elf64_Shdr& strtab = sh[s.sh_link];
    if (strtab.sh_size > (64u << 20) || s.sh_size > (16u << 20)) return bad("oversized tables");
    std::string strings(strtab.sh_size, '\0');
    if (!ReadAt(in, strtab.sh_offset, strings.data(), strings.size())) {
      return bad("truncated string table");
    }
    std::vector<Elf64_Dyn> dyn(s.sh_size / sizeof(Elf64_Dyn));
    if (!ReadAt(in, s.sh_offset, dyn.data(), dyn.size() * sizeof(Elf64_Dyn))) {
      return bad("truncated dynamic section");
    }
    for (const auto& d : dyn) {
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED) continue;
      if (d.d_un.d_val >= strings.size()) return bad("DT_NEEDED outside the string table");
      needed.emplace_back(strings.c_str() + d.d_un.d_val);
    }
    break;
  }
  return needed;
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
