// Conda prefixes: discovery, conda-meta records, pip distributions, pip-over-conda shadowing and
// drift (modified, unowned and missing files).
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "text_util.hpp"
#include "envlock/hash.hpp"
#include "envlock/input_file.hpp"
#include "envlock/install.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"
#include "envlock/record_path.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {


// SHA-256 of files, for one thread: one hasher and one read buffer reused, and the folder of the
// last file kept open, so the next file in the same folder is opened relative to it (the kernel
// then resolves one name instead of the whole path).
class FileHasher {
 public:
  FileHasher() : buf_(1 << 20) {}
  ~FileHasher() {
    if (dir_fd_ >= 0) ::close(dir_fd_);
  }
  FileHasher(const FileHasher&) = delete;
  FileHasher& operator=(const FileHasher&) = delete;

  // The file's digest (lower-case hex) and, in `bytes`, how many bytes it holds; nullopt when it
  // cannot be opened or read.
  std::optional<std::string> sha256(const std::string& path, std::uint64_t& bytes) {
    bytes = 0;
    const int fd = open_file(path);
    if (fd < 0) return std::nullopt;
    for (;;) {
      const ssize_t n = ::read(fd, buf_.data(), buf_.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        ::close(fd);
        (void)hasher_.hex_digest();  // resets the hasher for the next file
        return std::nullopt;
      }
      if (n == 0) break;
      hasher_.update(buf_.data(), static_cast<std::size_t>(n));
      bytes += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    return hasher_.hex_digest();
  }

 private:
  // O_NONBLOCK: a FIFO where a file should be reads as empty instead of waiting for a writer.
  static constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;

  int open_file(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == path.size()) return ::open(path.c_str(), kOpenFlags);
    const std::string_view dir(path.data(), slash);
    if (dir != dir_) {
      if (dir_fd_ >= 0) ::close(dir_fd_);
      dir_.assign(dir);
      dir_fd_ = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (dir_fd_ < 0) return ::open(path.c_str(), kOpenFlags);
    return ::openat(dir_fd_, path.c_str() + slash + 1, kOpenFlags);
  }

  Hasher hasher_{HashAlgorithm::Sha256};
  std::vector<char> buf_;
  std::string dir_;
  int dir_fd_ = -1;
};

bool ignored_runtime_file(const std::string& rel) {
  if (rel == ".messages.txt") return true;
  if (rel.ends_with(".pyc")) return true;
  return rel.find("__pycache__/") != std::string::npos;
}

// `dir / rel` as std::filesystem::path's operator/ builds it (an absolute `rel` replaces `dir`),
// without building a path object per file.
std::string join_path(const std::string& dir, const std::string& rel) {
  if (!rel.empty() && rel.front() == '/') return rel;
  if (!dir.empty() && dir.back() == '/') return dir + rel;
  return dir + "/" + rel;
}

// A path the walk of the prefix met: its type (d_type) and, when taken, its lstat mode and size.
struct WalkedPath {
  std::string rel;          // prefix-relative, '/'-separated
  unsigned char type;       // DT_REG, DT_DIR, DT_LNK, ...
  bool stated = false;      // mode and size hold its lstat
  mode_t mode = 0;
  std::uint64_t size = 0;
};

// Who owns a prefix-relative path, and what the walk saw there.
struct OwnedPath {
  std::string who;                     // conda name or pip:<name>
  const WalkedPath* walked = nullptr;  // null: the walk did not meet it (missing, behind a linked folder)
};
using OwnerMap = std::unordered_map<std::string, OwnedPath>;

// One directory's entries, in readdir order.
struct DirEntryName {
  std::string name;
  unsigned char type;
};

// Reads every entry of the open directory `fd` (not closed; read from its current offset, so
// once) with getdents64 — no DIR stream, which would cost a dup, fcntl, fstat and close per
// folder. Returns 0, or the errno of a failing read (the entries read before it are kept).
int list_directory(int fd, std::vector<DirEntryName>& out) {
  alignas(8) char buf[32768];
  for (;;) {
    const ssize_t n = ::getdents64(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + off);
      off += e->d_reclen;
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      out.push_back({std::string(name), e->d_type});
    }
  }
}

// What reading one conda-meta file gave: the record, or the problem to report.
struct MetaRecordOutcome {
  std::optional<PrefixRecord> record;
  CaptureProblem problem;
};

// Reads conda-meta records for one thread: simdjson (PrefixRecordReader) into one reused buffer;
// a record it is not sure of is read again with nlohmann and PrefixRecord::from_json, whose
// messages are the ones reported.
class CondaMetaFileReader {
 public:
  CondaMetaFileReader() : buf_(1 << 16) {}

  // `name` in the open folder `dir_fd`, which is `<prefix>/conda-meta` (named in a problem) and,
  // on this machine, `meta_dir`; `link`: the entry is a symbolic link. Read as every conda-meta
  // record is (read_conda_meta_record_text's rules, envlock/input_file.hpp, over the open
  // folder): never through a link into /proc, /sys or /dev nor from a proc or sysfs file system,
  // opened O_NONBLOCK (a FIFO that took the place of a file since the listing never blocks) and
  // read only when fstat calls it a regular file, at most kMaxCondaMetaRecordBytes, counted while
  // reading.
  MetaRecordOutcome read(int dir_fd, const std::string& name, const fs::path& prefix, const std::string& meta_dir,
                         bool link) {
    const std::string where = (prefix / "conda-meta" / name).string();
    auto refused = [&](const std::string& why) {
      return MetaRecordOutcome{std::nullopt, {where, why + ", and the package it describes is left out"}};
    };
    if (link)
      if (const std::string why = system_file_refusal(fs::path(meta_dir) / name); !why.empty()) return refused(why);
    const int fd = dir_fd < 0 ? -1 : ::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return {std::nullopt, {where, "cannot read the record"}};
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return {std::nullopt, {where, "cannot read the record"}};
    if (!S_ISREG(st.st_mode)) {
      return {std::nullopt, {where, "is not a regular file (a FIFO, device, socket or broken link); not read, the package it "
                                    "describes is left out"}};
    }
    if (struct statfs sfs {}; ::fstatfs(fd, &sfs) == 0 && (sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC))
      return refused("is on a proc or sysfs file system, not a file of a project; it is not read");
    const std::string too_large = "is larger than " + std::to_string(kMaxCondaMetaRecordBytes >> 20) +
                                  " MiB, the most envlock reads of a conda-meta record; it is not read";
    if (static_cast<std::uintmax_t>(st.st_size) > kMaxCondaMetaRecordBytes) return refused(too_large);
    std::size_t size = 0;
    for (;;) {
      if (buf_.size() < size + 4096 + PrefixRecordReader::padding()) buf_.resize(buf_.size() * 2);
      const ssize_t n = ::read(fd, buf_.data() + size, buf_.size() - size - PrefixRecordReader::padding());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return {std::nullopt, {where, "cannot read the record"}};
      if (n == 0) break;
      size += static_cast<std::size_t>(n);
      if (size > kMaxCondaMetaRecordBytes) return refused(too_large);  // it grew while read
    }
    if (auto fast = reader_.read(buf_.data(), size, buf_.size())) return {std::move(fast), {}};
    const auto j = nlohmann::json::parse(std::string_view(buf_.data(), size), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return {std::nullopt, {where, "not valid JSON: the package it describes is left out of the snapshot"}};
    }
    auto rec = PrefixRecord::from_json(j);
    if (!rec) return {std::nullopt, {where, rec.error().message}};
    return {std::move(*rec), {}};
  }

 private:
  PrefixRecordReader reader_;
  std::vector<char> buf_;
};

// One pass over the prefix (what std::filesystem::recursive_directory_iterator did, in the same
// pre-order, without following directory links, leaving out conda-meta/, a top-level envs/ and
// pkgs/ and nested environments): every path met, with its d_type and, unless it is a folder or a
// regular file, its lstat (regular files: stat_regular_files(), when sizes are needed without
// hashing). Everything relative to an open parent folder (openat/fstatat/getdents64), so the
// kernel resolves one name per call instead of the whole path. It needs no conda record, so it
// runs beside the reading of conda-meta.
class PrefixWalker {
 public:
  PrefixWalker() = default;

  // Walks `root`; false when a folder could not be read (error() says why; what was met before
  // stays in paths()).
  bool walk(const std::string& root) {
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(errno);
    std::vector<DirEntryName> entries;
    const int err = list_directory(fd, entries);
    std::string rel;
    const bool ok = visit(fd, entries, rel, 0);
    ::close(fd);
    return ok && (err == 0 || fail(err));
  }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::vector<WalkedPath>& paths() const { return paths_; }

  // After walk(): takes the lstat of the regular files met (for sizes without hashing), 64 at a
  // time from `next`, so several threads can share the work. Each thread keeps the folder of its
  // last file open (O_PATH), opened relative to the walked root so the kernel resolves only the
  // prefix-relative part of its path, and stats relative to it.
  void stat_regular_files(const std::string& root, std::atomic<std::size_t>& next) {
    constexpr std::size_t kChunk = 64;
    const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) return;  // the walk read it a moment ago; the files stay unstated (checked by path later)
    std::string dir;
    int dir_fd = root_fd;  // the folder of `dir` ("" is the root itself)
    for (std::size_t first; (first = next.fetch_add(kChunk)) < paths_.size();) {
      for (std::size_t i = first; i < std::min(first + kChunk, paths_.size()); ++i) {
        WalkedPath& w = paths_[i];
        if (w.type != DT_REG || w.stated) continue;
        const auto slash = w.rel.rfind('/');
        const std::string_view parent = slash == std::string::npos ? std::string_view() : std::string_view(w.rel).substr(0, slash);
        if (parent != dir) {
          if (dir_fd >= 0 && dir_fd != root_fd) ::close(dir_fd);
          dir.assign(parent);
          dir_fd = dir.empty() ? root_fd : ::openat(root_fd, dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        struct stat st {};
        const char* name = w.rel.c_str() + (slash == std::string::npos ? 0 : slash + 1);
        if (dir_fd >= 0 && ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          w.stated = true;
          w.mode = st.st_mode;
          w.size = static_cast<std::uint64_t>(st.st_size);
        }
      }
    }
    if (dir_fd >= 0 && dir_fd != root_fd) ::close(dir_fd);
    ::close(root_fd);
  }

 private:
  bool fail(int err) {
    error_ = std::error_code(err, std::generic_category()).message();
    return false;
  }

  static bool is_directory_at(int fd, const char* name) {
    struct stat st {};
    return ::fstatat(fd, name, &st, 0) == 0 && S_ISDIR(st.st_mode);
  }

  bool visit(int fd, const std::vector<DirEntryName>& entries, std::string& rel, int depth) {
    const std::size_t base = rel.size();
    for (const auto& e : entries) {
      rel.resize(base);
      rel += e.name;
      if (depth == 0 && e.name == "conda-meta") continue;
      WalkedPath w{rel, e.type};
      struct stat st {};
      if (e.type == DT_UNKNOWN || (e.type != DT_DIR && e.type != DT_REG)) {
        if (::fstatat(fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          w.stated = true;
          w.mode = st.st_mode;
          w.size = static_cast<std::uint64_t>(st.st_size);
          if (e.type == DT_UNKNOWN) w.type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
      }
      const bool is_dir = w.type == DT_DIR;
      paths_.push_back(std::move(w));
      if (!is_dir) continue;
      // Nested environments (a base prefix's envs/) and the package cache are not this prefix's
      // files (the rule verify shares: prefix_foreign_folder, envlock/install.hpp).
      if (depth == 0 && prefix_foreign_folder(rel, false)) continue;
      const int child = ::openat(fd, e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) {
        const int err = errno;
        if (is_directory_at(fd, (e.name + "/conda-meta").c_str())) continue;
        return fail(err);
      }
      std::vector<DirEntryName> children;
      const int err = list_directory(child, children);
      bool nested = false;
      if (err != 0) {
        nested = is_directory_at(child, "conda-meta");
      } else {
        for (const auto& c : children) {
          if (c.name != "conda-meta") continue;
          nested = c.type == DT_DIR || ((c.type == DT_LNK || c.type == DT_UNKNOWN) && is_directory_at(child, "conda-meta"));
          break;
        }
      }
      if (prefix_foreign_folder(rel, nested)) {
        ::close(child);
        continue;
      }
      rel += '/';
      const bool ok = visit(child, children, rel, depth + 1);
      ::close(child);
      if (!ok) return false;
      if (err != 0) return fail(err);
    }
    rel.resize(base);
    return true;
  }

  std::vector<WalkedPath> paths_;
  std::string error_;
};

// Project name of a "<name>-<version>.dist-info" folder, normalised (PEP 503).
std::string dist_info_project(std::string_view folder) {
  const auto dash = folder.find('-');
  return pep503_normalize(folder.substr(0, dash == std::string_view::npos ? folder.size() - 10 : dash));
}

std::string environment_name(const Host& seam, const fs::path& prefix) {
  const fs::path p = prefix.lexically_normal();
  const std::string leaf = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  const std::string parent = (p.has_filename() ? p : p.parent_path()).parent_path().filename().string();
  if (parent == "envs") return leaf;
  // A conda installation's root prefix holds envs/ or condabin/: conda names it "base".
  if (seam.resolve(p / "condabin") || seam.resolve(p / "envs")) return "base";
  return leaf.empty() ? "root" : leaf;
}

}  // namespace

// A host path as one spelling: lexically normal, without a trailing `/` ("/x/envA/" and
// "/x/./envA" are "/x/envA"), so one prefix listed twice is captured once.
fs::path one_spelling(const fs::path& host) {
  fs::path p = host.lexically_normal();
  if (!p.has_filename() && p != p.root_path()) p = p.parent_path();
  return p;
}

std::vector<fs::path> discover_prefixes(const Host& seam, std::vector<CaptureProblem>* problems) {
  std::set<fs::path> found;
  auto consider = [&](const fs::path& host) {
    if (auto local = seam.resolve(host / "conda-meta"); local && fs::is_directory(*local)) found.insert(one_spelling(host));
  };
  auto children = [&](const fs::path& host_dir) {
    auto local = seam.resolve(host_dir);
    if (!local) return;
    std::error_code ec;
    for (fs::directory_iterator it(*local, ec), end; !ec && it != end; it.increment(ec)) {
      consider(host_dir / it->path().filename());
    }
  };
  for (const auto& home : seam.home_dirs) {
    // conda's list of environments, read as every host file is (regular only, bounded); one
    // that cannot be read (a FIFO, a device, unreadable) is a problem, as for every host fact.
    const fs::path list = home / ".conda/environments.txt";
    if (auto txt = seam.resolve(list)) {
      auto r = snapshot_detail::read_regular_file(*txt, seam.live ? snapshot_detail::ReadAs::HostFile
                                                                  : snapshot_detail::ReadAs::ResolvedFile);
      if (!r.refused.empty() && problems != nullptr)
        problems->push_back({list.string(), r.refused + ": the environments it lists are not discovered (name them with -p)"});
      std::istringstream in(r.text.value_or(""));
      for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty() || line[0] != '/') continue;
        consider(line);
        children(fs::path(line) / "envs");
      }
    }
    children(home / ".conda/envs");
  }
  return {found.begin(), found.end()};
}

Result<CapturedEnvironment> capture_prefix(const Host& seam, const fs::path& prefix, const std::string& host_platform,
                                           const CaptureOptions& options, std::vector<CaptureProblem>& problems) {
  const auto local_opt = seam.resolve(prefix);
  const auto meta_opt = seam.resolve(prefix / "conda-meta");  // a link is followed inside a host tree
  if (!local_opt || !meta_opt || !fs::is_directory(*meta_opt)) {
    return Error{ErrorKind::Usage, prefix.string(), "not a conda environment (no conda-meta/ folder)", "",
                 "pass the folder that holds conda-meta/, e.g. ~/miniconda3/envs/<name>"};
  }
  const fs::path local = *local_opt;
  const std::string local_str = local.string();
  CapturedEnvironment env;
  env.prefix = prefix.lexically_normal().string();
  env.name = environment_name(seam, prefix);

  // 1. conda-meta records, one file at a time so one bad record does not hide the others. Two
  // threads: this one lists conda-meta and reads records; the other walks the prefix (for drift)
  // first, then reads records too, and this one goes on with ownership and pip while the walk may
  // still run. Each record's outcome goes to its own slot, so the order stays the files'.
  std::vector<std::string> meta_files;
  std::vector<char> meta_links;  // per meta_files entry: it is a symbolic link (its target is checked)
  std::vector<std::string> odd_meta;  // *.json entries that are no regular file (a FIFO, a device link)
  std::vector<MetaRecordOutcome> outcomes;
  std::atomic<bool> listed{false};
  std::atomic<std::size_t> next_record{0};
  std::atomic<std::size_t> records_done{0};
  int meta_fd = -1;
  const std::string meta_dir = meta_opt->string();
  auto read_records = [&] {
    listed.wait(false);
    CondaMetaFileReader reader;
    for (std::size_t i; (i = next_record.fetch_add(1)) < meta_files.size();) {
      outcomes[i] = reader.read(meta_fd, meta_files[i], prefix, meta_dir, meta_links[i] != 0);
      if (records_done.fetch_add(1) + 1 == meta_files.size()) records_done.notify_all();
    }
  };
  // Without hashing, the sizes of the files met are taken by both threads once the walk is done
  // (the walker right after its records, this one after pip).
  PrefixWalker walker;
  bool walked_all = false;
  std::atomic<bool> walk_done{false};
  std::atomic<std::size_t> next_stat{0};
  std::jthread helper([&] {
    walked_all = walker.walk(local_str);
    walk_done.store(true);
    walk_done.notify_all();
    read_records();
    if (!options.hash_files) walker.stat_regular_files(local_str, next_stat);
  });
  try {
    meta_fd = ::open(meta_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (meta_fd >= 0) {
      std::vector<DirEntryName> entries;
      list_directory(meta_fd, entries);
      for (auto& e : entries) {
        // fs::path::extension() == ".json": a name longer than ".json" that ends with it.
        if (e.name.size() <= 5 || !e.name.ends_with(".json")) continue;
        bool regular = e.type == DT_REG;
        bool link = e.type == DT_LNK;
        if (e.type == DT_LNK || e.type == DT_UNKNOWN) {
          struct stat st {};
          if (e.type == DT_UNKNOWN)
            link = ::fstatat(meta_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
          regular = ::fstatat(meta_fd, e.name.c_str(), &st, 0) == 0 && S_ISREG(st.st_mode);
        }
        if (regular) {
          meta_files.push_back(std::move(e.name));
          meta_links.push_back(link ? 1 : 0);
        } else if (e.type != DT_DIR) {
          struct stat st {};
          if (::fstatat(meta_fd, e.name.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode))
            odd_meta.push_back(std::move(e.name));
        }
      }
      // Sorted by name, each keeping whether it is a link.
      std::vector<std::size_t> order(meta_files.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return meta_files[x] < meta_files[y]; });
      std::vector<std::string> names;
      std::vector<char> links;
      for (const std::size_t i : order) {
        names.push_back(std::move(meta_files[i]));
        links.push_back(meta_links[i]);
      }
      meta_files = std::move(names);
      meta_links = std::move(links);
    }
    outcomes.resize(meta_files.size());
  } catch (...) {
    meta_files.clear();  // the helper must not wait for a listing that never comes
    meta_links.clear();
    listed.store(true);
    listed.notify_all();
    throw;
  }
  listed.store(true);
  listed.notify_all();
  read_records();
  for (std::size_t done; (done = records_done.load()) < meta_files.size();) records_done.wait(done);
  if (meta_fd >= 0) ::close(meta_fd);
  std::sort(odd_meta.begin(), odd_meta.end());
  for (const auto& name : odd_meta)
    problems.push_back({(prefix / "conda-meta" / name).string(),
                        "is not a regular file (a FIFO, device, socket or broken link); not read, the package it "
                        "describes is left out"});
  std::vector<PrefixRecord> records;
  records.reserve(meta_files.size());
  std::vector<std::string> record_files;  // the conda-meta file of each record, for problems
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].record) {
      records.push_back(std::move(*outcomes[i].record));
      record_files.push_back(meta_files[i]);
    } else {
      problems.push_back(std::move(outcomes[i].problem));
    }
  }
  outcomes.clear();
  // A record whose name is not a conda name (`evil|name`) is left out as a problem: it would reach
  // the snapshot's lockfile, which every reader refuses.
  for (std::size_t i = 0; i < records.size();) {
    if (is_valid_package_name(records[i].name, false)) {
      ++i;
      continue;
    }
    problems.push_back({(prefix / "conda-meta" / record_files[i]).string(),
                        "conda package name '" + printable(records[i].name) + "' is not valid; the record is left out"});
    records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
    record_files.erase(record_files.begin() + static_cast<std::ptrdiff_t>(i));
  }
  {
    // By name; two records of one name (a damaged prefix: conda keeps one per name) put the
    // newest version first, and the others are left out as a problem naming both files.
    std::vector<std::size_t> order(records.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      const PrefixRecord& a = records[x];
      const PrefixRecord& b = records[y];
      if (a.name != b.name) return a.name < b.name;
      if (a.version != b.version) return b.version < a.version;
      if (a.build_number != b.build_number) return a.build_number > b.build_number;
      return record_files[x] < record_files[y];
    });
    std::vector<PrefixRecord> sorted_records;
    sorted_records.reserve(records.size());
    std::size_t kept = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t i = order[k];
      if (!sorted_records.empty() && sorted_records.back().name == records[i].name) {
        problems.push_back({(prefix / "conda-meta" / record_files[i]).string(),
                            "a second record of package " + records[i].name + " (" + records[i].version.to_string() + " " +
                                records[i].build + "); the snapshot keeps " + record_files[kept] +
                                " and leaves this one out; remove the stale record"});
        continue;
      }
      kept = i;
      sorted_records.push_back(std::move(records[i]));
    }
    records = std::move(sorted_records);
  }

  // 2. Ownership of every path conda installed.
  OwnerMap owner;                                       // prefix-relative path -> conda name or pip:<name>
  std::map<std::string, std::string> conda_dist_infos;  // normalised project -> conda package
  {
    std::size_t n = 0;
    for (const auto& r : records) n += r.paths.size() + r.files.size();
    owner.reserve(n);
  }
  for (const auto& r : records) {
    auto own = [&](const std::string& path) {
      owner[path].who = r.name;
      const auto at = path.find(".dist-info/");
      if (at != std::string::npos) {
        const auto slash = path.rfind('/', at);
        conda_dist_infos[dist_info_project(path.substr(slash == std::string::npos ? 0 : slash + 1))] = r.name;
      }
    };
    for (const auto& pe : r.paths) own(pe.path);
    for (const auto& f : r.files) own(f);
  }
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < records.size(); ++i) by_name[records[i].name] = i;

  // 3. pip distributions in site-packages.
  std::map<std::string, std::string> shadowed;  // conda name -> pip:<name>
  for (const auto& site : site_packages_dirs(local)) {
    for (const auto& info : dist_info_dirs(local / site)) {
      const std::string rel = site + "/" + info.filename().string();
      const auto conda_owner = owner.find(rel + "/METADATA");
      // Read it; a conda-owned dist-info with a conda INSTALLER is the conda package's own metadata.
      auto dist = read_dist_info(info, rel);
      if (!dist) {
        if (conda_owner == owner.end()) problems.push_back({(prefix / dist.error().where).string(), dist.error().message});
        continue;
      }
      if (conda_owner != owner.end() && (dist->installer.empty() || dist->installer == "conda")) continue;
      // A name or version no installer would have written (`evil|name`, `1.0\x1b[31m`) is not
      // recorded: it would reach the snapshot's lockfile and every output (docs/snapshot.md).
      if (!is_valid_package_name(dist->name, true)) {
        problems.push_back({(prefix / rel / "METADATA").string(),
                            "PyPI package name '" + printable(dist->name) + "' is not valid (PEP 508); left out"});
        continue;
      }
      if (!is_pep440_version(dist->version)) {
        problems.push_back({(prefix / rel / "METADATA").string(), "version '" + printable(dist->version) + "' of " +
                                                                        dist->name + " is not a PEP 440 version; left out"});
        continue;
      }
      // Installed by pip (or uv, ...) — possibly over a conda package.
      std::string replaced;
      if (conda_owner != owner.end()) {
        replaced = conda_owner->second.who;
      } else if (auto it = conda_dist_infos.find(dist->normalized_name()); it != conda_dist_infos.end()) {
        replaced = it->second;
      } else if (by_name.count(dist->normalized_name())) {
        replaced = dist->normalized_name();
      }
      if (!replaced.empty()) {
        dist->shadows = replaced;
        shadowed[replaced] = "pip:" + dist->name;
      }
      env.pip.push_back(std::move(*dist));
    }
    // `setup.py develop` editables: a <name>.egg-link and no dist-info (pip.hpp read_egg_links).
    // The link's tree is a host path: read under --root, never on the live host.
    for (auto& d : read_egg_links(local / site, site, [&](const fs::path& p) { return seam.resolve(p); })) {
      if (d.version.empty())
        problems.push_back({(prefix / d.dist_info).string(), "editable install of " + d.name + " at " +
                                                                  (d.url.empty() ? std::string("an unknown folder") : d.url) +
                                                                  ": its version is unknown (no <name>.egg-info/PKG-INFO there)"});
      env.pip.push_back(std::move(d));
    }
  }
  {
    // By project; two dist-info folders of one project (a pip leftover: an upgrade that did not
    // remove the old folder) would pin two versions: the newest is kept, the other left out as a
    // problem naming both folders.
    for (const auto& s : keep_newest_dist_infos(env.pip)) {
      problems.push_back({(prefix / s.stale.dist_info).string(),
                          "a second dist-info of " + s.stale.name + " (" + s.stale.version + "); the snapshot keeps " + s.kept +
                              " and leaves this one out; remove the stale folder"});
    }
  }
  // pip owns what its RECORD lists (overriding a conda owner it overwrote).
  std::map<std::string, std::pair<const PipDistribution*, const RecordEntry*>> pip_files;
  for (const auto& d : env.pip) {
    const std::string site = d.dist_info.substr(0, d.dist_info.rfind('/'));
    for (const auto& e : d.files) {
      const auto rel = record_path_in_prefix(site, e.path, prefix.string());
      if (!rel) {
        problems.push_back({(prefix / d.dist_info / "RECORD").string(), "lists `" + e.path + "`, outside the prefix; not checked"});
        continue;
      }
      owner[*rel].who = "pip:" + d.name;
      pip_files[*rel] = {&d, &e};
    }
  }

  // 5. Drift. The walk lists the files no one owns and gives the lstat (or, for a regular file
  // to hash, the type) of every owned path it met; owned paths it did not meet (behind a linked
  // folder, missing) are lstat'ed by their whole path.
  env.drift.hashed = options.hash_files;
  if (!options.hash_files) {
    walk_done.wait(false);
    walker.stat_regular_files(local_str, next_stat);
  }
  helper.join();
  for (const auto& w : walker.paths()) {
    if (const auto own = owner.find(w.rel); own != owner.end()) {
      own->second.walked = &w;
    } else if (w.type != DT_DIR && !ignored_runtime_file(w.rel)) {
      env.drift.unowned.push_back(w.rel);
    }
  }
  // Each file checked becomes a FileCheck, in this order: a size that differs, or a file to hash
  // afterwards on up to 2 threads (each with its own buffer). A regular file the walk met is not
  // stat'ed when it is hashed: the bytes read give its size. Modified files are then listed in
  // the same order as when sizes were compared first (size mismatches, then hash mismatches);
  // both lists and the problems are sorted at the end, so the output does not depend on which
  // thread hashed what.
  struct FileCheck {
    std::string file;
    ModifiedFile m;
    bool hash = false;        // false: a size mismatch (m.actual_size set)
    bool size_known = true;   // false: size from the bytes hashed (m.actual_size unset until then)
    std::string digest;
    std::uint64_t bytes = 0;
    bool ok = false;
  };
  std::vector<FileCheck> checks;
  // Under a host tree (--root) a link's target, absolute or relative, is a host path: a path that
  // goes through one is resolved inside the tree (Host::resolve), never on this machine.
  // `follow_last`: resolve the path's own last link too. Empty: not in the tree.
  auto in_tree = [&](const std::string& rel, bool follow_last) -> std::string {
    const fs::path host = prefix / rel;
    if (follow_last) {
      const auto r = seam.resolve(host);
      return r ? r->string() : std::string();
    }
    const auto dir = seam.resolve(host.parent_path());
    return dir ? (*dir / host.filename()).string() : std::string();
  };
  auto check_file = [&](const OwnedPath* own, const std::string& rel, const std::string& who, const std::string& sha,
                        std::optional<std::uint64_t> size, PathEntry::Type type) {
    std::string f = join_path(local_str, rel);
    struct stat st {};
    const WalkedPath* w = own != nullptr ? own->walked : nullptr;
    if (w != nullptr && (type == PathEntry::Type::Directory || type == PathEntry::Type::SoftLink)) return;  // it exists
    if (w != nullptr && w->stated) {
      st.st_mode = w->mode;
      st.st_size = static_cast<off_t>(w->size);
    } else if (w != nullptr && w->type == DT_REG && options.hash_files && !sha.empty()) {
      // A regular file to hash: its size is the bytes read.
      checks.push_back({std::move(f), ModifiedFile{rel, who, sha, "", size, std::nullopt}, true, false, {}, 0, false});
      return;
    } else {
      // Not met by the walk (behind a linked folder, or missing).
      if (!seam.live && w == nullptr) f = in_tree(rel, false);
      if (f.empty() || ::lstat(f.c_str(), &st) != 0) {
        env.drift.missing[who].push_back(rel);
        return;
      }
    }
    if (type == PathEntry::Type::Directory) return;
    if (type == PathEntry::Type::SoftLink) return;  // a link's target is checked where it lives
    if (S_ISLNK(st.st_mode)) {
      if (!seam.live) f = in_tree(rel, true);
      if (f.empty() || ::stat(f.c_str(), &st) != 0) {
        env.drift.missing[who].push_back(rel);
        return;
      }
    }
    const auto actual_size = static_cast<std::uint64_t>(st.st_size);
    ModifiedFile m{rel, who, sha, "", size, actual_size};
    if (size && *size != actual_size) {
      checks.push_back({{}, std::move(m), false, true, {}, 0, false});
      return;
    }
    if (options.hash_files && !sha.empty()) checks.push_back({std::move(f), std::move(m), true, true, {}, 0, false});
  };
  // A record pip shadowed is checked too: the files its RECORD lists are pip's (owner above),
  // the others are still the conda package's (pip overwrote or, uninstalling it, removed only
  // those it knew of), as `envlock verify` checks them; deploy removes the ones found missing.
  for (const auto& r : records) {
    if (!r.paths.empty()) {
      for (const auto& pe : r.paths) {
        const OwnedPath& own = owner[pe.path];
        if (own.who != r.name) continue;  // overwritten by a later package or pip
        // A text placeholder changes the size; paths_data records the size in the package.
        const bool text_relocated = !pe.prefix_placeholder.empty() && pe.file_mode != PathEntry::PlaceholderMode::Binary;
        check_file(&own, pe.path, r.name, pe.sha256, text_relocated ? std::nullopt : pe.size_in_bytes, pe.type);
      }
    } else {
      for (const auto& f : r.files) {
        const OwnedPath& own = owner[f];
        if (own.who != r.name) continue;
        check_file(&own, f, r.name, "", std::nullopt, PathEntry::Type::HardLink);
      }
    }
  }
  for (const auto& [rel, de] : pip_files) {
    if (ignored_runtime_file(rel)) continue;
    const auto own = owner.find(rel);
    check_file(own == owner.end() ? nullptr : &own->second, rel, "pip:" + de.first->name, de.second->sha256, de.second->size,
               PathEntry::Type::HardLink);
  }
  if (options.hash_files) {
    // Jobs are taken 16 at a time: files of one package, mostly in one folder, stay on one thread.
    constexpr std::size_t kChunk = 16;
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      FileHasher hasher;
      for (std::size_t first; (first = next.fetch_add(kChunk)) < checks.size();) {
        for (std::size_t i = first; i < std::min(first + kChunk, checks.size()); ++i) {
          auto& c = checks[i];
          if (!c.hash) continue;
          auto digest = hasher.sha256(c.file, c.bytes);
          c.ok = digest.has_value();
          if (digest) c.digest = std::move(*digest);
        }
      }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1U, 2U);
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads && checks.size() > kChunk; ++t) pool.emplace_back(worker);
    worker();
    pool.clear();
  }
  // Sizes first: a file hashed without an lstat is a size mismatch when the bytes read differ from
  // the recorded size (or, unreadable, when its lstat says so).
  for (auto& c : checks) {
    if (!c.size_known) {
      std::optional<std::uint64_t> actual;
      if (c.ok) {
        actual = c.bytes;
      } else if (struct stat st {}; ::lstat(c.file.c_str(), &st) == 0) {
        actual = static_cast<std::uint64_t>(st.st_size);
      }
      c.m.actual_size = actual;
      if (actual && c.m.expected_size && *c.m.expected_size != *actual) c.hash = false;
    }
    if (!c.hash) env.drift.modified.push_back(c.m);
  }
  for (auto& c : checks) {
    if (!c.hash) continue;
    if (!c.ok) {
      problems.push_back({(prefix / c.m.path).string(), "cannot be read to check its sha256"});
    } else if (c.digest != c.m.expected_sha256) {
      c.m.actual_sha256 = std::move(c.digest);
      env.drift.modified.push_back(std::move(c.m));
    }
  }
  if (!walked_all) problems.push_back({prefix.string(), "could not walk the whole prefix: " + walker.error()});

  // 4. Packages and platform, moved out of the records (drift is done with them).
  std::map<std::string, int> subdirs;
  for (auto& r : records) {
    CapturedPackage p;
    // The union of `files` (sorted by the reader) and paths_data, which usually list the same paths.
    p.files = std::move(r.files);
    const std::size_t in_files = p.files.size();
    for (auto& pe : r.paths) {
      if (!std::binary_search(p.files.begin(), p.files.begin() + static_cast<std::ptrdiff_t>(in_files), pe.path)) {
        p.files.push_back(std::move(pe.path));
      }
    }
    if (p.files.size() != in_files || !std::is_sorted(p.files.begin(), p.files.end())) {
      std::sort(p.files.begin(), p.files.end());
    }
    p.files.erase(std::unique(p.files.begin(), p.files.end()), p.files.end());
    p.record = static_cast<RepoDataRecord&&>(std::move(r));
    p.record.url = redact_url(p.record.url);
    p.record.channel = redact_url(p.record.channel);
    // conda writes the channel with its subdir (".../conda-forge/linux-64"); a lockfile keeps the channel.
    const std::string& subdir = p.record.subdir;
    if (!subdir.empty() && p.record.channel.ends_with("/" + subdir)) {
      p.record.channel.resize(p.record.channel.size() - subdir.size() - 1);
    }
    if (auto it = shadowed.find(p.record.name); it != shadowed.end()) p.shadowed_by = it->second;
    if (!subdir.empty() && subdir != "noarch") ++subdirs[subdir];
    env.packages.push_back(std::move(p));
  }
  env.platform = host_platform;
  int best = 0;
  for (const auto& [s, n] : subdirs) {
    if (n > best) {
      best = n;
      env.platform = s;
    }
  }
  std::sort(env.drift.modified.begin(), env.drift.modified.end(),
            [](const ModifiedFile& a, const ModifiedFile& b) { return a.path < b.path; });
  std::sort(env.drift.unowned.begin(), env.drift.unowned.end());
  for (auto& [who, files] : env.drift.missing) std::sort(files.begin(), files.end());
  return env;
}

Snapshot capture(const Host& seam, const CaptureOptions& options) {
  Snapshot s;
  s.timestamp = options.timestamp;
  s.host = capture_host_facts(seam, options, s.problems);
  std::vector<fs::path> prefixes;
  if (options.prefixes.empty()) {
    prefixes = discover_prefixes(seam, &s.problems);
  } else {
    std::set<fs::path> seen;  // -p X -p X/: one environment
    for (const auto& p : options.prefixes)
      if (seen.insert(one_spelling(p)).second) prefixes.push_back(one_spelling(p));
  }
  std::set<std::string> names;
  for (const auto& p : prefixes) {
    auto env = capture_prefix(seam, p, s.host.platform, options, s.problems);
    if (!env) {
      s.problems.push_back({env.error().where, env.error().message});
      continue;
    }
    if (env->platform.empty()) {
      // Only on a --root tree without libc.so.6 and a prefix of noarch or pip packages alone: a
      // snapshot environment without a platform could not be read back, checked or locked.
      s.problems.push_back({p.string(),
                            "its platform is unknown (no conda package names a subdir, and the host's CPU architecture "
                            "was not found: libc.so.6 is missing), so the environment is left out of the snapshot"});
      continue;
    }
    std::string name = env->name;
    for (int i = 2; names.count(name); ++i) name = env->name + "-" + std::to_string(i);
    env->name = name;
    names.insert(name);
    s.environments.push_back(std::move(*env));
  }
  std::sort(s.environments.begin(), s.environments.end(),
            [](const CapturedEnvironment& a, const CapturedEnvironment& b) { return a.name < b.name; });
  std::sort(s.problems.begin(), s.problems.end(), [](const CaptureProblem& a, const CaptureProblem& b) {
    return std::tie(a.where, a.message) < std::tie(b.where, b.message);
  });
  return s;
}

}  // namespace envlock
