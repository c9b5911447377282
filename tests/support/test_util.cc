#include "tests/support/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/process.h"

namespace tg::testing {
namespace fs = std::filesystem;

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data) {
  common::ProcessOptions o;
  for (const auto& [k, v] : env) {
    if (v == kUnset) {
      o.unset_env.insert(k);
    } else {
      o.env[k] = v;
    }
  }
  o.stdin_data = stdin_data;
  const common::ProcessResult r = common::RunProcess(argv, o);
  ProcessResult result;
  result.exit_code = r.started ? r.exit_code : 127;
  result.out = r.out;
  result.err = r.started ? r.err : r.error;
  return result;
}

ProcessResult RunTruegreen(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env,
                           const std::string& stdin_data) {
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, env, stdin_data);
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tg-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& content) {
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string SourceDir() { return TG_SOURCE_DIR; }
std::string BinaryDir() { return TG_BINARY_DIR; }
std::string TruegreenPath() { return TG_CLI_PATH; }
std::string ClipMergesFile() {
  return std::string(TG_SOURCE_DIR) + "/data/clip/bpe_simple_vocab_16e6.txt.gz";
}
std::string OrtDir() { return std::string(TG_SOURCE_DIR) + "/third_party/onnxruntime"; }
std::string FakeGpuDir() { return std::string(TG_BINARY_DIR) + "/fakegpu"; }
std::string SystemPython() { return "/usr/bin/python3"; }

}  // namespace tg::testing
