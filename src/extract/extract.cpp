// extract.cpp — streaming extraction of .conda and .tar.bz2 with libarchive, written with *at()
// calls relative to one directory descriptor so that no entry can reach outside it.
// See envlock/extract.hpp for the contract.
#include "envlock/extract.hpp"

#include "caps.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace envlock {

namespace detail {

ContentCap content_cap(const std::filesystem::path& archive_path, const ExtractLimits& l) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(archive_path, ec);
  const std::uint64_t absolute = l.max_total_bytes;
  if (l.max_expansion_ratio == 0 || ec) {
    return {absolute, "the absolute cap of " + std::to_string(absolute) + " bytes of content"};
  }
  const std::uint64_t derived =
      size > l.max_total_bytes / l.max_expansion_ratio ? l.max_total_bytes : size * l.max_expansion_ratio;
  const std::uint64_t bound = std::max(derived, l.expansion_floor);
  if (bound >= absolute) {
    return {absolute, "the absolute cap of " + std::to_string(absolute) + " bytes of content"};
  }
  return {bound, "the expansion cap of " + std::to_string(bound) + " bytes of content (" + std::to_string(l.max_expansion_ratio) +
                     " x the archive's " + std::to_string(size) + " bytes, at least " + std::to_string(l.expansion_floor) +
                     ")"};
}

}  // namespace detail

namespace {

using detail::ContentCap;
using detail::content_cap;

namespace fs = std::filesystem;

struct ReadDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ReadArchive = std::unique_ptr<archive, ReadDeleter>;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> split_path(std::string_view p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.emplace_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out;
}

/// One extraction into one directory: the checks and the *at() writes.
class Extractor {
 public:
  Extractor(const fs::path& archive_path, int root_fd, const ExtractLimits& limits)
      : archive_path_(archive_path), root_(root_fd), limits_(limits), cap_(content_cap(archive_path, limits)) {}

  /// Extracts every entry of `a`; `member` names the inner archive for messages ("" for none).
  Status extract_all(archive* a, const std::string& member);
  /// Checks that every symlink made stays inside the directory, through chains of symlinks.
  Status check_symlinks() const;

  [[nodiscard]] const ExtractStats& stats() const { return stats_; }
  [[nodiscard]] bool saw_index_json() const { return saw_index_json_; }

 private:
  Error unsafe(const std::string& member, const std::string& entry, const std::string& why) const {
    const std::string in = member.empty() ? std::string() : " in " + member;
    return Error{ErrorKind::Integrity, archive_path_.string(), "unsafe entry '" + entry + "'" + in + ": " + why, "",
                 "the package is malformed or malicious; nothing of it was installed"};
  }
  /// Content past the cap: refused before it is written, the cap named.
  Error too_large(const std::string& member, const std::string& entry) const {
    const std::string in = member.empty() ? std::string() : " in " + member;
    return Error{ErrorKind::Integrity, archive_path_.string(),
                 "refused at entry '" + entry + "'" + in + ": the package expands past " + cap_.name, "",
                 "nothing of it was kept: a package past these caps is refused as a decompression bomb (docs/cache.md, Caps)"};
  }
  Error corrupt(archive* a, const std::string& member) const {
    const char* why = archive_error_string(a);
    const std::string in = member.empty() ? std::string() : " (" + member + ")";
    return Error{ErrorKind::Integrity, archive_path_.string(),
                 "corrupt or truncated archive" + in + ": " + (why != nullptr ? why : "unknown error"), "",
                 "delete the file and download it again; if it persists, report it to the channel"};
  }
  Error io(const std::string& entry, const std::string& what, int err) const {
    return Error{ErrorKind::Io, archive_path_.string(), what + " '" + entry + "': " + std::strerror(err), "",
                 err == ENOSPC ? "free some disk space and run the command again" : ""};
  }

  /// Normalised, validated relative path of an entry, or an error.
  Result<std::vector<std::string>> checked_path(const std::string& member, const char* raw) const;
  Status ensure_parents(const std::vector<std::string>& parts, std::size_t n);
  Status write_file(archive* a, archive_entry* e, const std::string& rel, const std::string& member);
  Status remove_existing(const std::string& rel);

  fs::path archive_path_;
  int root_;
  ExtractLimits limits_;
  ContentCap cap_;
  ExtractStats stats_;
  std::uint64_t entries_ = 0;
  std::set<std::string> dirs_;                 // directories known to exist
  std::map<std::string, std::string> links_;   // symlink path -> target
  bool saw_index_json_ = false;
};

Result<std::vector<std::string>> Extractor::checked_path(const std::string& member, const char* raw) const {
  if (raw == nullptr) return unsafe(member, "?", "entry without a readable path name");
  const std::string name(raw);
  if (!name.empty() && name.front() == '/') return unsafe(member, name, "absolute path");
  std::vector<std::string> parts;
  for (auto& c : split_path(name)) {
    if (c == ".") continue;
    if (c == "..") return unsafe(member, name, "path with a '..' component");
    parts.push_back(std::move(c));
  }
  // No component before the last may be a symlink this archive created.
  for (std::size_t k = 1; k < parts.size(); ++k) {
    if (links_.count(join(parts, k)) != 0) {
      return unsafe(member, name, "path goes through the symlink '" + join(parts, k) + "'");
    }
  }
  return parts;
}

Status Extractor::ensure_parents(const std::vector<std::string>& parts, std::size_t n) {
  for (std::size_t k = 1; k <= n; ++k) {
    std::string dir = join(parts, k);
    if (dirs_.count(dir) != 0) continue;
    if (::mkdirat(root_, dir.c_str(), 0755) != 0) {
      const int err = errno;
      struct stat st {};
      if (err != EEXIST || ::fstatat(root_, dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        return io(dir, "cannot create directory", err == EEXIST ? ENOTDIR : err);
      }
    } else {
      stats_.directories++;
    }
    dirs_.insert(std::move(dir));
  }
  return ok_status();
}

Status Extractor::remove_existing(const std::string& rel) {
  // Tar semantics: a later entry replaces an earlier one of the same name.
  struct stat st {};
  if (::fstatat(root_, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ok_status();
  if (S_ISDIR(st.st_mode)) return io(rel, "an entry replaces the directory", EISDIR);
  if (::unlinkat(root_, rel.c_str(), 0) != 0) return io(rel, "cannot replace", errno);
  if (S_ISLNK(st.st_mode)) links_.erase(rel);
  return ok_status();
}

Status Extractor::write_file(archive* a, archive_entry* e, const std::string& rel, const std::string& member) {
  if (archive_entry_size_is_set(e) != 0) {
    const auto declared = static_cast<std::uint64_t>(std::max<la_int64_t>(0, archive_entry_size(e)));
    if (stats_.bytes + declared > cap_.bytes) {
      return too_large(member, rel);
    }
  }
  const mode_t mode = archive_entry_perm(e) & 0755;
  Fd fd(::openat(root_, rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return io(rel, "cannot create file", errno);
  const void* buf = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  std::uint64_t end = 0;
  for (;;) {
    const int r = archive_read_data_block(a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return corrupt(a, member);
    stats_.bytes += size;
    if (stats_.bytes > cap_.bytes) {
      return too_large(member, rel);
    }
    const char* p = static_cast<const char*>(buf);
    std::size_t left = size;
    auto pos = static_cast<off_t>(offset);
    while (left > 0) {
      const ssize_t w = ::pwrite(fd.get(), p, left, pos);
      if (w < 0) {
        if (errno == EINTR) continue;
        return io(rel, "cannot write", errno);
      }
      p += w;
      left -= static_cast<std::size_t>(w);
      pos += w;
    }
    end = std::max<std::uint64_t>(end, static_cast<std::uint64_t>(offset) + size);
  }
  // A sparse file ending in a hole: extend to the declared size.
  if (archive_entry_size_is_set(e) != 0 && static_cast<std::uint64_t>(archive_entry_size(e)) > end) {
    if (::ftruncate(fd.get(), static_cast<off_t>(archive_entry_size(e))) != 0) return io(rel, "cannot write", errno);
  }
  if (::fchmod(fd.get(), mode) != 0) return io(rel, "cannot set the mode of", errno);
  if (archive_entry_mtime_is_set(e) != 0) {
    struct timespec times[2];
    times[0].tv_sec = archive_entry_mtime(e);
    times[0].tv_nsec = archive_entry_mtime_nsec(e);
    times[1] = times[0];
    ::futimens(fd.get(), times);  // best effort: a failure only costs .pyc revalidation
  }
  stats_.files++;
  return ok_status();
}

Status Extractor::extract_all(archive* a, const std::string& member) {
  archive_entry* e = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return corrupt(a, member);
    if (++entries_ > limits_.max_entries) {
      const std::string in = member.empty() ? std::string() : " in " + member;
      return Error{ErrorKind::Integrity, archive_path_.string(),
                   "refused at entry " + std::to_string(entries_) + in + ": more entries than the cap of " +
                       std::to_string(limits_.max_entries) + " entries per archive",
                   "", "nothing of it was kept; the package is malformed or malicious"};
    }
    auto parts = checked_path(member, archive_entry_pathname(e));
    if (!parts.ok()) return parts.error();
    if (parts->empty()) continue;  // "./" — the root itself
    const std::string rel = join(*parts, parts->size());
    if (rel == "info/index.json") saw_index_json_ = true;
    const char* hardlink = archive_entry_hardlink(e);
    const mode_t type = archive_entry_filetype(e);

    if (hardlink != nullptr) {
      auto target = checked_path(member, hardlink);
      if (!target.ok()) return unsafe(member, rel, "hard link to an unsafe path '" + std::string(hardlink) + "'");
      const std::string trel = join(*target, target->size());
      if (target->empty() || links_.count(trel) != 0) {
        return unsafe(member, rel, "hard link to '" + std::string(hardlink) + "', which is not a file of the package");
      }
      if (auto s = ensure_parents(*parts, parts->size() - 1); !s.ok()) return s;
      if (auto s = remove_existing(rel); !s.ok()) return s;
      if (::linkat(root_, trel.c_str(), root_, rel.c_str(), 0) != 0) {
        return io(rel, "cannot create hard link to '" + trel + "' for", errno);
      }
      stats_.files++;
      continue;
    }
    switch (type) {
      case AE_IFDIR: {
        if (auto s = ensure_parents(*parts, parts->size()); !s.ok()) return s;
        // Directory modes are not narrowed below u+rwx so that later entries can be written.
        ::fchmodat(root_, rel.c_str(), (archive_entry_perm(e) & 0755) | 0700, 0);
        break;
      }
      case AE_IFREG: {
        if (auto s = ensure_parents(*parts, parts->size() - 1); !s.ok()) return s;
        if (auto s = remove_existing(rel); !s.ok()) return s;
        if (auto s = write_file(a, e, rel, member); !s.ok()) return s;
        break;
      }
      case AE_IFLNK: {
        const char* raw_target = archive_entry_symlink(e);
        if (raw_target == nullptr || *raw_target == '\0') {
          // POSIX has no symlink with an empty target; packages made on hosts without symlinks
          // carry such entries (and their .tar.bz2 twins an empty file): write the empty file.
          if (auto s = ensure_parents(*parts, parts->size() - 1); !s.ok()) return s;
          if (auto s = remove_existing(rel); !s.ok()) return s;
          if (auto s = write_file(a, e, rel, member); !s.ok()) return s;
          break;
        }
        const std::string target(raw_target);
        if (target.front() == '/') return unsafe(member, rel, "symlink to the absolute path '" + target + "'");
        // Lexical check now (for a clear, early error); chains are checked in check_symlinks().
        std::vector<std::string> cur(parts->begin(), parts->end() - 1);
        for (const auto& c : split_path(target)) {
          if (c == ".") continue;
          if (c == "..") {
            if (cur.empty()) return unsafe(member, rel, "symlink to '" + target + "' leaves the package directory");
            cur.pop_back();
          } else {
            cur.push_back(c);
          }
        }
        if (auto s = ensure_parents(*parts, parts->size() - 1); !s.ok()) return s;
        if (auto s = remove_existing(rel); !s.ok()) return s;
        if (::symlinkat(target.c_str(), root_, rel.c_str()) != 0) return io(rel, "cannot create symlink", errno);
        links_[rel] = target;
        stats_.symlinks++;
        break;
      }
      case AE_IFCHR:
      case AE_IFBLK:
        return unsafe(member, rel, "device file");
      case AE_IFIFO:
        return unsafe(member, rel, "FIFO (named pipe)");
      case AE_IFSOCK:
        return unsafe(member, rel, "socket");
      default:
        return unsafe(member, rel, "entry of unknown type");
    }
  }
  return ok_status();
}

Status Extractor::check_symlinks() const {
  for (const auto& [link, target] : links_) {
    std::vector<std::string> lparts = split_path(link);
    std::deque<std::string> todo(lparts.begin(), lparts.end() - 1);
    for (auto& c : split_path(target)) todo.push_back(c);
    std::vector<std::string> cur;
    int hops = 0;
    while (!todo.empty()) {
      std::string c = std::move(todo.front());
      todo.pop_front();
      if (c == ".") continue;
      if (c == "..") {
        if (cur.empty()) return unsafe("", link, "symlink to '" + target + "' leaves the package directory through other symlinks");
        cur.pop_back();
        continue;
      }
      cur.push_back(std::move(c));
      auto it = links_.find(join(cur, cur.size()));
      if (it == links_.end()) continue;
      if (++hops > 40) return unsafe("", link, "symlink loop");
      cur.pop_back();
      auto more = split_path(it->second);
      todo.insert(todo.begin(), more.begin(), more.end());
    }
  }
  return ok_status();
}

/// Reads an inner archive straight out of the outer one (a .conda's ZIP member).
struct NestedSource {
  archive* outer;
  std::vector<char> buf;
};

la_ssize_t nested_read(archive* /*inner*/, void* client, const void** out) {
  auto* src = static_cast<NestedSource*>(client);
  const la_ssize_t n = archive_read_data(src->outer, src->buf.data(), src->buf.size());
  *out = src->buf.data();
  return n;
}

Status extract_conda(const fs::path& path, Extractor& x) {
  ReadArchive outer(archive_read_new());
  archive_read_support_format_zip(outer.get());
  auto fail_outer = [&]() {
    const char* why = archive_error_string(outer.get());
    return Error{ErrorKind::Integrity, path.string(),
                 std::string("corrupt or truncated .conda archive: ") + (why != nullptr ? why : "unreadable"), "",
                 "delete the file and download it again; if it persists, report it to the channel"};
  };
  if (archive_read_open_filename(outer.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) return fail_outer();
  bool saw_info = false;
  archive_entry* e = nullptr;
  for (;;) {
    const int r = archive_read_next_header(outer.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return fail_outer();
    // Members are matched by their base name: some tools store them below a folder in the ZIP.
    std::string name = archive_entry_pathname(e) != nullptr ? archive_entry_pathname(e) : "";
    if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    const bool regular = archive_entry_filetype(e) == AE_IFREG;
    const bool is_info = regular && name.rfind("info-", 0) == 0 && ends_with(name, ".tar.zst");
    const bool is_pkg = regular && name.rfind("pkg-", 0) == 0 && ends_with(name, ".tar.zst");
    if (!is_info && !is_pkg) {
      archive_read_data_skip(outer.get());  // metadata.json and anything a later format adds
      continue;
    }
    saw_info = saw_info || is_info;
    NestedSource src{outer.get(), std::vector<char>(1 << 17)};
    ReadArchive inner(archive_read_new());
    archive_read_support_filter_zstd(inner.get());
    archive_read_support_format_tar(inner.get());
    if (archive_read_open(inner.get(), &src, nullptr, &nested_read, nullptr) != ARCHIVE_OK) {
      const char* why = archive_error_string(inner.get());
      return Error{ErrorKind::Integrity, path.string(),
                   "corrupt member " + name + ": " + (why != nullptr ? why : "unreadable"), "",
                   "delete the file and download it again; if it persists, report it to the channel"};
    }
    if (auto s = x.extract_all(inner.get(), name); !s.ok()) return s;
  }
  // pkg-*.tar.zst may be absent: a package without files (rattler writes such metapackages).
  if (!saw_info) {
    return Error{ErrorKind::Integrity, path.string(), "not a conda package: no info-*.tar.zst inside", "",
                 "the file is damaged or not a .conda package; download it again"};
  }
  return ok_status();
}

Status extract_tar_bz2(const fs::path& path, Extractor& x) {
  ReadArchive a(archive_read_new());
  archive_read_support_filter_bzip2(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const char* why = archive_error_string(a.get());
    return Error{ErrorKind::Integrity, path.string(),
                 std::string("corrupt or truncated .tar.bz2 archive: ") + (why != nullptr ? why : "unreadable"), "",
                 "delete the file and download it again; if it persists, report it to the channel"};
  }
  return x.extract_all(a.get(), "");
}

std::atomic<unsigned> g_staging_counter{0};

}  // namespace

std::optional<ArchiveFormat> archive_format(std::string_view file_name) {
  if (ends_with(file_name, ".conda")) return ArchiveFormat::Conda;
  if (ends_with(file_name, ".tar.bz2")) return ArchiveFormat::TarBz2;
  return std::nullopt;
}

Result<ExtractStats> extract_into(const fs::path& archive_path, const fs::path& directory, const ExtractLimits& limits) {
  const auto format = archive_format(archive_path.filename().string());
  if (!format) {
    return Error{ErrorKind::Usage, archive_path.string(), "not a conda package archive (expected .conda or .tar.bz2)"};
  }
  Fd root(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    return Error{ErrorKind::Io, directory.string(), std::string("cannot open directory: ") + std::strerror(errno)};
  }
  Extractor x(archive_path, root.get(), limits);
  Status s = *format == ArchiveFormat::Conda ? extract_conda(archive_path, x) : extract_tar_bz2(archive_path, x);
  if (!s.ok()) return s.error();
  if (auto links = x.check_symlinks(); !links.ok()) return links.error();
  if (!x.saw_index_json()) {
    return Error{ErrorKind::Integrity, archive_path.string(), "not a conda package: no info/index.json inside", "",
                 "the file is damaged or not a conda package; download it again"};
  }
  return x.stats();
}

Result<ExtractStats> extract_tar_zst_into(const fs::path& archive_path, const fs::path& directory, const ExtractLimits& limits) {
  Fd root(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    return Error{ErrorKind::Io, directory.string(), std::string("cannot open directory: ") + std::strerror(errno)};
  }
  Extractor x(archive_path, root.get(), limits);
  ReadArchive a(archive_read_new());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const char* why = archive_error_string(a.get());
    return Error{ErrorKind::Integrity, archive_path.string(),
                 std::string("corrupt or truncated .tar.zst archive: ") + (why != nullptr ? why : "unreadable"), "",
                 "copy the file again; if it persists, make it again"};
  }
  if (auto s = x.extract_all(a.get(), ""); !s.ok()) return s.error();
  if (auto links = x.check_symlinks(); !links.ok()) return links.error();
  return x.stats();
}

Result<ExtractStats> extract_package(const fs::path& archive_path, const fs::path& destination,
                                     const ExtractLimits& limits, const BeforeCommit& before_commit) {
  std::error_code ec;
  if (fs::symlink_status(destination, ec).type() != fs::file_type::not_found) {
    return Error{ErrorKind::Io, destination.string(), "cannot extract: the destination already exists"};
  }
  const fs::path staging = destination.parent_path() /
                           ("." + destination.filename().string() + ".extracting-" + std::to_string(::getpid()) +
                            "-" + std::to_string(g_staging_counter++));
  fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec) || ec) {
    return Error{ErrorKind::Io, staging.string(), "cannot create staging directory: " + ec.message()};
  }
  auto cleanup = [&] {
    std::error_code ignore;
    fs::remove_all(staging, ignore);
  };
  auto stats = extract_into(archive_path, staging, limits);
  if (!stats.ok()) {
    cleanup();
    return stats.error();
  }
  if (before_commit) {
    if (auto s = before_commit(staging); !s.ok()) {
      cleanup();
      return s.error();
    }
  }
  if (::rename(staging.c_str(), destination.c_str()) != 0) {
    const int err = errno;
    cleanup();
    return Error{ErrorKind::Io, destination.string(), std::string("cannot move the extracted package into place: ") +
                                                          std::strerror(err)};
  }
  return stats;
}

}  // namespace envlock
