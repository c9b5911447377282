// The streaming form of the one refusing writer (file_util.h WriteFileAtomic): for outputs too
// large to hold as one string (audit reports of many findings), written piece by piece into a
// temporary beside the target and renamed into place by Commit, so a reader never sees half a
// file and a failed run leaves the old file as it was. The same refusals as WriteFileAtomic: a
// new path or a regular file only (devices, FIFOs, sockets, directories refused, naming the file).
//
// Move-only; one thread at a time. WriteFileAtomic is Open + Write + Commit.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::common {

class AtomicFileWriter {
 public:
  // Checks `path` (WriteFileAtomic's refusals, INVALID_ARG naming it) and creates the temporary.
  // A missing parent folder is an error unless `create_parents`.
  static Result<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                        bool create_parents = false);
  // Removes the temporary unless Commit succeeded; the target is untouched then.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `data` (buffered). Never fails by itself: the first write error is kept and returned
  // by Commit, and later writes are dropped.
  void Write(std::string_view data) noexcept;
  // Flushes, fsyncs, checks the target again and renames the temporary over it. INVALID_ARG
  // naming the file on any failure (the temporary is removed). Call once.
  Status Commit();

 private:
  AtomicFileWriter() = default;
  void Flush() noexcept;
  void WriteAll(std::string_view data) noexcept;

  std::string path_;    // as given, for messages
  std::string target_;  // the file the rename replaces (symbolic links resolved)
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
  std::string buffer_;
  Status error_ = Status::Ok();
};

}  // namespace tg::common
