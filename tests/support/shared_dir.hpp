// Where the tests find the shared corpus (../shared/corpus): read when a test runs, not when the
// tests were configured, so `ENVLOCK_SHARED_DIR=DIR ./scripts/test` (README) and
// `ENVLOCK_SHARED_DIR=DIR ctest ...` use DIR. Every test target includes this header first
// (tests/CMakeLists.txt passes it with -include), so ENVLOCK_SHARED_DIR below is what tests use.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace envlock::testing {

/// The shared folder as an absolute, normalised path: $ENVLOCK_SHARED_DIR when set and not empty
/// (relative to the working directory), else the folder chosen when the tests were configured
/// (ENVLOCK_SHARED_DIR_DEFAULT: ../shared beside the checkout, or -DENVLOCK_SHARED_DIR=DIR). Read
/// on every call. The folder may be absent: corpus tests then skip, naming it.
inline std::string shared_dir() {
  const char* env = std::getenv("ENVLOCK_SHARED_DIR");
  const std::filesystem::path dir = env != nullptr && *env != '\0' ? env : ENVLOCK_SHARED_DIR_DEFAULT;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  if (ec) abs = dir;
  std::string s = abs.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace envlock::testing

/// The shared folder (see shared_dir()); a std::string, not a literal.
#define ENVLOCK_SHARED_DIR (::envlock::testing::shared_dir())
