// Platform: conda subdirs (conda/base/constants.py KNOWN_SUBDIRS, rattler_conda_types::Platform).
#include "envlock/platform.hpp"

#include <algorithm>

namespace envlock {

const std::vector<std::string>& Platform::known() {
  static const std::vector<std::string> kKnown = {
      "noarch",        "emscripten-wasm32", "wasi-wasm32",  "freebsd-64",   "linux-32",
      "linux-64",      "linux-aarch64",     "linux-armv6l", "linux-armv7l", "linux-ppc64",
      "linux-ppc64le", "linux-riscv64",     "linux-s390x",  "osx-64",       "osx-arm64",
      "win-32",        "win-64",            "win-arm64",    "zos-z"};
  return kKnown;
}

Result<Platform> Platform::parse(std::string_view subdir) {
  const auto& k = known();
  if (std::find(k.begin(), k.end(), subdir) != k.end()) return Platform(std::string(subdir));
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = std::string(subdir);
  e.message = "unknown platform (conda subdir) '" + std::string(subdir) + "'";
  std::string list;
  for (const auto& s : k) list += (list.empty() ? "" : ", ") + s;
  e.hint = "use one of: " + list;
  return e;
}

Platform Platform::noarch() { return Platform("noarch"); }

Platform Platform::host() {
#if defined(__linux__)
#if defined(__x86_64__)
  return Platform("linux-64");
#elif defined(__aarch64__)
  return Platform("linux-aarch64");
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  return Platform("linux-ppc64le");
#elif defined(__powerpc64__)
  return Platform("linux-ppc64");
#elif defined(__s390x__)
  return Platform("linux-s390x");
#elif defined(__riscv) && __riscv_xlen == 64
  return Platform("linux-riscv64");
#elif defined(__ARM_ARCH_7A__)
  return Platform("linux-armv7l");
#elif defined(__ARM_ARCH_6__)
  return Platform("linux-armv6l");
#elif defined(__i386__)
  return Platform("linux-32");
#else
#error "envlock: unsupported Linux architecture (no conda subdir)"
#endif
#elif defined(__APPLE__)
#if defined(__aarch64__) || defined(__arm64__)
  return Platform("osx-arm64");
#else
  return Platform("osx-64");
#endif
#elif defined(_WIN32)
#if defined(_M_ARM64)
  return Platform("win-arm64");
#elif defined(_WIN64)
  return Platform("win-64");
#else
  return Platform("win-32");
#endif
#elif defined(__FreeBSD__)
  return Platform("freebsd-64");
#else
#error "envlock: unsupported operating system (no conda subdir)"
#endif
}

std::string Platform::arch() const {
  if (is_noarch()) return {};
  std::string a = name_.substr(name_.find('-') + 1);
  if (a == "64") return name_ == "zos-z" ? "z" : "x86_64";
  if (a == "32") return "x86";
  return a;  // aarch64, arm64, armv6l, armv7l, ppc64, ppc64le, riscv64, s390x, wasm32, z
}

}  // namespace envlock
