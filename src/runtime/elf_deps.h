// DT_NEEDED entries of an ELF shared library (runtime/ internal).
//
// Used to preload a GPU provider library's dependencies through common::LibraryLoader before ORT
// dlopens the provider, so --lib-path substitutes them and a missing one is reported by name
// with the loader's exact error. Delegates to probe::ReadElfDynamic (bounded reads, no mapping).
// Stateless; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace tg::runtime {

// Sonames the ELF64 little-endian file at `path` lists as DT_NEEDED, in file order. Errors:
// NOT_FOUND (missing file), INVALID_ARG (not an ELF64 shared object, truncated tables).
common::Result<std::vector<std::string>> ElfNeeded(const std::string& path);

// True for C/C++ runtime and libc-family sonames that must not be preloaded ("libc.so.6" ...).
bool IsSystemSoname(const std::string& soname);

}  // namespace tg::runtime
