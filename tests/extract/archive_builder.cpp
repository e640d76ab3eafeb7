#include "archive_builder.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <stdexcept>

namespace envlock::testing {

TestEntry file(std::string path, std::string data, mode_t perm) {
  TestEntry e;
  e.path = std::move(path);
  e.data = std::move(data);
  e.perm = perm;
  return e;
}
TestEntry dir(std::string path) {
  TestEntry e;
  e.kind = TestEntry::Kind::Dir;
  e.path = std::move(path);
  e.perm = 0755;
  return e;
}
TestEntry symlink(std::string path, std::string target) {
  TestEntry e;
  e.kind = TestEntry::Kind::Symlink;
  e.path = std::move(path);
  e.target = std::move(target);
  e.perm = 0777;
  return e;
}
TestEntry hardlink(std::string path, std::string target) {
  TestEntry e;
  e.kind = TestEntry::Kind::Hardlink;
  e.path = std::move(path);
  e.target = std::move(target);
  return e;
}

namespace {

la_ssize_t append(struct archive*, void* client, const void* buf, size_t n) {
  static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

void check(int r, struct archive* a) {
  if (r < ARCHIVE_WARN) throw std::runtime_error(archive_error_string(a));
}

void add_entry(struct archive* a, const std::string& path, mode_t type, mode_t perm, const std::string& data,
               std::time_t mtime) {
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, path.c_str());
  archive_entry_set_filetype(e, type);
  archive_entry_set_perm(e, perm);
  archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
  archive_entry_set_mtime(e, mtime, 0);
  check(archive_write_header(a, e), a);
  if (!data.empty()) archive_write_data(a, data.data(), data.size());
  archive_entry_free(e);
}

}  // namespace

std::string make_tar(const std::vector<TestEntry>& entries, const std::string& compression) {
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (compression == "bzip2") archive_write_add_filter_bzip2(a);
  if (compression == "zstd") archive_write_add_filter_zstd(a);
  archive_write_set_bytes_in_last_block(a, 1);
  check(archive_write_open(a, &out, nullptr, &append, nullptr), a);
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.path.c_str());
    archive_entry_set_perm(e, t.perm);
    archive_entry_set_mtime(e, t.mtime, 0);
    switch (t.kind) {
      case TestEntry::Kind::File:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
        break;
      case TestEntry::Kind::Dir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TestEntry::Kind::Symlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t.target.c_str());
        break;
      case TestEntry::Kind::Hardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t.target.c_str());
        archive_entry_set_size(e, 0);
        break;
      case TestEntry::Kind::CharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdev(e, makedev(1, 3));
        break;
      case TestEntry::Kind::Fifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    check(archive_write_header(a, e), a);
    if (t.kind == TestEntry::Kind::File && !t.data.empty()) archive_write_data(a, t.data.data(), t.data.size());
    archive_entry_free(e);
  }
  check(archive_write_close(a), a);
  archive_write_free(a);
  return out;
}

void write_tar_bz2(const std::filesystem::path& path, const std::vector<TestEntry>& entries) {
  std::ofstream(path, std::ios::binary) << make_tar(entries, "bzip2");
}

void write_conda(const std::filesystem::path& path, const std::vector<TestEntry>& info,
                 const std::vector<TestEntry>& pkg) {
  std::string stem = path.filename().string();
  stem = stem.substr(0, stem.size() - 6);
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_zip(a);
  archive_write_set_options(a, "zip:compression=store");
  check(archive_write_open(a, &out, nullptr, &append, nullptr), a);
  add_entry(a, "metadata.json", AE_IFREG, 0644, R"({"conda_pkg_format_version": 2})", 1700000000);
  add_entry(a, "pkg-" + stem + ".tar.zst", AE_IFREG, 0644, make_tar(pkg, "zstd"), 1700000000);
  add_entry(a, "info-" + stem + ".tar.zst", AE_IFREG, 0644, make_tar(info, "zstd"), 1700000000);
  check(archive_write_close(a), a);
  archive_write_free(a);
  std::ofstream(path, std::ios::binary) << out;
}

}  // namespace envlock::testing
