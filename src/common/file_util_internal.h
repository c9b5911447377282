// The output-path checks shared by file_util.cc (WriteFileAtomic, CheckOutputPath) and
// atomic_file.cc (AtomicFileWriter), so the writer and its pre-check cannot disagree. Not for use
// outside common/. Pure except for CheckParent's create_parents; thread-safe.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/status.h"

namespace tg::common {

// The file a write to `path` replaces: `path` itself, or the regular file a symbolic link names.
// Refuses anything that is not a regular file. Sets *exists and *mode (permission bits to keep).
Result<std::string> WriteTarget(const std::string& path, bool* exists, mode_t* mode);

// OK when `parent` is a directory; with `create_parents`, creates a missing one. INVALID_ARG
// naming `path` otherwise.
Status CheckParent(const std::string& path, const std::string& parent, bool create_parents);

// The file an output path names (symlinks followed by WriteTarget), refused when the path is
// empty, names a directory, or lies on /proc or /sys.
Result<std::filesystem::path> OutputTarget(const std::string& path, bool* exists, mode_t* mode);

}  // namespace tg::common
