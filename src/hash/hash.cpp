// hash.cpp — Hasher over OpenSSL 3 EVP; file digests in one read pass.
#include "envlock/hash.hpp"

#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "envlock/encoding.hpp"

namespace envlock {

struct Hasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
  const EVP_MD* md = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

namespace {

const EVP_MD* md_for(HashAlgorithm algorithm) {
  return algorithm == HashAlgorithm::Sha256 ? EVP_sha256() : EVP_md5();
}

void init_or_throw(EVP_MD_CTX* ctx, const EVP_MD* md) {
  // Failure here means OpenSSL itself is broken (e.g. MD5 disabled by a FIPS provider config):
  // a broken invariant, not an input error.
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot initialise digest");
  }
}

std::string to_hex(const unsigned char* bytes, unsigned len) {
  return hex_encode(std::string_view(reinterpret_cast<const char*>(bytes), len));
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

Hasher::Hasher(HashAlgorithm algorithm) : impl_(std::make_unique<Impl>()), algorithm_(algorithm) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr) throw std::bad_alloc();
  impl_->md = md_for(algorithm);
  init_or_throw(impl_->ctx, impl_->md);
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(const void* data, std::size_t size) {
  if (size == 0) return;
  if (EVP_DigestUpdate(impl_->ctx, data, size) != 1) {
    throw std::runtime_error("OpenSSL: digest update failed");
  }
  bytes_ += size;
}

std::string Hasher::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, out.data(), &len) != 1) {
    throw std::runtime_error("OpenSSL: digest final failed");
  }
  init_or_throw(impl_->ctx, impl_->md);
  bytes_ = 0;
  return to_hex(out.data(), len);
}

Result<FileDigests> digest_file(const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Error{ErrorKind::Io, path.string(), std::string("cannot open file: ") + std::strerror(errno)};
  }
  Hasher sha(HashAlgorithm::Sha256);
  Hasher md5(HashAlgorithm::Md5);
  std::array<char, 1 << 16> buf{};
  std::uint64_t total = 0;
  for (;;) {
    std::size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n > 0) {
      sha.update(buf.data(), n);
      md5.update(buf.data(), n);
      total += n;
    }
    if (n < buf.size()) {
      if (std::ferror(f) != 0) {
        int err = errno;
        std::fclose(f);
        return Error{ErrorKind::Io, path.string(), std::string("cannot read file: ") + std::strerror(err)};
      }
      break;
    }
  }
  std::fclose(f);
  return FileDigests{total, sha.hex_digest(), md5.hex_digest()};
}

Result<std::string> hash_file(const std::filesystem::path& path, HashAlgorithm algorithm) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Error{ErrorKind::Io, path.string(), std::string("cannot open file: ") + std::strerror(errno)};
  }
  Hasher h(algorithm);
  std::array<char, 1 << 16> buf{};
  for (;;) {
    std::size_t n = std::fread(buf.data(), 1, buf.size(), f);
    h.update(buf.data(), n);
    if (n < buf.size()) {
      if (std::ferror(f) != 0) {
        int err = errno;
        std::fclose(f);
        return Error{ErrorKind::Io, path.string(), std::string("cannot read file: ") + std::strerror(err)};
      }
      break;
    }
  }
  std::fclose(f);
  return h.hex_digest();
}

std::string hash_bytes(std::string_view bytes, HashAlgorithm algorithm) {
  Hasher h(algorithm);
  h.update(bytes);
  return h.hex_digest();
}

bool is_hex_digest(std::string_view hex, HashAlgorithm algorithm) {
  const std::size_t want = algorithm == HashAlgorithm::Sha256 ? 64 : 32;
  if (hex.size() != want) return false;
  for (char c : hex) {
    const char l = lower(c);
    if (!((l >= '0' && l <= '9') || (l >= 'a' && l <= 'f'))) return false;
  }
  return true;
}

bool digest_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace envlock
