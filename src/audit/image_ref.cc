// skopeo runs with posix_spawn (no shell), stdin from /dev/null and stderr into a temporary file
// that is read back (at most 64 KiB) for the message. --insecure-policy: the copy is only read by
// the audit, never run, so signature policy (often absent on CI hosts) does not apply.
#include "audit/image_ref.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "common/file_util.h"

extern char** environ;

namespace tg::audit {
namespace {

namespace fs = std::filesystem;
using common::Result;
using common::Status;

// PATH[:REF] -> PATH: the whole rest when it exists, else up to the first ':'.
std::string LocalPart(const std::string& rest) {
  std::error_code ec;
  if (fs::exists(rest, ec)) return rest;
  return rest.substr(0, rest.find(':'));
}

std::string FirstErrorLine(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty()) return line.substr(0, 400);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return "no error output";
}

Status RunSkopeo(const std::vector<std::string>& args, const std::string& err_path) {
  std::vector<char*> argv;
  std::vector<std::string> owned = args;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "skopeo", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return Status::InvalidArg(
        "docker:// references need skopeo (Debian package 'skopeo'), which could not be run");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::Internal("waitpid(skopeo) failed");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  auto err = common::ReadFileLimited(err_path, 64 << 10);
  return Status::InvalidArg(FirstErrorLine(err.ok() ? *err : std::string(err.status().message())));
}

}  // namespace

ImageInput::~ImageInput() {
  if (temp_dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_dir_, ec);
}

Result<std::unique_ptr<ImageInput>> ResolveImageInput(const std::string& ref) {
  std::unique_ptr<ImageInput> in(new ImageInput());
  for (const char* t : {"docker-archive:", "oci-archive:", "oci:"}) {
    std::string_view prefix(t);
    if (ref.rfind(t, 0) != 0) continue;
    in->transport_ = std::string(prefix.substr(0, prefix.size() - 1));
    in->path_ = LocalPart(ref.substr(prefix.size()));
    if (in->path_.empty()) {
      return Status::InvalidArg(fmt::format("'{}': the {} reference names no path", ref, t));
    }
    return in;
  }
  if (ref.rfind("docker://", 0) == 0) {
    in->transport_ = "docker";
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/truegreen-image-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return Status::Internal("cannot create a temporary directory for " + ref);
    }
    in->temp_dir_ = buf.data();
    in->path_ = in->temp_dir_ + "/layout";
    Status s = RunSkopeo({"skopeo", "--command-timeout", "600s", "copy", "--insecure-policy",
                          "--quiet", ref, "oci:" + in->path_ + ":image"},
                         in->temp_dir_ + "/skopeo.err");
    if (!s.ok()) {
      return Status::InvalidArg(
          fmt::format("{}: cannot copy the image from its registry (offline, unknown image or "
                      "credentials?): {}; save it elsewhere with `skopeo copy` and audit the "
                      "docker-archive: or oci: copy",
                      ref, s.message()));
    }
    return in;
  }
  for (const char* t : {"docker-daemon:", "containers-storage:", "dir:", "sif:", "ostree:"}) {
    if (ref.rfind(t, 0) == 0) {
      return Status::InvalidArg(fmt::format(
          "'{}': transport {} is not supported (the audit reads images without a daemon); use "
          "docker-archive:, oci-archive:, oci: or docker://",
          ref, t));
    }
  }
  in->path_ = ref;
  return in;
}

}  // namespace tg::audit
