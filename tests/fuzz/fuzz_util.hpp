#pragma once
// Helpers shared by the fuzz targets (tests/fuzz/README.md): the input as text, and a scratch
// folder of this process for the readers that take a path (dist-info, paths.json, archives).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace envlock::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A folder of this process (under $TMPDIR or /tmp), emptied on every call.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    const char* t = std::getenv("TMPDIR");
    return std::filesystem::path(t != nullptr && *t == '/' ? t : "/tmp") /
           ("envlock-fuzz-" + std::to_string(::getpid()));
  }();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace envlock::fuzz
