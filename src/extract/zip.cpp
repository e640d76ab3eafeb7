// zip.cpp — reading a ZIP (a wheel) member by member with libarchive's seekable ZIP reader, which
// walks the central directory. See envlock/extract.hpp (read_zip) for the contract.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "caps.hpp"
#include "envlock/extract.hpp"

namespace envlock {

namespace fs = std::filesystem;

struct ZipMemberReader::State {
  archive* a = nullptr;
  fs::path archive_path;
  detail::ContentCap cap;
  std::uint64_t bytes = 0;  // content handed over so far, all members together
  std::string member;       // the member being read, for errors
  std::vector<char> buf = std::vector<char>(1 << 16);
  bool done = false;        // the member's end was reached
};

namespace {

struct ReadDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};

Error corrupt(const ZipMemberReader::State& s, const std::string& at) {
  const char* why = archive_error_string(s.a);
  return Error{ErrorKind::Integrity, s.archive_path.string(),
               "corrupt or truncated ZIP archive" + at + ": " + (why != nullptr ? why : "unreadable"), "",
               "delete the file and download it again; if it persists, report it to the index"};
}

Error too_large(const ZipMemberReader::State& s) {
  return Error{ErrorKind::Integrity, s.archive_path.string(),
               "refused at member '" + s.member + "': the archive expands past " + s.cap.name, "",
               "an archive past these caps is refused as a decompression bomb (docs/cache.md, Caps)"};
}

ZipMember::Kind kind_of(mode_t type) {
  switch (type) {
    case AE_IFREG:
    case 0:  // a Unix-made member whose attributes hold no type: a file, as zipfile reads it
      return ZipMember::Kind::File;
    case AE_IFDIR:
      return ZipMember::Kind::Directory;
    case AE_IFLNK:
      return ZipMember::Kind::Symlink;
    case AE_IFCHR:
    case AE_IFBLK:
      return ZipMember::Kind::Device;
    case AE_IFIFO:
      return ZipMember::Kind::Fifo;
    case AE_IFSOCK:
      return ZipMember::Kind::Socket;
    default:
      return ZipMember::Kind::Other;
  }
}

}  // namespace

Result<std::string_view> ZipMemberReader::next() {
  State& s = *state_;
  if (s.done) return std::string_view();
  const la_ssize_t n = archive_read_data(s.a, s.buf.data(), s.buf.size());
  if (n < 0) return corrupt(s, " at member '" + s.member + "'");
  if (n == 0) {
    s.done = true;
    return std::string_view();
  }
  s.bytes += static_cast<std::uint64_t>(n);
  if (s.bytes > s.cap.bytes) return too_large(s);
  return std::string_view(s.buf.data(), static_cast<std::size_t>(n));
}

Status read_zip(const fs::path& archive_path, const ZipVisitor& visit, const ExtractLimits& limits) {
  std::unique_ptr<archive, ReadDeleter> a(archive_read_new());
  archive_read_support_format_zip_seekable(a.get());
  ZipMemberReader::State state;
  state.a = a.get();
  state.archive_path = archive_path;
  state.cap = detail::content_cap(archive_path, limits);
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const int err = archive_errno(a.get());
    if (err == ENOENT || err == EACCES || err == EISDIR) {
      return Error{ErrorKind::Io, archive_path.string(), std::string("cannot open: ") + std::strerror(err)};
    }
    return corrupt(state, "");
  }
  std::uint64_t entries = 0;
  archive_entry* e = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return corrupt(state, entries == 0 ? "" : " after member '" + state.member + "'");
    if (++entries > limits.max_entries) {
      return Error{ErrorKind::Integrity, archive_path.string(),
                   "refused at member " + std::to_string(entries) + ": more members than the cap of " +
                       std::to_string(limits.max_entries) + " members per archive",
                   "", "the archive is malformed or malicious"};
    }
    ZipMember m;
    const char* utf8 = archive_entry_pathname_utf8(e);
    const char* raw = utf8 != nullptr ? utf8 : archive_entry_pathname(e);
    m.name = raw != nullptr ? raw : "";
    m.kind = kind_of(archive_entry_filetype(e));
    m.mode = static_cast<std::uint32_t>(archive_entry_perm(e));
    if (archive_entry_size_is_set(e) != 0) m.size = static_cast<std::uint64_t>(std::max<la_int64_t>(0, archive_entry_size(e)));
    if (m.kind == ZipMember::Kind::Symlink && archive_entry_symlink(e) != nullptr) m.link_target = archive_entry_symlink(e);
    state.member = m.name;
    state.done = false;
    if (m.kind == ZipMember::Kind::File && m.size && state.bytes + *m.size > state.cap.bytes) return too_large(state);
    ZipMemberReader reader(state);
    if (auto s = visit(m, reader); !s.ok()) return s;
  }
  return ok_status();
}

}  // namespace envlock
