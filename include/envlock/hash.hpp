#pragma once
// envlock/hash.hpp — streaming SHA-256 and MD5 (OpenSSL 3 EVP), as conda records them:
// lower-case hexadecimal digests (repodata `sha256`/`md5`, paths.json `sha256`).
// SHA-256 is FIPS 180-4; MD5 is RFC 1321 and is used only to check records that carry nothing
// else. No OpenSSL type crosses this header.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// The digest algorithms conda metadata uses.
enum class HashAlgorithm { Sha256, Md5 };

/// Incremental hasher: update() any number of times, then hex_digest() once.
/// Move-only; a moved-from hasher must not be used.
class Hasher {
 public:
  explicit Hasher(HashAlgorithm algorithm);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  /// Feeds `size` bytes at `data` (size may be 0).
  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

  /// Finishes and returns the digest as lower-case hex (64 chars for SHA-256, 32 for MD5).
  /// The hasher is reset afterwards and can be reused for new input.
  [[nodiscard]] std::string hex_digest();

  /// Total bytes fed since construction or the last hex_digest().
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] HashAlgorithm algorithm() const { return algorithm_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  HashAlgorithm algorithm_;
  std::uint64_t bytes_ = 0;
};

/// Digests of one file computed in a single read pass.
struct FileDigests {
  std::uint64_t size = 0;  ///< bytes read
  std::string sha256;      ///< lower-case hex
  std::string md5;         ///< lower-case hex
};

/// Reads `path` once and returns its size, SHA-256 and MD5. ErrorKind::Io (naming the file)
/// when it cannot be opened or read.
Result<FileDigests> digest_file(const std::filesystem::path& path);

/// Hex digest of a file with one algorithm. ErrorKind::Io naming the file on failure.
Result<std::string> hash_file(const std::filesystem::path& path, HashAlgorithm algorithm);

/// Hex digest of an in-memory buffer.
std::string hash_bytes(std::string_view bytes, HashAlgorithm algorithm);

/// True when `hex` is a well-formed digest for `algorithm` (64 or 32 hex digits, any case).
bool is_hex_digest(std::string_view hex, HashAlgorithm algorithm);

/// Compares two hex digests ignoring case.
bool digest_equal(std::string_view a, std::string_view b);

}  // namespace envlock
