#include "probe/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/file_util.h"

namespace tg::probe {
namespace {

using common::Result;
using common::Status;

// Caps on counts read from the file: real libraries are far below these; a hostile file must
// not make us allocate or loop without bound.
constexpr std::size_t kMaxProgramHeaders = 4096;
constexpr std::size_t kMaxDynamicEntries = 1 << 16;
constexpr std::size_t kMaxStringLength = 4096;

// Owns one file descriptor.
class ElfFile {
 public:
  ElfFile(int fd, std::string path, std::uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}

  Status Read(std::uint64_t offset, void* dst, std::size_t n, const char* what) const {
    if (offset > size_ || n > size_ - offset) {
      return Status::InvalidArg(path_ + ": truncated ELF file (" + what + " at offset " +
                                std::to_string(offset) + " lies beyond the end of the file, " +
                                std::to_string(size_) + " bytes)");
    }
    std::size_t done = 0;
    while (done < n) {
      ssize_t r =
          ::pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        return Status::InvalidArg(path_ + ": cannot read " + what + ": " +
                                  (r < 0 ? std::strerror(errno) : "unexpected end of file"));
      }
      done += static_cast<std::size_t>(r);
    }
    return Status::Ok();
  }

  // NUL-terminated string at `offset`, at most kMaxStringLength bytes.
  Result<std::string> String(std::uint64_t offset) const {
    std::string out;
    char buf[256];
    while (out.size() < kMaxStringLength) {
      if (offset >= size_) break;
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, size_ - offset));
      TG_RETURN_IF_ERROR(Read(offset, buf, n, "dynamic string"));
      const char* nul = static_cast<const char*>(std::memchr(buf, '\0', n));
      if (nul != nullptr) {
        out.append(buf, static_cast<std::size_t>(nul - buf));
        return out;
      }
      out.append(buf, n);
      offset += n;
    }
    return Status::InvalidArg(path_ +
                              ": unterminated or over-long string in the dynamic string "
                              "table");
  }

  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
  std::uint64_t size_;
};

}  // namespace

namespace {

// Checks the ELF identification and header, then reads the program header table.
Result<std::vector<Elf64_Phdr>> ReadProgramHeaders(const ElfFile& f, const std::string& path,
                                                   std::uint64_t file_size) {
  Elf64_Ehdr eh{};
  if (file_size < EI_NIDENT || !f.Read(0, eh.e_ident, EI_NIDENT, "ELF identification").ok() ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return Status::InvalidArg(path + ": not an ELF file (bad magic)");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Status::Unsupported(path + ": only 64-bit little-endian ELF is supported");
  }
  TG_RETURN_IF_ERROR(f.Read(0, &eh, sizeof eh, "ELF header"));
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders) {
    return Status::InvalidArg(path + ": no usable program headers (e_phnum " +
                              std::to_string(eh.e_phnum) + ", e_phentsize " +
                              std::to_string(eh.e_phentsize) + ")");
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  TG_RETURN_IF_ERROR(
      f.Read(eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr), "program header table"));
  return ph;
}

Result<std::vector<Elf64_Dyn>> ReadDynamicEntries(const ElfFile& f, const std::string& path,
                                                  const std::vector<Elf64_Phdr>& ph) {
  const Elf64_Phdr* dyn = nullptr;
  for (const auto& p : ph) {
    if (p.p_type == PT_DYNAMIC) dyn = &p;
  }
  if (dyn == nullptr) return Status::InvalidArg(path + ": no PT_DYNAMIC segment (static binary?)");
  std::size_t count = static_cast<std::size_t>(dyn->p_filesz / sizeof(Elf64_Dyn));
  if (count == 0 || count > kMaxDynamicEntries) {
    return Status::InvalidArg(path + ": implausible dynamic section size " +
                              std::to_string(dyn->p_filesz));
  }
  std::vector<Elf64_Dyn> entries(count);
  TG_RETURN_IF_ERROR(
      f.Read(dyn->p_offset, entries.data(), count * sizeof(Elf64_Dyn), "dynamic section"));
  return entries;
}

// The dynamic entries ReadElfDynamic uses, up to DT_NULL; string values are offsets into
// DT_STRTAB.
struct DynamicRefs {
  std::optional<std::uint64_t> strtab_vaddr, strsz;
  std::vector<std::uint64_t> needed_off;
  std::optional<std::uint64_t> soname_off, runpath_off, rpath_off;
};

DynamicRefs CollectDynamicRefs(const std::vector<Elf64_Dyn>& entries) {
  DynamicRefs r;
  for (const auto& d : entries) {
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_STRTAB:
        r.strtab_vaddr = d.d_un.d_ptr;
        break;
      case DT_STRSZ:
        r.strsz = d.d_un.d_val;
        break;
      case DT_NEEDED:
        r.needed_off.push_back(d.d_un.d_val);
        break;
      case DT_SONAME:
        r.soname_off = d.d_un.d_val;
        break;
      case DT_RUNPATH:
        r.runpath_off = d.d_un.d_val;
        break;
      case DT_RPATH:
        r.rpath_off = d.d_un.d_val;
        break;
      default:
        break;
    }
  }
  return r;
}

// DT_STRTAB is a virtual address: map it to a file offset through the PT_LOAD that holds it,
// as the dynamic linker would.
std::optional<std::uint64_t> VaddrToFileOffset(const std::vector<Elf64_Phdr>& ph,
                                               std::uint64_t vaddr) {
  for (const auto& p : ph) {
    if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) {
      return p.p_offset + (vaddr - p.p_vaddr);
    }
  }
  return std::nullopt;
}

Result<ElfDynamicInfo> ResolveDynamicStrings(const ElfFile& f, const std::string& path,
                                             const DynamicRefs& refs, std::uint64_t strtab_off) {
  auto str = [&](std::uint64_t off) -> Result<std::string> {
    if (refs.strsz && off >= *refs.strsz) {
      return Status::InvalidArg(path + ": dynamic string offset " + std::to_string(off) +
                                " beyond DT_STRSZ " + std::to_string(*refs.strsz));
    }
    return f.String(strtab_off + off);
  };
  ElfDynamicInfo info;
  for (auto off : refs.needed_off) {
    TG_ASSIGN_OR_RETURN(std::string s, str(off));
    info.needed.push_back(std::move(s));
  }
  if (refs.soname_off) {
    TG_ASSIGN_OR_RETURN(info.soname, str(*refs.soname_off));
  }
  if (refs.runpath_off || refs.rpath_off) {
    TG_ASSIGN_OR_RETURN(info.runpath, str(refs.runpath_off ? *refs.runpath_off : *refs.rpath_off));
  }
  return info;
}

}  // namespace

Result<ElfDynamicInfo> ReadElfDynamic(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    int e = errno;
    std::string msg = path + ": " + std::strerror(e);
    return e == ENOENT ? Status::NotFound(msg) : Status::InvalidArg(msg);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::InvalidArg(path + ": not a regular file");
  }
  auto file_size = static_cast<std::uint64_t>(st.st_size);
  ElfFile f(fd.get(), path, file_size);
  TG_ASSIGN_OR_RETURN(std::vector<Elf64_Phdr> ph, ReadProgramHeaders(f, path, file_size));
  TG_ASSIGN_OR_RETURN(std::vector<Elf64_Dyn> entries, ReadDynamicEntries(f, path, ph));
  DynamicRefs refs = CollectDynamicRefs(entries);
  if (!refs.strtab_vaddr) return Status::InvalidArg(path + ": dynamic section has no DT_STRTAB");
  std::optional<std::uint64_t> strtab_off = VaddrToFileOffset(ph, *refs.strtab_vaddr);
  if (!strtab_off) {
    return Status::InvalidArg(path + ": DT_STRTAB address is outside every loadable segment");
  }
  return ResolveDynamicStrings(f, path, refs, *strtab_off);
}

std::optional<int> SonameMajor(const std::string& soname, const std::string& stem) {
  std::string prefix = stem + ".so.";
  if (soname.rfind(prefix, 0) != 0) return std::nullopt;
  std::size_t i = prefix.size();
  int major = 0;
  std::size_t digits = 0;
  while (i < soname.size() && soname[i] >= '0' && soname[i] <= '9' && digits < 6) {
    major = major * 10 + (soname[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0 || (i < soname.size() && soname[i] != '.')) return std::nullopt;
  return major;
}

std::optional<int> MajorFromNeeded(const std::vector<std::string>& needed,
                                   const std::vector<std::string>& stems) {
  for (const auto& stem : stems) {
    for (const auto& n : needed) {
      if (auto m = SonameMajor(n, stem)) return m;
    }
  }
  return std::nullopt;
}

}  // namespace tg::probe
