#include "probe/provider_libs.h"

#include "probe/elf.h"

namespace tg::probe {

common::DynamicLibrary LoadLibraryInto(const common::LibraryLoader& loader,
                                       const std::string& soname, LibInfo* out) {
  out->soname = soname;
  auto lib = loader.Load(soname);
  if (!lib.ok()) {
    out->loaded = false;
    // The loader prefixes NOT_FOUND messages with the soname, and dlerror() already starts with
    // it: keep the dynamic linker's text verbatim ("libcuda.so.1: cannot open shared object
    // file: No such file or directory").
    std::string msg = lib.status().message();
    std::string twice = soname + ": " + soname + ":";
    if (msg.rfind(twice, 0) == 0) msg = msg.substr(soname.size() + 2);
    out->error = msg;
    return {};
  }
  out->loaded = true;
  out->resolved_path = lib->resolved_path();
  return std::move(lib).value();
}

void ReadProviderElf(const common::LibraryLoader& loader, ProviderLibrary* p) {
  p->file = loader.FindInSearchDirs(p->library.soname);
  if (p->file.empty()) {
    p->elf_error = p->library.soname + " not found in the search dirs";
    return;
  }
  auto info = ReadElfDynamic(p->file);
  if (!info.ok()) {
    p->elf_error = info.status().message();
    return;
  }
  p->needed = info->needed;
  p->cuda_major = MajorFromNeeded(p->needed, {"libcudart", "libcublas", "libcublasLt"});
  p->cudnn_major = MajorFromNeeded(p->needed, {"libcudnn"});
  p->tensorrt_major = MajorFromNeeded(p->needed, {"libnvinfer"});
}

}  // namespace tg::probe
