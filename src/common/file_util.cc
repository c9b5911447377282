#include "common/file_util.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

namespace tg::common {
namespace {

std::string HexOf(const unsigned char* p, unsigned n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 15]);
  }
  return out;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

Result<std::string> ReadFileLimited(const std::string& path, std::uint64_t max_bytes) {
  if (path == "-") {
    std::string data;
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      data.append(buf, static_cast<std::size_t>(std::cin.gcount()));
      if (data.size() > max_bytes) {
        return Status::InvalidArg("standard input: larger than the limit of " +
                                  std::to_string(max_bytes) + " bytes");
      }
    }
    return data;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": file not found");
    return Status::InvalidArg(path + ": cannot access: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidArg(path + ": is a directory, expected a file");
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Status::InvalidArg(path + ": file is " + std::to_string(st.st_size) +
                              " bytes, larger than the limit of " + std::to_string(max_bytes) +
                              " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArg(path + ": cannot open for reading: " + std::strerror(errno));
  std::string data;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in.gcount()));
    // Re-checked while reading: a FIFO or /proc file has no size in stat.
    if (data.size() > max_bytes) {
      return Status::InvalidArg(path + ": larger than the limit of " + std::to_string(max_bytes) +
                                " bytes");
    }
  }
  if (in.bad()) return Status::InvalidArg(path + ": read error");
  return data;
}

Status WriteFileAtomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::InvalidArg(path + ": cannot open for writing: " + std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::InvalidArg(path + ": write failed: " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return Status::InvalidArg(path + ": cannot rename into place: " + std::strerror(err));
  }
  return Status::Ok();
}

TextPosition PositionOfOffset(const std::string& text, std::size_t offset) {
  TextPosition pos;
  if (offset > text.size()) offset = text.size();
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

std::string Sha256Hex(const void* data, std::size_t size) {
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), data, size);
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return HexOf(md, len);
}

Result<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status::NotFound(path + ": file not found");
    return Status::InvalidArg(path + ": cannot open for reading: " + std::strerror(errno));
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  while (in.read(buf.get(), 1 << 20) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx.get(), buf.get(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return Status::InvalidArg(path + ": read error");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return HexOf(md, len);
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace tg::common
