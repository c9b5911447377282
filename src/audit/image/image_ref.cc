// skopeo runs through the one process runner (no shell; /usr/bin/env finds it on PATH), its stderr
// captured (at most 64 KiB) for the message. --insecure-policy: the copy is only read by the
// audit, never run, so signature policy (often absent on CI hosts) does not apply.
#include "audit/image/image_ref.h"

#include <chrono>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/process.h"

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

Status RunSkopeo(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "skopeo"};
  argv.insert(argv.end(), args.begin(), args.end());
  common::ProcessOptions po;
  po.max_output_bytes = 64 << 10;
  po.timeout = std::chrono::seconds(660);  // skopeo's own --command-timeout is 600 s
  const common::ProcessResult r = common::RunProcess(argv, po);
  if (!r.started || r.exit_code == 127) {
    return Status::Unavailable(
        "docker:// references need skopeo (Debian package 'skopeo'), which could not be run");
  }
  if (r.exit_code == 0) return Status::Ok();
  if (r.timed_out) return Status::Unavailable("skopeo did not finish within 660 s");
  return Status::InvalidArg(FirstErrorLine(r.err));
}

}  // namespace

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
    auto dir = common::ScopedTempDir::Create("truegreen-image");
    if (!dir.ok()) return dir.status().WithPrefix(ref);
    in->temp_dir_ = std::move(dir).value();
    in->path_ = in->temp_dir_.path() + "/layout";
    Status s = RunSkopeo({"--command-timeout", "600s", "copy", "--insecure-policy", "--quiet", ref,
                          "oci:" + in->path_ + ":image"});
    if (!s.ok()) {
      // skopeo refusing the reference is bad input; skopeo missing or hanging is this machine's.
      return Status(
          s.code(),
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
