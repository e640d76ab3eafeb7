// ref_unpack — the reference of the cold-install benchmark (issue 6): what the libraries alone cost
// to check and unpack a set of .conda archives. For each archive: sha256 of its bytes with
// OpenSSL's EVP, then full decompression and extraction of every `*.tar.zst` member with
// libarchive (zip outer, zstd + tar inner) and archive_write_disk into DEST/<archive stem>/.
// Archives are spread over N threads (default: the CPU count, as envlock's cache extracts).
//
// usage: ref_unpack [-j N] DEST ARCHIVE...
// Prints "archives=<n> bytes=<total archive bytes> files=<files written>" on success; exit 1
// with a message naming the archive on any error.
#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Outer {
  archive* a;
  std::vector<char> buf = std::vector<char>(1 << 16);
};

la_ssize_t outer_read(archive*, void* data, const void** out) {
  auto* o = static_cast<Outer*>(data);
  const la_ssize_t n = archive_read_data(o->a, o->buf.data(), o->buf.size());
  *out = o->buf.data();
  return n;
}

bool sha256_file(const std::string& path, unsigned long long& bytes, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = "cannot open";
    return false;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<unsigned char> buf(1 << 16);
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    EVP_DigestUpdate(ctx, buf.data(), n);
    bytes += n;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::fclose(f);
  return len == 32;
}

bool unpack(const std::string& path, const std::filesystem::path& dest, unsigned long long& files, std::string& error) {
  std::filesystem::create_directories(dest);
  archive* outer = archive_read_new();
  archive_read_support_format_zip(outer);
  if (archive_read_open_filename(outer, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    error = archive_error_string(outer);
    archive_read_free(outer);
    return false;
  }
  archive* disk = archive_write_disk_new();
  archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                           ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  bool ok = true;
  archive_entry* e = nullptr;
  while (ok && archive_read_next_header(outer, &e) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(e);
    if (name.size() < 8 || name.compare(name.size() - 8, 8, ".tar.zst") != 0) {
      archive_read_data_skip(outer);
      continue;
    }
    Outer src{outer};
    archive* inner = archive_read_new();
    archive_read_support_filter_zstd(inner);
    archive_read_support_format_tar(inner);
    if (archive_read_open(inner, &src, nullptr, &outer_read, nullptr) != ARCHIVE_OK) {
      error = archive_error_string(inner);
      ok = false;
    }
    archive_entry* ie = nullptr;
    while (ok && archive_read_next_header(inner, &ie) == ARCHIVE_OK) {
      const std::string target = (dest / archive_entry_pathname(ie)).string();
      archive_entry_set_pathname(ie, target.c_str());
      if (archive_write_header(disk, ie) != ARCHIVE_OK) {
        error = archive_error_string(disk);
        ok = false;
        break;
      }
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      int r = ARCHIVE_OK;
      while ((r = archive_read_data_block(inner, &block, &size, &offset)) == ARCHIVE_OK) {
        if (archive_write_data_block(disk, block, size, offset) != ARCHIVE_OK) {
          error = archive_error_string(disk);
          ok = false;
          break;
        }
      }
      if (r != ARCHIVE_EOF && ok) {
        error = archive_error_string(inner);
        ok = false;
      }
      archive_write_finish_entry(disk);
      ++files;
    }
    archive_read_free(inner);
  }
  archive_write_free(disk);
  archive_read_free(outer);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "-j") == 0) {
    threads = std::max(1, std::atoi(argv[i + 1]));
    i += 2;
  }
  if (argc - i < 2) {
    std::fprintf(stderr, "usage: ref_unpack [-j N] DEST ARCHIVE...\n");
    return 2;
  }
  const std::filesystem::path dest = argv[i++];
  std::vector<std::string> archives(argv + i, argv + argc);
  std::atomic<std::size_t> next{0};
  std::atomic<unsigned long long> bytes{0}, files{0};
  std::mutex mu;
  std::string failure;
  auto worker = [&] {
    for (std::size_t k; (k = next++) < archives.size();) {
      unsigned long long b = 0, f = 0;
      std::string error;
      const std::string& path = archives[k];
      std::string stem = std::filesystem::path(path).filename().string();
      if (!sha256_file(path, b, error) || !unpack(path, dest / stem.substr(0, stem.size() - 6), f, error)) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty()) failure = path + ": " + error;
        return;
      }
      bytes += b;
      files += f;
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < std::min(threads, archives.size()); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (!failure.empty()) {
    std::fprintf(stderr, "ref_unpack: %s\n", failure.c_str());
    return 1;
  }
  std::printf("archives=%zu bytes=%llu files=%llu\n", archives.size(), bytes.load(), files.load());
  return 0;
}
