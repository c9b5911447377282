// Keeps the command line away from libraries that read /proc/self/cmdline.
//
// ONNX Runtime's bundled telemetry library reads /proc/self/cmdline when the ORT environment is
// created and matches it with a backtracking std::regex whose recursion depth grows with the
// length of the first line of the command line: one 40 KB argument (a path, a prompt) overflows
// the stack (SIGSEGV). It would also copy the user's arguments (prompts) into its own state.
//
// HideCommandLineFromProcfs() rewrites the process's own argument area, after the arguments have
// been copied (CLI parsing), so that /proc/self/cmdline reads as a short title. Call it once from
// main(), before any library is loaded and while no other thread runs; argv's strings are
// unusable afterwards. Not thread-safe.
#pragma once

#include <string>

namespace tg::common {

// Longest title kept; everything else in the argument area is overwritten.
inline constexpr std::size_t kMaxProcessTitle = 64;

// Returns the title /proc/self/cmdline now reads as ("truegreen probe").
std::string HideCommandLineFromProcfs(int argc, char** argv);

}  // namespace tg::common
