// `audit image` inputs as containers-transport references (containers-transports(5)):
//   docker-archive:PATH[:REF]   a `docker save` tar          -> read in place
//   oci-archive:PATH[:REF]      an OCI archive (tar)         -> read in place
//   oci:DIR[:REF]               an OCI image layout          -> read in place
//   docker://REGISTRY/NAME:TAG  a registry image             -> `skopeo copy` into a temporary
//                                                              OCI layout, read, then removed
// A plain path (no transport) is used as it is. Other transports (docker-daemon:,
// containers-storage:, dir:) are refused: the audit reads images without a daemon.
//
// Failure behaviour: INVALID_ARG (exit 2) for an unknown transport or a copy that skopeo refuses
// (offline, unknown image, authentication), with skopeo's first error line; UNAVAILABLE (exit 3)
// when skopeo cannot be run or does not finish (the copy is bounded by skopeo's
// --command-timeout, 10 minutes). Thread safety: one object per call.
#pragma once

#include <memory>
#include <string>

#include "common/file_util.h"
#include "common/status.h"

namespace tg::audit {

// The image to read for a reference. Owns the temporary layout of a docker:// copy and removes
// it on destruction.
class ImageInput {
 public:
  ImageInput(const ImageInput&) = delete;
  ImageInput& operator=(const ImageInput&) = delete;

  // The file or folder to read (inside the temporary layout for docker://).
  const std::string& path() const { return path_; }
  const std::string& transport() const { return transport_; }  // "" for a plain path

 private:
  friend common::Result<std::unique_ptr<ImageInput>> ResolveImageInput(const std::string& ref);
  ImageInput() = default;
  std::string path_;
  std::string transport_;
  common::ScopedTempDir temp_dir_;  // the docker:// copy, removed with this object
};

// Resolves `ref` (see the file comment); for docker:// runs skopeo and blocks until it ends.
// The caller owns the result. Errors: as the file comment says.
common::Result<std::unique_ptr<ImageInput>> ResolveImageInput(const std::string& ref);

}  // namespace tg::audit
