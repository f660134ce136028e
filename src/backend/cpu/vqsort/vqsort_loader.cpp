#include "backend/cpu/vqsort/vqsort_loader.h"

#include <dlfcn.h>

#include "jx/error.h"

namespace jx::cpu {

const VqsortFunctions& load_vqsort_module(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    detail::fail("sort", "cannot load Highway's vqsort module ", path, ": ", why ? why : "unknown reason",
                 " (it is built and installed beside libjx)");
  }
  using Entry = const VqsortFunctions* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kVqsortEntryPoint));
  const VqsortFunctions* functions = entry ? entry() : nullptr;
  if (!functions) {
    dlclose(handle);
    detail::fail("sort", path, " is not jx's vqsort module: it has no ", kVqsortEntryPoint);
  }
  if (functions->abi_version != kVqsortAbiVersion) {
    const int version = functions->abi_version;
    dlclose(handle);
    detail::fail("sort", "the vqsort module ", path, " has interface version ", version, ", this libjx needs ",
                 kVqsortAbiVersion, " (a module left from another jx install)");
  }
  return *functions;  // the module stays loaded for the process's life
}

namespace {

// libjx_vqsort.so in libjx's own directory (the build tree's, or the install's), else
// wherever the dynamic loader's search path finds it.
std::string module_path() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&load_vqsort_module), &info) && info.dli_fname) {
    const std::string library = info.dli_fname;
    if (const size_t slash = library.rfind('/'); slash != std::string::npos)
      return library.substr(0, slash + 1) + kVqsortModuleName;
  }
  return kVqsortModuleName;
}

}  // namespace

const VqsortFunctions& vqsort() {
  static const VqsortFunctions& functions = load_vqsort_module(module_path());
  return functions;
}

}  // namespace jx::cpu
