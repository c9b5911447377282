// A one-layer OCI image layout whose gzip layer holds `n` empty regular files with 17-character
// names ("d000/f00000000000" .. , 1000 per directory, no directory entries): the entry-count
// memory case of `audit image`. Written in C++ at test time with libarchive's writer (gzip level
// 1, so a million entries take about a second), never kept in git. Header-only; throws
// std::runtime_error on IO failure (see make_images.h). Not thread-safe per call site.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <string>

#include "tests/fixtures/make_images.h"

namespace tg::testing::images {

// Writes the layer blob to `blob_path` (a gzip-compressed pax tar).
inline void WriteManyEntryLayer(const std::string& blob_path, int n) {
  detail::WritePtr a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_filter_option(a.get(), "gzip", "compression-level", "1");
  archive_write_set_bytes_in_last_block(a.get(), 1);
  detail::Check(archive_write_open_filename(a.get(), blob_path.c_str()) == ARCHIVE_OK,
                "open " + blob_path);
  struct archive_entry* e = archive_entry_new();
  char name[32];
  for (int i = 0; i < n; ++i) {
    std::snprintf(name, sizeof(name), "d%03d/f%011d", i / 1000 % 1000, i);
    archive_entry_clear(e);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    archive_entry_set_size(e, 0);
    detail::Check(archive_write_header(a.get(), e) == ARCHIVE_OK, std::string("header ") + name);
  }
  archive_entry_free(e);
  detail::Check(archive_write_close(a.get()) == ARCHIVE_OK, "close " + blob_path);
}

// Writes the image as an OCI layout directory `out` (scratch files under `work`). Returns `out`.
inline std::string WriteManyEntryImage(const std::string& out, const std::string& work, int n) {
  std::filesystem::create_directories(work);
  const std::string blob = work + "/many.tar.gz";
  WriteManyEntryLayer(blob, n);
  ImageSpec spec;
  LayerSpec layer;
  layer.raw_blob = detail::ReadAll(blob);
  std::filesystem::remove(blob);
  layer.created_by = "RUN touch many files";
  spec.layers.push_back(std::move(layer));
  return WriteImage(spec, Format::kOciLayout, out, work);
}

}  // namespace tg::testing::images
