// write.cpp — writing archives with libarchive: zstd-compressed tars (bundles, the inner tars of a
// .conda) and .conda packages (CEP-2). See envlock/extract.hpp for the contract.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "envlock/extract.hpp"
#include "envlock/paths.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

struct WriteDeleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
using WriteArchive = std::unique_ptr<archive, WriteDeleter>;

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using Entry = std::unique_ptr<archive_entry, EntryDeleter>;

std::atomic<unsigned> g_write_counter{0};

Error write_error(const fs::path& path, archive* a, const std::string& what) {
  const char* why = a != nullptr ? archive_error_string(a) : nullptr;
  const int err = a != nullptr ? archive_errno(a) : 0;
  return Error{ErrorKind::Io, path.string(), what + ": " + (why != nullptr ? why : std::strerror(err != 0 ? err : EIO)), "",
               err == ENOSPC ? "free some disk space and run the command again" : ""};
}

/// A sibling temporary name for `path` (same folder, so rename() is atomic).
fs::path temp_beside(const fs::path& path, const std::string& tag) {
  return path.parent_path() / ("." + path.filename().string() + "." + tag + "-" + std::to_string(::getpid()) + "-" +
                               std::to_string(g_write_counter++));
}

/// The checks every entry passes before anything is written: relative, no `.`/`..` component, no
/// duplicate, a symlink target that is relative.
Status check_entries(const fs::path& archive_path, const std::vector<ArchiveEntry>& entries) {
  std::set<std::string> seen;
  for (const auto& e : entries) {
    auto bad = [&](const std::string& why) {
      return Error{ErrorKind::Usage, archive_path.string(), "cannot write entry '" + e.path + "': " + why, "", ""};
    };
    if (e.path.empty() || e.path.front() == '/') return bad("the path must be relative and not empty");
    std::size_t i = 0;
    while (i <= e.path.size()) {
      std::size_t j = e.path.find('/', i);
      if (j == std::string::npos) j = e.path.size();
      const std::string_view c(e.path.data() + i, j - i);
      if (c.empty() || c == "." || c == "..") return bad("empty, '.' or '..' path component");
      i = j + 1;
    }
    if (!seen.insert(e.path).second) return bad("listed twice");
    if (e.kind == ArchiveEntry::Kind::Symlink && (e.link_target.empty() || e.link_target.front() == '/')) {
      return bad("a symlink target must be relative and not empty");
    }
    if (e.kind == ArchiveEntry::Kind::File && !e.source.empty() && !e.content.empty()) return bad("both a source file and content");
  }
  return ok_status();
}

/// Writes `entries` into the open archive `a` (its format and filters set). `path` names the
/// archive in errors.
Status write_entries(archive* a, const fs::path& path, const std::vector<ArchiveEntry>& entries) {
  std::vector<char> buf(1 << 17);
  for (const auto& e : entries) {
    Entry ent(archive_entry_new());
    archive_entry_set_pathname(ent.get(), e.path.c_str());
    archive_entry_set_mtime(ent.get(), e.mtime, 0);
    archive_entry_set_uid(ent.get(), 0);
    archive_entry_set_gid(ent.get(), 0);
    archive_entry_set_uname(ent.get(), "root");
    archive_entry_set_gname(ent.get(), "root");
    int fd = -1;
    switch (e.kind) {
      case ArchiveEntry::Kind::Directory:
        archive_entry_set_filetype(ent.get(), AE_IFDIR);
        archive_entry_set_perm(ent.get(), e.mode & 07777);
        break;
      case ArchiveEntry::Kind::Symlink:
        archive_entry_set_filetype(ent.get(), AE_IFLNK);
        archive_entry_set_perm(ent.get(), 0777);
        archive_entry_set_symlink(ent.get(), e.link_target.c_str());
        break;
      case ArchiveEntry::Kind::File: {
        archive_entry_set_filetype(ent.get(), AE_IFREG);
        archive_entry_set_perm(ent.get(), e.mode & 07777);
        std::uint64_t size = e.content.size();
        if (!e.source.empty()) {
          fd = ::open(e.source.c_str(), O_RDONLY | O_CLOEXEC);
          struct stat st {};
          if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            const int err = fd < 0 ? errno : EINVAL;
            if (fd >= 0) ::close(fd);
            return Error{ErrorKind::Io, e.source.string(), std::string("cannot read a file to archive: ") + std::strerror(err),
                         "", ""};
          }
          size = static_cast<std::uint64_t>(st.st_size);
        }
        archive_entry_set_size(ent.get(), static_cast<la_int64_t>(size));
        break;
      }
    }
    if (archive_write_header(a, ent.get()) != ARCHIVE_OK) {
      if (fd >= 0) ::close(fd);
      return write_error(path, a, "cannot write the header of '" + e.path + "'");
    }
    if (e.kind != ArchiveEntry::Kind::File) continue;
    if (fd < 0) {
      if (!e.content.empty() && archive_write_data(a, e.content.data(), e.content.size()) < 0) {
        return write_error(path, a, "cannot write '" + e.path + "'");
      }
      continue;
    }
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        return Error{ErrorKind::Io, e.source.string(), std::string("cannot read a file to archive: ") + std::strerror(err), "",
                     ""};
      }
      if (n == 0) break;
      if (archive_write_data(a, buf.data(), static_cast<std::size_t>(n)) < 0) {
        ::close(fd);
        return write_error(path, a, "cannot write '" + e.path + "'");
      }
    }
    ::close(fd);
  }
  return ok_status();
}

/// Writes a pax tar with zstd at `level` to `path` (not atomic: callers write a temporary name).
Status write_tar_zst_file(const fs::path& path, const std::vector<ArchiveEntry>& entries, int level) {
  WriteArchive a(archive_write_new());
  archive_write_add_filter_zstd(a.get());
  archive_write_set_format_pax_restricted(a.get());
  const std::string lvl = std::to_string(std::clamp(level, 1, 19));
  if (archive_write_set_filter_option(a.get(), "zstd", "compression-level", lvl.c_str()) != ARCHIVE_OK) {
    return write_error(path, a.get(), "cannot set the zstd level");
  }
  if (archive_write_open_filename(a.get(), path.c_str()) != ARCHIVE_OK) return write_error(path, a.get(), "cannot create");
  if (auto st = write_entries(a.get(), path, entries); !st) return st;
  if (archive_write_close(a.get()) != ARCHIVE_OK) return write_error(path, a.get(), "cannot finish");
  return ok_status();
}

/// fsync(2) of a written file, then rename onto `to`.
Status commit_file(const fs::path& from, const fs::path& to) {
  const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return Error{ErrorKind::Io, to.string(), std::string("cannot flush the archive: ") + std::strerror(err), "", ""};
  }
  ::close(fd);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Error{ErrorKind::Io, to.string(), std::string("cannot move the archive into place: ") + std::strerror(errno), "", ""};
  }
  return ok_status();
}

struct RemoveOnExit {
  std::vector<fs::path> paths;
  ~RemoveOnExit() {
    std::error_code ec;
    for (const auto& p : paths) fs::remove(p, ec);
  }
};

}  // namespace

Status write_tar_zst(const fs::path& output, std::vector<ArchiveEntry> entries, int level) {
  const auto target = output_file_target(output);
  if (!target) return target.error();
  const fs::path& archive_path = *target;
  if (auto st = check_entries(archive_path, entries); !st) return st;
  std::sort(entries.begin(), entries.end(), [](const ArchiveEntry& a, const ArchiveEntry& b) { return a.path < b.path; });
  RemoveOnExit tmp{{temp_beside(archive_path, "writing")}};
  if (auto st = write_tar_zst_file(tmp.paths[0], entries, level); !st) return st;
  return commit_file(tmp.paths[0], archive_path);
}

Status write_conda_package(const fs::path& output, std::vector<ArchiveEntry> entries, int level) {
  const auto target = output_file_target(output);
  if (!target) return target.error();
  const fs::path& archive_path = *target;
  if (auto st = check_entries(archive_path, entries); !st) return st;
  const std::string file = archive_path.filename().string();
  if (!file.ends_with(".conda") || file.size() == 6) {
    return Error{ErrorKind::Usage, archive_path.string(), "a .conda package's file name must end in .conda", "", ""};
  }
  const std::string dist = file.substr(0, file.size() - 6);
  bool has_index = false;
  std::vector<ArchiveEntry> info;
  std::vector<ArchiveEntry> pkg;
  for (auto& e : entries) {
    has_index = has_index || e.path == "info/index.json";
    (e.path == "info" || e.path.starts_with("info/") ? info : pkg).push_back(std::move(e));
  }
  if (!has_index) return Error{ErrorKind::Usage, archive_path.string(), "a conda package needs info/index.json", "", ""};
  auto by_path = [](const ArchiveEntry& a, const ArchiveEntry& b) { return a.path < b.path; };
  std::sort(info.begin(), info.end(), by_path);
  std::sort(pkg.begin(), pkg.end(), by_path);

  RemoveOnExit tmp{{temp_beside(archive_path, "info"), temp_beside(archive_path, "pkg"), temp_beside(archive_path, "writing")}};
  if (auto st = write_tar_zst_file(tmp.paths[0], info, level); !st) return st;
  if (!pkg.empty()) {
    if (auto st = write_tar_zst_file(tmp.paths[1], pkg, level); !st) return st;
  }

  // The outer ZIP, members stored (CEP-2): metadata.json first, then the pkg and info tars.
  WriteArchive z(archive_write_new());
  archive_write_set_format_zip(z.get());
  if (archive_write_set_format_option(z.get(), "zip", "compression", "store") != ARCHIVE_OK) {
    return write_error(archive_path, z.get(), "cannot select stored ZIP members");
  }
  if (archive_write_open_filename(z.get(), tmp.paths[2].c_str()) != ARCHIVE_OK) {
    return write_error(archive_path, z.get(), "cannot create");
  }
  std::vector<ArchiveEntry> members;
  ArchiveEntry meta;
  meta.path = "metadata.json";
  meta.content = "{\"conda_pkg_format_version\": 2}";
  members.push_back(std::move(meta));
  if (!pkg.empty()) {
    ArchiveEntry p;
    p.path = "pkg-" + dist + ".tar.zst";
    p.source = tmp.paths[1];
    members.push_back(std::move(p));
  }
  ArchiveEntry i;
  i.path = "info-" + dist + ".tar.zst";
  i.source = tmp.paths[0];
  members.push_back(std::move(i));
  if (auto st = write_entries(z.get(), archive_path, members); !st) return st;
  if (archive_write_close(z.get()) != ARCHIVE_OK) return write_error(archive_path, z.get(), "cannot finish");
  return commit_file(tmp.paths[2], archive_path);
}

}  // namespace envlock
