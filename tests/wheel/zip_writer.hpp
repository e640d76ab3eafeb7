#pragma once
// tests/wheel/zip_writer.hpp — a tiny ZIP writer (PKWARE APPNOTE 4.3: stored members, local
// headers, central directory, end record) for generated and hostile wheels. It writes exactly
// what it is told: names with `..`, two members of one name, a symlink's mode, a central
// directory that declares another size than the data has. Header-only; no library.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace envlock::testing {

struct ZipEntry {
  std::string name;
  std::string data;
  /// st_mode written in the upper 16 bits of the external attributes (Unix-made member):
  /// 0100644 a file, 0100755 an executable, 0120777 a symlink (data = target), 040755 a folder.
  std::uint32_t unix_mode = 0100644;
  /// The sizes both headers declare (libarchive reads the local header's); the data's size when unset.
  std::optional<std::uint32_t> declared_size;
};

inline std::uint32_t zip_crc32(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/// The bytes of a ZIP holding `entries` in this order (stored, no compression).
inline std::string zip_bytes(const std::vector<ZipEntry>& entries) {
  std::string out, central;
  auto u16 = [](std::string& s, std::uint32_t v) {
    s += static_cast<char>(v & 0xFF);
    s += static_cast<char>((v >> 8) & 0xFF);
  };
  auto u32 = [&](std::string& s, std::uint32_t v) {
    u16(s, v & 0xFFFF);
    u16(s, v >> 16);
  };
  for (const ZipEntry& e : entries) {
    const std::uint32_t offset = static_cast<std::uint32_t>(out.size());
    const std::uint32_t crc = zip_crc32(e.data);
    const auto size = static_cast<std::uint32_t>(e.data.size());
    u32(out, 0x04034b50);
    u16(out, 20);
    u16(out, 0x0800);  // UTF-8 names
    u16(out, 0);       // stored
    u16(out, 0);       // time
    u16(out, 0x21);    // date: 1980-01-01
    u32(out, crc);
    u32(out, e.declared_size.value_or(size));
    u32(out, e.declared_size.value_or(size));
    u16(out, static_cast<std::uint32_t>(e.name.size()));
    u16(out, 0);
    out += e.name;
    out += e.data;
    u32(central, 0x02014b50);
    u16(central, (3u << 8) | 20u);  // made by Unix
    u16(central, 20);
    u16(central, 0x0800);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0x21);
    u32(central, crc);
    u32(central, e.declared_size.value_or(size));
    u32(central, e.declared_size.value_or(size));
    u16(central, static_cast<std::uint32_t>(e.name.size()));
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u32(central, e.unix_mode << 16);
    u32(central, offset);
    central += e.name;
  }
  const std::uint32_t cd_offset = static_cast<std::uint32_t>(out.size());
  out += central;
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, static_cast<std::uint32_t>(entries.size()));
  u16(out, static_cast<std::uint32_t>(entries.size()));
  u32(out, static_cast<std::uint32_t>(central.size()));
  u32(out, cd_offset);
  u16(out, 0);
  return out;
}

inline void write_zip(const std::filesystem::path& path, const std::vector<ZipEntry>& entries) {
  std::ofstream(path, std::ios::binary) << zip_bytes(entries);
}

}  // namespace envlock::testing
