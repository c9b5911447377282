// Helpers shared by unit and integration tests: run a process and capture its output, temporary
// directories, and the locations of the source tree, the build tree and the built binary.
// Not thread-safe (tests use them from the test thread).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"

namespace tg::testing {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  std::string out;     // captured stdout
  std::string err;     // captured stderr
};

// Runs argv[0] (a path) with the current environment plus `env` (a value of "\x01unset" removes the
// variable), feeding `stdin_data`. Never throws; a failure to start is exit_code 127.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& stdin_data = "");
// Runs the truegreen binary of this build tree with `args`.
ProcessResult RunTruegreen(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env = {},
                           const std::string& stdin_data = "");

inline constexpr const char* kUnset = "\x01unset";

// A fresh directory under $TMPDIR, removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Writes `content` to `path`, creating parent directories. Aborts the test binary on failure.
void WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);

std::string SourceDir();       // repository root
std::string BinaryDir();       // CMake build tree of this configuration
std::string TruegreenPath();   // build/bin/truegreen of this configuration
std::string ClipMergesFile();  // data/clip/bpe_simple_vocab_16e6.txt.gz (OpenAI CLIP, MIT)
// third_party/onnxruntime: include/ and lib/, which holds the GPU-flavor core (libonnxruntime.so)
// with the CUDA/TensorRT provider libraries, as in a GPU release archive. The default pair.
std::string OrtDir();
// third_party/onnxruntime-cpu/lib/libonnxruntime.so: the real CPU-built core of the same release,
// the fixture of the build-flavor tests (beside GPU providers it crashes on a GPU).
std::string CpuOrtCore();
std::string FakeGpuDir();  // directory with the fake GPU libraries built for tests
// Debian's python3 (which has python3-onnx), not whatever python3 is first on PATH.
std::string SystemPython();

// The CLI definition as `truegreen __cli-tree` dumps it (an empty object, with a test failure,
// when that fails).
common::Json CliTree();
// "a b  c" -> {"a", "b", "c"} (runs of spaces are one separator).
std::vector<std::string> CliWords(const std::string& line);
// Checks a command line against the CLI definition: every subcommand and every flag it names
// exists, a flag that takes a value is followed by one. Returns what is wrong, or "".
// CheckCommandLine takes one "truegreen w1 w2 --flag value ..." string as quoted in docs and
// advice (stops at | > && ...; "a|b" alternatives must each exist); CheckCommandWords takes the
// words exactly as a process receives them (words[0] is the binary), e.g. a manifest's args.
std::string CheckCommandLine(const common::Json& tree, const std::string& line);
std::string CheckCommandWords(const common::Json& tree, const std::vector<std::string>& words);

// Sets (value != nullptr) or unsets an environment variable for one scope and restores the old
// value afterwards. Not thread-safe (environment changes never are): single-threaded tests only.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A TCP socket listening on 127.0.0.1 at an ephemeral port (stored in *port): the fd, owned by
// the caller, or -1 when socket/bind/listen fails.
int ListenLoopback(int* port, int backlog = 8);

// A loopback listener (ListenLoopback) with its own accept thread, for stub servers: each
// accepted connection is handed to `serve` on that thread, one at a time, and closed when serve
// returns. The destructor stops the thread (within ~50 ms) and closes the listener; declare it
// after everything `serve` uses, so it is destroyed first.
class LoopbackAcceptor {
 public:
  explicit LoopbackAcceptor(std::function<void(int fd)> serve);
  ~LoopbackAcceptor();
  LoopbackAcceptor(const LoopbackAcceptor&) = delete;
  LoopbackAcceptor& operator=(const LoopbackAcceptor&) = delete;
  int port() const { return port_; }

 private:
  std::function<void(int)> serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tg::testing
