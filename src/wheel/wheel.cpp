// wheel.cpp — installing one wheel into a prefix (PEP 427, 376, 610). See envlock/wheel.hpp for
// the contract; pypa/installer (src/installer/_core.py, destinations.py, sources.py, scripts.py,
// utils.py) is the peer whose bytes it reproduces.
#include "envlock/wheel.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/encoding.hpp"
#include "envlock/hash.hpp"
#include "envlock/input_file.hpp"  // read_input_file
#include "envlock/install.hpp"  // python_shebang
#include "envlock/package_record.hpp"  // read_conda_meta
#include "envlock/pip.hpp"      // parse_record
#include "envlock/pypi_name.hpp"
#include "envlock/pypi_version.hpp"  // Pep440Version: METADATA's Version against the file name's
#include "envlock/text.hpp"
#include "../install/fs_util.hpp"  // detail::Tree: the install module's guard against links out of the prefix

namespace envlock {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMetadataCap = 64ULL << 20;  // WHEEL, RECORD, entry_points.txt: read whole

Error bad_wheel(const fs::path& wheel, std::string message, std::string hint = {}) {
  return Error{ErrorKind::Integrity, wheel.string(), std::move(message), "", std::move(hint)};
}

Error io_error(const std::string& where, const std::string& what, int err) {
  return Error{ErrorKind::Io, where, what + ": " + std::strerror(err), "", ""};
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = s.find(sep, from);
    out.push_back(s.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
    if (at == std::string_view::npos) return out;
    from = at + 1;
  }
}

/// Why a member name is unsafe, or empty when it is a plain relative path. A trailing '/'
/// (a directory member) is allowed.
std::string unsafe_name(std::string_view name) {
  if (name.empty()) return "an empty name";
  if (name.front() == '/') return "an absolute name";
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0]))) return "a drive letter";
  if (name.find('\\') != std::string_view::npos) return "a backslash (a separator on Windows)";
  if (name.find('\0') != std::string_view::npos) return "a NUL byte";
  std::string_view body = name;
  if (body.back() == '/') body.remove_suffix(1);
  for (std::string_view part : split(body, '/')) {
    if (part.empty()) return "an empty path component";
    if (part == ".") return "a `.` component";
    if (part == "..") return "a `..` component";
  }
  return {};
}

Result<std::string> read_member(ZipMemberReader& data, const fs::path& wheel, const std::string& name) {
  std::string out;
  for (;;) {
    auto block = data.next();
    if (!block) return block.error();
    if (block->empty()) return out;
    out.append(*block);
    if (out.size() > kMetadataCap) return bad_wheel(wheel, "member '" + name + "' is over 64 MiB, too large for metadata");
  }
}

/// RFC 822 headers of WHEEL (the first value of each, as email.message.Message[] gives).
std::map<std::string, std::string> read_headers(std::string_view text) {
  std::map<std::string, std::string> out;
  for (std::string_view line : split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.front() == ' ' || line.front() == '\t') continue;
    std::string key(trim_view(line.substr(0, colon)));
    out.emplace(std::move(key), std::string(trim_view(line.substr(colon + 1))));
  }
  return out;
}

bool word_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '.' || u >= 0x80;
}

struct EntryPoint {
  std::string name, module, attr;
};

/// console_scripts and gui_scripts of entry_points.txt, in file order, read as Python's
/// ConfigParser(delimiters="=") with case kept reads them (pypa/installer parse_entrypoints):
/// `[section]` headers, `key = value`, full-line `#`/`;` comments, indented continuation lines;
/// a duplicate section or key, a line that is none of these, or a value that is not
/// `module:attr [extras]` is refused.
Result<std::vector<EntryPoint>> parse_entry_points(std::string_view text, const std::string& where) {
  struct Item {
    std::string key, value;
    int line;
  };
  std::vector<std::pair<std::string, std::vector<Item>>> sections;
  std::set<std::string> seen_sections;
  int lineno = 0;
  Item* current = nullptr;
  for (std::string_view raw : split(text, '\n')) {
    ++lineno;
    const std::string_view line = trim_view(raw);
    const bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    if (line.empty()) continue;
    if (line.front() == '#' || line.front() == ';') continue;
    const std::string at = where + ":" + std::to_string(lineno);
    if (indented && current != nullptr) {
      current->value += "\n" + std::string(line);
      continue;
    }
    current = nullptr;
    if (line.front() == '[' && line.back() == ']') {
      std::string name(line.substr(1, line.size() - 2));
      if (!seen_sections.insert(name).second) {
        return Error{ErrorKind::Parse, at, "section [" + name + "] is written twice", "  " + std::string(line), ""};
      }
      sections.emplace_back(std::move(name), std::vector<Item>{});
      continue;
    }
    const std::size_t eq = line.find('=');
    if (sections.empty() || eq == std::string_view::npos) {
      return Error{ErrorKind::Parse, at, sections.empty() ? "an entry before any [section]" : "expected `name = module:attr`",
                   "  " + std::string(line), "entry_points.txt is an INI file (the entry points specification)"};
    }
    Item item{std::string(trim_view(line.substr(0, eq))), std::string(trim_view(line.substr(eq + 1))), lineno};
    for (const Item& other : sections.back().second) {
      if (other.key == item.key) {
        return Error{ErrorKind::Parse, at, "entry '" + item.key + "' is written twice in [" + sections.back().first + "]",
                     "  " + std::string(line), ""};
      }
    }
    sections.back().second.push_back(std::move(item));
    current = &sections.back().second.back();
  }
  std::vector<EntryPoint> out;
  for (const auto& [section, items] : sections) {
    if (section != "console_scripts" && section != "gui_scripts") continue;
    for (const Item& item : items) {
      const std::string at = where + ":" + std::to_string(item.line);
      const std::string& v = item.value;
      // installer's _ENTRYPOINT_REGEX: ([\w.]+)\s*(:\s*([\w.]+))\s*(\[.*\])?\s*$
      std::size_t i = 0;
      auto skip_space = [&] {
        while (i < v.size() && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
      };
      auto word = [&] {
        const std::size_t from = i;
        while (i < v.size() && word_char(v[i])) ++i;
        return v.substr(from, i - from);
      };
      EntryPoint ep;
      ep.name = item.key;
      ep.module = word();
      skip_space();
      bool good = !ep.module.empty() && i < v.size() && v[i] == ':';
      if (good) {
        ++i;
        skip_space();
        ep.attr = word();
        skip_space();
        good = !ep.attr.empty();
      }
      if (good && i < v.size() && v[i] == '[') {
        std::size_t eol = v.find('\n', i);
        if (eol == std::string::npos) eol = v.size();
        const std::size_t close = v.rfind(']', eol - 1);
        good = close != std::string::npos && close > i;
        if (good) i = close + 1;
        skip_space();
      }
      good = good && i == v.size();
      if (!good) {
        return Error{ErrorKind::Parse, at, "entry '" + item.key + "' is not `module:attr [extras]`", "  " + v, ""};
      }
      const std::string bad = unsafe_name(ep.name);
      if (!bad.empty() || ep.name.find('/') != std::string::npos) {
        return Error{ErrorKind::Integrity, at,
                     "refused entry point '" + ep.name + "': a script name must be a plain file name, not " +
                         (bad.empty() ? std::string("a path") : bad),
                     "", "the wheel is malformed or malicious"};
      }
      out.push_back(std::move(ep));
    }
  }
  return out;
}

/// pypa/installer's script (scripts.py _SCRIPT_TEMPLATE) after `shebang`.
std::string entry_point_script(const std::string& shebang, const EntryPoint& ep) {
  return shebang + "# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom " + ep.module + " import " +
         ep.attr.substr(0, ep.attr.find('.')) +
         "\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n"
         "    sys.exit(" + ep.attr + "())\n";
}

/// `to` relative to `from` (both prefix-relative folders), as os.path.relpath gives it.
std::string relative_dir(std::string_view to, std::string_view from) {
  std::vector<std::string_view> t = to.empty() ? std::vector<std::string_view>{} : split(to, '/');
  std::vector<std::string_view> f = from.empty() ? std::vector<std::string_view>{} : split(from, '/');
  std::size_t common = 0;
  while (common < t.size() && common < f.size() && t[common] == f[common]) ++common;
  std::string out;
  for (std::size_t i = common; i < f.size(); ++i) out += out.empty() ? ".." : "/..";
  for (std::size_t i = common; i < t.size(); ++i) {
    if (!out.empty()) out += "/";
    out += t[i];
  }
  return out.empty() ? "." : out;
}

/// A RECORD field, quoted as Python's csv module (QUOTE_MINIMAL) quotes it.
std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string record_hash(const std::string& hex) { return record_sha256_field(hex); }

/// Writes `path` (new, O_EXCL) in the staging tree; the parent folders are made as needed.
class StagedFile {
 public:
  StagedFile() = default;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// `made` holds the folders made so far (each is made once, not stat(2)ed per file).
  Status open(const fs::path& path, const std::string& shown, bool executable, std::set<fs::path>& made) {
    if (fs::path parent = path.parent_path(); !made.count(parent)) {
      std::error_code ec;
      fs::create_directories(parent, ec);
      if (ec) return io_error(shown, "cannot create its folder", ec.value());
      made.insert(std::move(parent));
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0777 : 0666);
    if (fd_ < 0) {
      if (errno == EEXIST) {
        return Error{ErrorKind::Integrity, shown, "the wheel installs this file twice", "",
                     "the wheel is malformed (a member and an entry point or generated file share a path)"};
      }
      return io_error(shown, "cannot write", errno);
    }
    shown_ = shown;
    executable_ = executable;
    return ok_status();
  }

  Status write(std::string_view bytes) {
    if (hashing_) hasher_.update(bytes);
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return io_error(shown_, "cannot write", errno);
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return ok_status();
  }

  /// Bytes written are not hashed (the caller hashes them); close() then returns no digest.
  void skip_hashing() { hashing_ = false; }

  /// Closes the file; executables get x for everyone past the umask (installer's
  /// make_file_executable: 0777 & ~umask | 0111). Returns the sha256 and size written.
  Result<std::pair<std::string, std::uint64_t>> close() {
    if (executable_) {
      struct stat st {};
      if (::fstat(fd_, &st) != 0 || ::fchmod(fd_, (st.st_mode & 07777) | 0111) != 0) return io_error(shown_, "cannot chmod", errno);
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return io_error(shown_, "cannot write", errno);
    if (!hashing_) return std::make_pair(std::string(), std::uint64_t{0});
    const std::uint64_t size = hasher_.bytes();
    return std::make_pair(hasher_.hex_digest(), size);
  }

 private:
  int fd_ = -1;
  bool hashing_ = true;
  std::string shown_;
  bool executable_ = false;
  Hasher hasher_{HashAlgorithm::Sha256};
};

/// `.envlock-wheel-<pid>-<n>`: a staging folder's name, unique in this process (what
/// remove_stale_wheel_staging() recognises once the pid is dead).
std::string next_staging_name() {
  static std::atomic<unsigned> counter{0};
  return ".envlock-wheel-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// The staging folder inside the prefix, removed on destruction unless released.
struct Staging {
  fs::path dir;
  ~Staging() {
    if (dir.empty()) return;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

int rename_noreplace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  // A filesystem without RENAME_NOREPLACE: link(2) refuses an existing file; a folder is
  // checked first (a narrow race, as conda's and pip's plain renames have everywhere).
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) {
    if (::link(from.c_str(), to.c_str()) != 0) return errno;
    ::unlink(from.c_str());
    return 0;
  }
  if (::lstat(to.c_str(), &st) == 0) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

/// Files of the staged tree `staged` that already exist in `target` (folders are merged).
void find_conflicts(const fs::path& staged, const fs::path& target, const std::string& rel, std::vector<std::string>& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(staged, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string child = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::lstat((target / name).c_str(), &st) != 0) continue;
    const bool staged_dir = entry.is_directory(ec) && !entry.is_symlink(ec);
    struct stat followed {};
    const bool target_dir = ::stat((target / name).c_str(), &followed) == 0 && S_ISDIR(followed.st_mode);
    if (staged_dir && target_dir) find_conflicts(entry.path(), target / name, child, out);
    else out.push_back(child);
  }
}

/// Moves the staged tree into `target`: whole entries where `target` has none of that name, into
/// existing folders otherwise. `moved` collects (staged, target) pairs to undo.
Status move_tree(const fs::path& staged, const fs::path& target, const std::string& rel,
                 std::vector<std::pair<fs::path, fs::path>>& moved) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(staged, ec)) entries.push_back(entry.path());
  if (ec) return io_error(staged.string(), "cannot read the staging folder", ec.value());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& from : entries) {
    const std::string name = from.filename().string();
    const std::string child = rel.empty() ? name : rel + "/" + name;
    const fs::path to = target / name;
    struct stat st {};
    if (::stat(to.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && fs::is_directory(fs::symlink_status(from))) {
      if (auto s = move_tree(from, to, child, moved); !s) return s;
      continue;
    }
    if (const int err = rename_noreplace(from, to); err != 0) {
      // A folder of that name appeared meanwhile (another wheel installing beside this one):
      // merge into it.
      if ((err == EEXIST || err == ENOTEMPTY) && ::stat(to.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          fs::is_directory(fs::symlink_status(from))) {
        if (auto s = move_tree(from, to, child, moved); !s) return s;
        continue;
      }
      if (err == EEXIST || err == ENOTEMPTY) {
        return Error{ErrorKind::Io, child, "already in the prefix: the wheel would overwrite it", "",
                     "another package installed it meanwhile; nothing of this wheel was installed"};
      }
      return io_error(child, "cannot move into the prefix", err);
    }
    moved.emplace_back(from, to);
  }
  return ok_status();
}

/// An installed distribution's files moved aside (into a folder of their own inside the prefix)
/// while a new version moves in: put back on failure, deleted on success.
class SetAside {
 public:
  SetAside() = default;
  SetAside(const SetAside&) = delete;
  SetAside& operator=(const SetAside&) = delete;
  ~SetAside() {
    if (!committed_) restore();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  /// Moves every file the RECORD of `dist_info` (prefix-relative) lists out of `prefix` into
  /// `dir`. A row that leads outside the prefix is refused before anything moves. With
  /// `bytecode_tag` ("cpython-311"), each `.py` row's bytecode goes too, as pip's uninstall adds
  /// importlib's cache_from_source() of it: `__pycache__/<stem>.<tag>.pyc` and its `.opt-1`,
  /// `.opt-2` forms, those that are there.
  Status take(const fs::path& prefix, const std::string& dist_info, const fs::path& dir, const std::string& bytecode_tag = {}) {
    prefix_ = prefix;
    dir_ = dir;
    const std::string record_file = dist_info + "/RECORD";
    std::ifstream in(prefix / record_file, std::ios::binary);
    if (!in) return Error{ErrorKind::Io, record_file, "cannot read the RECORD of the distribution to replace", "", ""};
    std::stringstream text;
    text << in.rdbuf();
    auto rows = parse_record(text.str(), record_file);
    if (!rows) return rows.error();
    const fs::path site = fs::path(dist_info).parent_path();
    std::vector<std::string> paths;
    for (const auto& row : *rows) {
      const std::string rel = (site / row.path).lexically_normal().generic_string();
      if (row.path.empty() || row.path.front() == '/' || rel == ".." || rel.starts_with("../") || rel == ".") {
        return Error{ErrorKind::Integrity, record_file, "lists '" + row.path + "', outside the prefix: nothing is removed", "",
                     "the RECORD was altered; remove the distribution by hand"};
      }
      paths.push_back(rel);
      if (!bytecode_tag.empty() && rel.ends_with(".py")) {
        const std::size_t slash = rel.rfind('/');
        const std::string folder = slash == std::string::npos ? "" : rel.substr(0, slash + 1);
        const std::string stem = rel.substr(folder.size(), rel.size() - folder.size() - 3);
        for (const char* opt : {"", ".opt-1", ".opt-2"})
          paths.push_back(folder + "__pycache__/" + stem + "." + bytecode_tag + opt + ".pyc");
      }
    }
    // Each row is resolved beneath the prefix, as the conda linker writes (detail::Tree): a
    // folder on the way that is a link out of the prefix (site-packages/foo -> /elsewhere) is
    // refused before anything moves, never followed to delete there (attack 22 A3).
    auto tree = detail::Tree::open(prefix);
    if (!tree) return tree.error();
    // The installer's boundary holds for its uninstall half (attack 23 F9): a row naming the
    // environment's records (conda-meta/), envlock's own files (.envlock-*) or a file a conda
    // record lists is left where it is and named, as conda reports a path two packages claim
    // (a clobber) instead of deleting the other's file; pip trusts RECORD and would delete it.
    std::optional<CondaOwnedFiles> read_owned;
    const CondaOwnedFiles* owned = conda_files_;
    std::vector<std::pair<std::string, struct stat>> found;
    for (const std::string& rel : paths) {
      struct stat st {};
      auto there = tree->lstat(rel, st);
      if (!there) {
        return Error{ErrorKind::Integrity, prefix.string(), record_file + " lists '" + rel + "', which leads outside the prefix through a link: nothing was changed",
                     "", "a folder of the installed distribution is a link out of the prefix; remove it by hand"};
      }
      if (!*there || S_ISDIR(st.st_mode)) continue;
      if (owned == nullptr) {
        auto files = conda_owned_files(prefix);
        if (!files) return files.error();
        owned = &read_owned.emplace(std::move(*files));
      }
      const std::string top = rel.substr(0, rel.find('/'));
      if (top == detail::kGuardedFolder) {
        left_.push_back(rel + " (the environment's records)");
      } else if (top.starts_with(".envlock-") || top.starts_with(".envlock.")) {
        left_.push_back(rel + " (envlock's own file)");
      } else if (auto it = owned->find(rel); it != owned->end()) {
        left_.push_back(rel + " (a file of conda package " + it->second + ")");
      } else {
        found.emplace_back(rel, st);
      }
    }
    std::error_code ec;
    if (!fs::create_directory(dir_, ec)) return io_error(prefix.string(), "cannot create " + dir_.filename().string(), ec ? ec.value() : EEXIST);
    for (const auto& [rel, st] : found) {
      const fs::path aside = dir_ / std::to_string(moved_.size());
      const std::size_t slash = rel.rfind('/');
      auto dfd = tree->dir(slash == std::string::npos ? "" : rel.substr(0, slash), false);
      if (!dfd) return dfd.error();
      const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
      if (::renameat(*dfd, name.c_str(), AT_FDCWD, aside.c_str()) != 0) return io_error(rel, "cannot move aside", errno);
      moved_.emplace_back(prefix / rel, aside);
    }
    return ok_status();
  }

  /// The files conda records own (nullptr: read from the prefix's conda-meta when needed).
  void set_conda_files(const CondaOwnedFiles* files) { conda_files_ = files; }

  /// The rows take() left in place, each with why (InstalledWheel::left_in_place).
  [[nodiscard]] const std::vector<std::string>& left_in_place() const { return left_; }

  /// How many files were moved aside.
  [[nodiscard]] std::size_t size() const { return moved_.size(); }

  /// Keeps the removal: the folders the old files leave empty go too (never `keep`).
  void commit(const std::set<fs::path>& keep) {
    committed_ = true;
    std::set<fs::path, std::greater<>> parents;
    for (const auto& [original, aside] : moved_) {
      for (fs::path p = original.parent_path(); p.string().size() > prefix_.string().size() && !keep.count(p); p = p.parent_path())
        parents.insert(p);
    }
    for (const fs::path& p : parents) ::rmdir(p.c_str());  // fails, harmlessly, when not empty
  }

  void restore() {
    for (auto it = moved_.rbegin(); it != moved_.rend(); ++it) ::rename(it->second.c_str(), it->first.c_str());
    moved_.clear();
  }

 private:
  fs::path prefix_, dir_;
  std::vector<std::pair<fs::path, fs::path>> moved_;  // (original, aside)
  const CondaOwnedFiles* conda_files_ = nullptr;
  std::vector<std::string> left_;
  bool committed_ = false;
};

struct RecordRow {
  std::string path;  // prefix-relative
  std::string record_path;
  std::string sha256;
  std::uint64_t size = 0;
};

}  // namespace

Result<WheelFileName> parse_wheel_file_name(std::string_view file_name) {
  const std::size_t slash = file_name.rfind('/');
  std::string_view base = slash == std::string_view::npos ? file_name : file_name.substr(slash + 1);
  auto fail = [&](const std::string& why) {
    return Error{ErrorKind::Parse, std::string(base), "not a wheel file name: " + why, "",
                 "a wheel is named {distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl (PEP 427)"};
  };
  if (!base.ends_with(".whl")) return fail("it does not end in .whl");
  base.remove_suffix(4);
  const auto parts = split(base, '-');
  if (parts.size() != 5 && parts.size() != 6) return fail("it has " + std::to_string(parts.size()) + " `-`-separated fields, not 5 or 6");
  for (std::string_view p : parts)
    if (p.empty()) return fail("a field is empty");
  WheelFileName w;
  w.distribution = parts[0];
  w.version = parts[1];
  if (parts.size() == 6) {
    if (!std::isdigit(static_cast<unsigned char>(parts[2][0]))) return fail("the build tag does not start with a digit");
    w.build_tag = parts[2];
  }
  w.python_tag = parts[parts.size() - 3];
  w.abi_tag = parts[parts.size() - 2];
  w.platform_tag = parts[parts.size() - 1];
  return w;
}

WheelScheme conda_wheel_scheme(std::string_view python_xy, std::string_view distribution) {
  const std::string site = "lib/python" + std::string(python_xy) + "/site-packages";
  return WheelScheme{site, site, "include/python" + std::string(python_xy) + "/" + std::string(distribution), "bin", ""};
}

std::string installed_wheel_sha256(const fs::path& dist_info) {
  // Read as every input is (read_input_file: a regular file, never a FIFO, which blocked install
  // and verify forever, nor a link into /proc), capped; only 64 hex digits count as a hash.
  auto read_small = [](const fs::path& p, std::uintmax_t cap) -> std::optional<std::string> {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return std::nullopt;
    InputFile f = read_input_file(p, cap);
    if (f.problem != InputFile::Problem::None) return std::string();
    return std::move(f.text);
  };
  auto hex64 = [](std::string h) {
    h = ascii_lower(h);
    const bool ok = h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    return ok ? h : std::string();
  };
  if (auto own = read_small(dist_info / "ENVLOCK_SHA256", 256)) {
    std::string line = own->substr(0, own->find('\n'));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return hex64(line);
  }
  auto text = read_small(dist_info / "direct_url.json", 1u << 20);
  if (!text) return {};
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("archive_info") || !j["archive_info"].is_object()) return {};
  const auto& info = j["archive_info"];
  if (info.contains("hashes") && info["hashes"].is_object() && info["hashes"].contains("sha256") && info["hashes"]["sha256"].is_string())
    return hex64(info["hashes"]["sha256"].get<std::string>());
  if (info.contains("hash") && info["hash"].is_string() && info["hash"].get<std::string>().starts_with("sha256="))
    return hex64(info["hash"].get<std::string>().substr(7));
  return {};
}

Result<CondaOwnedFiles> conda_owned_files(const fs::path& prefix) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(prefix / detail::kGuardedFolder, ec))) return CondaOwnedFiles{};  // no conda package
  auto records = read_conda_meta(prefix);
  if (!records) return records.error();
  CondaOwnedFiles owned;
  for (const PrefixRecord& r : *records)
    for (const std::string& f : r.files) owned.emplace(f, r.dist_name());
  return owned;
}

namespace {

/// "X.Y" of `name` when it is `python<X.Y>` (digits, one dot); empty otherwise.
std::string python_xy_of(const std::string& name) {
  if (!name.starts_with("python") || name.size() <= 6) return {};
  const std::string xy = name.substr(6);
  const std::size_t dot = xy.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == xy.size() || xy.find_first_not_of("0123456789.") != std::string::npos ||
      xy.find('.', dot + 1) != std::string::npos)
    return {};
  return xy;
}

}  // namespace

Result<std::string> prefix_python_xy(const fs::path& prefix) {
  std::set<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(prefix / "lib", ec)) {
    const std::string xy = python_xy_of(entry.path().filename().string());
    if (!xy.empty() && fs::is_directory(entry.path() / "site-packages", ec)) found.insert(xy);
  }
  if (found.empty()) {
    for (const auto& entry : fs::directory_iterator(prefix / "bin", ec)) {
      const std::string xy = python_xy_of(entry.path().filename().string());
      if (!xy.empty()) found.insert(xy);
    }
  }
  if (found.size() == 1) return *found.begin();
  return Error{ErrorKind::Usage, prefix.string(),
               found.empty() ? "has no lib/pythonX.Y/site-packages folder and no bin/pythonX.Y: no Python to install a wheel for"
                             : "has " + std::to_string(found.size()) + " Python versions (lib/pythonX.Y/site-packages or bin/pythonX.Y)",
               "", "install python into the prefix first, or name the version (WheelInstallOptions::python_xy)"};
}

std::string direct_url_json(const DirectUrl& origin) {
  auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(-1, ' ', true); };
  std::string archive = "{}";
  if (!origin.sha256.empty()) {
    archive = "{\"hash\": " + quoted("sha256=" + origin.sha256) + ", \"hashes\": {\"sha256\": " + quoted(origin.sha256) + "}}";
  }
  return "{\"archive_info\": " + archive + ", \"url\": " + quoted(origin.url) + "}";
}

namespace {

/// What a wheel's first reading finds: its one dist-info folder, the kind of its root, its RECORD
/// (which covers every member, checked), its entry points. Nothing is written.
struct WheelContents {
  std::string dist_info;  // "<name>-<version>.dist-info"
  std::string stem;       // "<name>-<version>"
  bool root_is_purelib = false;
  std::map<std::string, RecordEntry> record;  // member -> its row (the last row of a path counts)
  std::vector<EntryPoint> entry_points;
};

/// What the first reading of a wheel gathers: its file members (central-directory order), its
/// top-level `.dist-info` folders and their metadata files (WHEEL, RECORD, entry_points.txt,
/// METADATA) — from the .whl, or from an unpacked-cache entry.
struct WheelListing {
  struct Member {
    std::string name;
    bool executable = false;
  };
  std::vector<Member> members;
  std::set<std::string> dist_infos;
  std::map<std::string, std::string> metadata;  // "<x>.dist-info/WHEEL" ... -> text
};

/// Whether member `name` is one of the dist-info metadata files a listing reads.
bool listed_metadata(const std::string& name) {
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos || !name.substr(0, slash).ends_with(".dist-info")) return false;
  const std::string rest = name.substr(slash + 1);
  return rest == "WHEEL" || rest == "RECORD" || rest == "entry_points.txt" || rest == "METADATA";
}

Result<WheelContents> check_wheel_contents(const fs::path& wheel, const WheelFileName& file_name, WheelListing listing);

/// Reads `wheel`'s member names and kinds and its dist-info metadata (docs/pypi.md, step 1) and
/// checks RECORD against the members (step 2), as pypa/installer's validate_record does.
Result<WheelContents> read_wheel_contents(const fs::path& wheel, const WheelFileName& file_name, const ExtractLimits& limits) {
  // Pass 1: names, kinds and the dist-info metadata; nothing is written.
  WheelListing listing;
  std::vector<WheelListing::Member>& members = listing.members;
  std::set<std::string> names;
  std::set<std::string>& dist_infos = listing.dist_infos;
  std::map<std::string, std::string>& metadata = listing.metadata;
  auto pass1 = read_zip(wheel, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
    if (const std::string bad = unsafe_name(m.name); !bad.empty()) {
      return bad_wheel(wheel, "refused member '" + m.name + "': " + bad, "the wheel is malformed or malicious");
    }
    if (!names.insert(m.name).second) {
      return bad_wheel(wheel, "refused member '" + m.name + "': listed twice in the archive",
                       "two members of one name are read differently by different tools; the wheel is malformed or malicious");
    }
    const std::string top = m.name.substr(0, m.name.find('/'));
    if (top.ends_with(".dist-info") && top.size() < m.name.size()) dist_infos.insert(top);
    if (m.kind == ZipMember::Kind::Directory || m.name.ends_with("/")) return ok_status();
    if (m.kind != ZipMember::Kind::File) {
      return bad_wheel(wheel, "refused member '" + m.name + "': " +
                                  (m.kind == ZipMember::Kind::Symlink ? "a symbolic link" : "not a regular file"),
                       "a wheel holds regular files only (links are not part of the wheel format)");
    }
    members.push_back({m.name, (m.mode & 0111) != 0});
    const std::size_t slash = m.name.find('/');
    if (slash != std::string::npos && top.ends_with(".dist-info")) {
      const std::string rest = m.name.substr(slash + 1);
      if (rest == "WHEEL" || rest == "RECORD" || rest == "entry_points.txt" || rest == "METADATA") {
        auto text = read_member(data, wheel, m.name);
        if (!text) return text.error();
        metadata[m.name] = std::move(*text);
      }
    }
    return ok_status();
  }, limits);
  if (!pass1) return pass1.error();
  return check_wheel_contents(wheel, file_name, std::move(listing));
}

/// Checks a listing (read_wheel_contents' pass 1, or an unpacked-cache entry's): one dist-info
/// folder of the file name's distribution, WHEEL 1.x, METADATA's name and version, entry points,
/// and RECORD covering every member.
Result<WheelContents> check_wheel_contents(const fs::path& wheel, const WheelFileName& file_name, WheelListing listing) {
  const std::vector<WheelListing::Member>& members = listing.members;
  const std::set<std::string>& dist_infos = listing.dist_infos;
  std::map<std::string, std::string>& metadata = listing.metadata;
  if (dist_infos.size() != 1) {
    return bad_wheel(wheel, dist_infos.empty() ? "has no .dist-info folder" : "has " + std::to_string(dist_infos.size()) + " .dist-info folders",
                     "a wheel holds exactly one {distribution}-{version}.dist-info folder (PEP 427)");
  }
  WheelContents c;
  c.dist_info = *dist_infos.begin();
  const std::string& dist_info = c.dist_info;
  c.stem = dist_info.substr(0, dist_info.size() - std::string_view(".dist-info").size());
  {
    const std::size_t dash = c.stem.rfind('-');
    const std::string di_name = dash == std::string::npos ? c.stem : c.stem.substr(0, dash);
    if (pep503_normalize(di_name) != pep503_normalize(file_name.distribution)) {
      return bad_wheel(wheel, "its folder " + dist_info + " is not of the distribution '" + file_name.distribution + "' its file name names");
    }
  }
  const std::string where_dist_info = wheel.string() + ": " + dist_info;
  auto wheel_it = metadata.find(dist_info + "/WHEEL");
  if (wheel_it == metadata.end()) return bad_wheel(wheel, "has no " + dist_info + "/WHEEL", "a wheel's dist-info holds WHEEL (PEP 427)");
  const auto headers = read_headers(wheel_it->second);
  const auto version_it = headers.find("Wheel-Version");
  if (version_it == headers.end() || !version_it->second.starts_with("1.")) {
    return Error{ErrorKind::Incompatible, where_dist_info + "/WHEEL",
                 "Wheel-Version " + (version_it == headers.end() ? std::string("is missing") : version_it->second + " is not 1.x"), "",
                 "envlock installs wheels of format 1.x only (PEP 427), as pip and installer do"};
  }
  const auto purelib_it = headers.find("Root-Is-Purelib");
  c.root_is_purelib = purelib_it != headers.end() && purelib_it->second == "true";

  auto record_it = metadata.find(dist_info + "/RECORD");
  if (record_it == metadata.end()) return bad_wheel(wheel, "has no " + dist_info + "/RECORD", "a wheel's dist-info holds RECORD (PEP 427)");
  std::string record_text = record_it->second;
  for (std::size_t at = 0; (at = record_text.find("\r\n", at)) != std::string::npos;) record_text.erase(at, 1);
  auto rows = parse_record(record_text, where_dist_info + "/RECORD");
  if (!rows) return rows.error();
  std::map<std::string, RecordEntry>& record = c.record;
  for (auto& row : *rows) record[row.path] = row;  // the last row of a path counts (installer's dict)

  // METADATA names the distribution every reader (list, diff, snapshot, the next install) trusts:
  // it must be the one the file name names (pip: "has inconsistent name" / "inconsistent
  // version"; uv refuses it too). Name compared PEP 503 normalised; Version as pip 23/24 compare
  // them (LinkCandidate._check_metadata_consistency, src/pip/_internal/resolution/resolvelib/
  // candidates.py: packaging Version objects, the file name's `_` read as `-` by models/wheel.py),
  // so `1.0` in the file name is METADATA's `1.0.0`, `2.0rc1` its `2.0-RC1`; a text that is no PEP 440
  // version must be the same text.
  auto same_version = [](const std::string& meta, const std::string& file) {
    std::string from_file = file;
    std::replace(from_file.begin(), from_file.end(), '_', '-');
    if (meta == file || meta == from_file) return true;
    auto a = Pep440Version::parse(meta);
    auto b = Pep440Version::parse(from_file);
    return a && b && *a == *b;
  };
  {
    auto meta_it = metadata.find(dist_info + "/METADATA");
    if (meta_it == metadata.end()) return bad_wheel(wheel, "has no " + dist_info + "/METADATA", "a wheel's dist-info holds METADATA (PEP 427)");
    const auto meta = read_headers(meta_it->second);
    const auto name_it = meta.find("Name");
    const auto ver_it = meta.find("Version");
    const std::string meta_name = name_it == meta.end() ? "" : name_it->second;
    const std::string meta_version = ver_it == meta.end() ? "" : ver_it->second;
    if (pep503_normalize(meta_name) != pep503_normalize(file_name.distribution) || !same_version(meta_version, file_name.version)) {
      return bad_wheel(wheel,
                       "its METADATA names '" + printable(meta_name) + "' version '" + printable(meta_version) + "', not " +
                           file_name.distribution + " " + file_name.version + " as its file name",
                       "the wheel is not the distribution it claims to be; pip and uv refuse it (inconsistent name or version)");
    }
  }
  if (auto it = metadata.find(dist_info + "/entry_points.txt"); it != metadata.end()) {
    auto parsed = parse_entry_points(it->second, where_dist_info + "/entry_points.txt");
    if (!parsed) return parsed.error();
    c.entry_points = std::move(*parsed);
  }

  // RECORD covers every member (installer's WheelFile.validate_record), checked before writing.
  const std::string record_member = dist_info + "/RECORD";
  for (const WheelListing::Member& m : members) {
    const bool signature = m.name == dist_info + "/RECORD.jws" || m.name == dist_info + "/RECORD.p7s";
    auto it = record.find(m.name);
    if (signature) {
      if (it != record.end()) return bad_wheel(wheel, "RECORD lists the signature file " + m.name + ", which it must not (PEP 427)");
      continue;
    }
    if (it == record.end()) {
      return bad_wheel(wheel, "refused member '" + m.name + "': not listed in RECORD",
                       "every file of a wheel is listed in its RECORD with a sha256 (PEP 427), as installer checks");
    }
    if (m.name == record_member) {
      if (!it->second.sha256.empty() || it->second.size) return bad_wheel(wheel, "RECORD lists a hash or size for itself");
      continue;
    }
    if (it->second.sha256.empty() || !it->second.size) {
      return bad_wheel(wheel, "refused member '" + m.name + "': RECORD lists no sha256 and size for it",
                       "every file of a wheel but RECORD is hashed in RECORD (PEP 427)");
    }
  }

  return c;
}

// ---------------------------------------------------------------------------------------------
// The unpacked-wheel cache (WheelInstallOptions::unpacked_cache; uv's archive cache,
// crates/uv-cache and crates/uv-install-wheel/src/linker.rs): `<cache>/<sha256>/` holds `files/`,
// every file member of the wheel as it is in the wheel (a `#!python` script unchanged), each with
// the mode an install writes, and `MEMBERS`, the list install needs, written last.

constexpr std::string_view kUnpackedHeader = "envlock-unpacked-wheel 1";

/// One file member of a cached wheel, in the wheel's central-directory order.
struct CachedMember {
  std::string name;
  std::uint64_t size = 0;
  std::string sha256;          // of its bytes (RECORD's, checked when it was unpacked)
  bool executable = false;     // an executable bit in the wheel
  bool python_script = false;  // starts with `#!python`
  bool mode_ok = true;         // the cached file has the mode an install writes (else it is copied)
};

/// The process's umask, read without changing it (umask(2) would race the threads writing files).
mode_t process_umask() {
  static const mode_t mask = [] {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("Umask:")) return static_cast<mode_t>(std::stoul(std::string(trim_view(line.substr(6))), nullptr, 8));
    }
    const mode_t old = ::umask(022);
    ::umask(old);
    return old;
  }();
  return mask;
}

/// The mode StagedFile gives a member (installer's make_file_executable for an executable one).
mode_t installed_mode(bool executable) {
  const mode_t u = process_umask();
  return executable ? ((0777 & ~u) | 0111) : (0666 & ~u);
}

bool hex64(std::string_view h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// The members of the cache entry `entry` when it is whole: MEMBERS reads, and each file it lists
/// exists, regular, with its recorded size and executable bit (and sha256 with `verify_hashes`).
/// nullopt otherwise (absent or damaged: unpacked again).
std::optional<std::vector<CachedMember>> load_unpacked(const fs::path& entry, bool verify_hashes) {
  std::ifstream in(entry / "MEMBERS", std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line != kUnpackedHeader) return std::nullopt;
  std::vector<CachedMember> out;
  std::set<std::string_view> names;
  const std::string files = (entry / "files").string() + "/";
  // Each file is stat'ed relative to the open files/ folder: no walk of the cache's path per member.
  const int dir_fd = ::open(files.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return std::nullopt;
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_dir{dir_fd};
  while (std::getline(in, line)) {
    // "<size> <sha256> <x> <py> <name>"
    CachedMember m;
    const auto parts = split(line, ' ');
    if (parts.size() < 5) return std::nullopt;
    const auto [end, ec] = std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(), m.size);
    if (ec != std::errc() || end != parts[0].data() + parts[0].size() || !hex64(parts[1]) || parts[2].size() != 1 || parts[3].size() != 1)
      return std::nullopt;
    m.sha256 = parts[1];
    m.executable = parts[2] == "1";
    m.python_script = parts[3] == "1";
    m.name = line.substr(parts[0].size() + parts[1].size() + 6);
    if (!unsafe_name(m.name).empty() || m.name.ends_with("/")) return std::nullopt;
    struct stat st {};
    if (::fstatat(dir_fd, m.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != m.size ||
        ((st.st_mode & 0100) != 0) != m.executable)
      return std::nullopt;
    m.mode_ok = (st.st_mode & 07777) == installed_mode(m.executable);
    if (verify_hashes) {
      auto digest = hash_file(files + m.name, HashAlgorithm::Sha256);
      if (!digest || *digest != m.sha256) return std::nullopt;
    }
    out.push_back(std::move(m));
  }
  for (const CachedMember& m : out)
    if (!names.insert(m.name).second) return std::nullopt;
  return out;
}

/// The listing of a cache entry, for check_wheel_contents(): its members and their metadata files,
/// read from `files/`. nullopt when one cannot be read (damaged).
std::optional<WheelListing> unpacked_listing(const fs::path& entry, const std::vector<CachedMember>& members) {
  WheelListing listing;
  for (const CachedMember& m : members) {
    listing.members.push_back({m.name, m.executable});
    const std::string top = m.name.substr(0, m.name.find('/'));
    if (top.ends_with(".dist-info") && top.size() < m.name.size()) listing.dist_infos.insert(top);
    if (!listed_metadata(m.name)) continue;
    if (m.size > kMetadataCap) return std::nullopt;
    std::ifstream in(entry / "files" / m.name, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return std::nullopt;
    if (text.size() != m.size) return std::nullopt;
    listing.metadata[m.name] = std::move(text);
  }
  return listing;
}

/// A cache entry made by fill_unpacked(): where its files are (the entry, or a temporary folder
/// when another one could not be moved out of its way), and its members.
struct UnpackedEntry {
  fs::path dir;
  bool temporary = false;  // removed once the install has linked from it
  std::vector<CachedMember> members;
};

std::string next_cache_temp_name(std::string_view kind) {
  static std::atomic<unsigned> counter{0};
  return ".envlock-" + std::string(kind) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// Unpacks `wheel` into `<cache>/<key>/`: into a temporary folder of the cache, each member
/// checked against `record` as it is written (the same errors as an install without the cache),
/// MEMBERS written last, then renamed into place (a damaged entry there is moved away first).
/// nullopt when the cache cannot be written, or `key` is not the wheel's sha256: the install then
/// goes without it.
/// With `record` nullptr (the wheel not read yet), the one pass also makes the first reading's
/// checks (read_wheel_contents: names, kinds, then check_wheel_contents over what it wrote, and
/// every member against the RECORD so read), putting the contents in `checked`, so a first
/// install reads the ZIP once (each header costs libarchive a mktime). Anything that fails then
/// gives nullopt, and the install reads the wheel as without the cache, to give its error.
Result<std::optional<UnpackedEntry>> fill_unpacked(const fs::path& wheel, const fs::path& cache, const std::string& key,
                                                   const std::map<std::string, RecordEntry>* record, const ExtractLimits& limits,
                                                   const WheelFileName* file_name = nullptr,
                                                   std::optional<WheelContents>* checked = nullptr) {
  if (auto digest = hash_file(wheel, HashAlgorithm::Sha256); !digest || *digest != key) return std::optional<UnpackedEntry>();
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) return std::optional<UnpackedEntry>();
  Staging tmp;  // removed unless released
  tmp.dir = cache / next_cache_temp_name("unpack");
  if (!fs::create_directory(tmp.dir, ec) || ec) return std::optional<UnpackedEntry>();
  UnpackedEntry entry;
  std::set<fs::path> made{tmp.dir};
  bool cache_failed = false;
  const fs::path files = tmp.dir / "files";
  const bool one_pass = record == nullptr;
  WheelListing listing;
  std::set<std::string> names;
  auto unpacked = read_zip(wheel, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
    if (one_pass) {  // read_wheel_contents' pass 1, before anything of the member is written
      const std::string top = m.name.substr(0, m.name.find('/'));
      if (!unsafe_name(m.name).empty() || !names.insert(m.name).second ||
          (m.kind != ZipMember::Kind::File && m.kind != ZipMember::Kind::Directory && !m.name.ends_with("/")))
        return Error{ErrorKind::Integrity, m.name, "read again without the cache", "", ""};
      if (top.ends_with(".dist-info") && top.size() < m.name.size()) listing.dist_infos.insert(top);
      if (m.kind == ZipMember::Kind::File && !m.name.ends_with("/")) listing.members.push_back({m.name, (m.mode & 0111) != 0});
    }
    if (m.kind != ZipMember::Kind::File || m.name.ends_with("/")) return ok_status();
    if (m.name.find('\n') != std::string::npos) {  // MEMBERS is one line per member
      cache_failed = true;
      return Error{ErrorKind::Io, m.name, "not cached", "", ""};
    }
    const bool executable = (m.mode & 0111) != 0;
    StagedFile f;
    if (auto s = f.open(files / m.name, m.name, executable, made); !s) {
      cache_failed = true;
      return s;
    }
    std::string head;
    std::string* text = one_pass && listed_metadata(m.name) ? &listing.metadata[m.name] : nullptr;
    for (;;) {
      auto block = data.next();
      if (!block) return block.error();
      if (block->empty()) break;
      if (head.size() < 8) head.append(block->substr(0, 8 - head.size()));
      if (text != nullptr) {
        text->append(*block);
        if (text->size() > kMetadataCap) return Error{ErrorKind::Integrity, m.name, "read again without the cache", "", ""};
      }
      if (auto s = f.write(*block); !s) {
        cache_failed = true;
        return s;
      }
    }
    auto done = f.close();
    if (!done) {
      cache_failed = true;
      return done.error();
    }
    const auto& [sha, size] = *done;
    entry.members.push_back({m.name, size, sha, executable, head.starts_with("#!python"), true});
    if (one_pass) return ok_status();  // checked against RECORD once it is read
    auto it = record->find(m.name);
    // RECORD itself and a signature file (RECORD.jws, .p7s) are listed without a hash, checked before.
    if (it != record->end() && it->second.size && (sha != it->second.sha256 || size != *it->second.size)) {
      return Error{ErrorKind::Integrity, wheel.string(), "member '" + m.name + "' does not match its RECORD row",
                   "  expected sha256 " + it->second.sha256 + ", " + std::to_string(*it->second.size) + " bytes\n  actual   sha256 " +
                       sha + ", " + std::to_string(size) + " bytes",
                   "the wheel was altered or damaged; download it again and check its sha256"};
    }
    return ok_status();
  }, limits);
  if (!unpacked) {
    if (cache_failed || one_pass) return std::optional<UnpackedEntry>();
    return unpacked.error();
  }
  if (one_pass) {
    auto contents = check_wheel_contents(wheel, *file_name, std::move(listing));
    if (!contents) return std::optional<UnpackedEntry>();
    for (const CachedMember& m : entry.members) {
      auto it = contents->record.find(m.name);
      if (it != contents->record.end() && it->second.size && (m.sha256 != it->second.sha256 || m.size != *it->second.size))
        return std::optional<UnpackedEntry>();
    }
    checked->emplace(std::move(*contents));
  }
  {
    std::string text = std::string(kUnpackedHeader) + "\n";
    for (const CachedMember& m : entry.members)
      text += std::to_string(m.size) + " " + m.sha256 + " " + (m.executable ? "1" : "0") + " " + (m.python_script ? "1" : "0") + " " + m.name + "\n";
    StagedFile f;
    if (!f.open(tmp.dir / "MEMBERS", "MEMBERS", false, made) || !f.write(text) || !f.close()) return std::optional<UnpackedEntry>();
  }
  const fs::path final_dir = cache / key;
  if (::rename(tmp.dir.c_str(), final_dir.c_str()) != 0) {
    // A damaged entry (or one another process has just made) is in the way: moved away, then removed.
    const fs::path away = cache / next_cache_temp_name("damaged");
    if (::rename(final_dir.c_str(), away.c_str()) == 0) {
      fs::remove_all(away, ec);
      if (::rename(tmp.dir.c_str(), final_dir.c_str()) == 0) {
        tmp.dir.clear();
        entry.dir = final_dir;
        return std::optional<UnpackedEntry>(std::move(entry));
      }
    }
    entry.dir = tmp.dir;  // linked from where it is, removed after the install
    entry.temporary = true;
    tmp.dir.clear();
    return std::optional<UnpackedEntry>(std::move(entry));
  }
  tmp.dir.clear();
  entry.dir = final_dir;
  return std::optional<UnpackedEntry>(std::move(entry));
}

/// Puts the cached file `from` at `to` in the staging tree: a hard link, or a copy (written with
/// the install's mode) across file systems, where links are refused, or when `copy` is asked.
Status link_or_copy(int from_dir, const std::string& from_name, const fs::path& from, int to_dir, const fs::path& to,
                    const std::string& shown, bool executable, bool copy, std::set<fs::path>& made) {
  if (!copy) {
    if (fs::path parent = to.parent_path(); !made.count(parent)) {
      std::error_code ec;
      fs::create_directories(parent, ec);
      if (ec) return io_error(shown, "cannot create its folder", ec.value());
      made.insert(std::move(parent));
    }
    // Relative to the open entry and staging folders, so neither path is walked whole per member.
    if (::linkat(from_dir, from_name.c_str(), to_dir, shown.c_str(), 0) == 0) return ok_status();
    if (errno == EEXIST) {
      return Error{ErrorKind::Integrity, shown, "the wheel installs this file twice", "",
                   "the wheel is malformed (a member and an entry point or generated file share a path)"};
    }
    if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != ENOTSUP && errno != EACCES) return io_error(shown, "cannot link", errno);
  }
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return io_error(from.string(), "cannot read the cached file", errno);
  StagedFile f;
  Status s = f.open(to, shown, executable, made);
  f.skip_hashing();
  std::vector<char> buffer(1 << 16);
  while (s) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) s = io_error(from.string(), "cannot read the cached file", errno);
    if (n <= 0) break;
    s = f.write(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
  ::close(in);
  if (!s) return s;
  if (auto done = f.close(); !done) return done.error();
  return ok_status();
}

}  // namespace

std::string describe_wheel_target(const WheelTarget& target) {
  std::string out = target.platform;
  if (!target.python_xy.empty()) out += " / CPython " + target.python_xy;
  if (target.platform.starts_with("linux-")) out += target.glibc.empty() ? " / no glibc" : " / glibc " + target.glibc;
  return out;
}

namespace {

/// "3.11" -> {3, 11}; nullopt when not two numbers.
std::optional<std::pair<int, int>> two_numbers(std::string_view text, char sep) {
  const std::size_t at = text.find(sep);
  if (at == std::string_view::npos || at == 0 || at + 1 >= text.size()) return std::nullopt;
  int a = 0, b = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == at) continue;
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || i - (i > at ? at + 1 : 0) > 4) return std::nullopt;
    int& n = i < at ? a : b;
    n = n * 10 + (text[i] - '0');
  }
  return std::make_pair(a, b);
}

bool python_abi_supported(std::string_view py, std::string_view abi, int major, int minor) {
  const std::string xy = std::to_string(major) + std::to_string(minor);
  if (py.starts_with("cp")) {
    const std::string_view v = py.substr(2);
    if (v == xy) return abi == "cp" + xy || abi == "abi3" || abi == "none";
    // cp3W-abi3 for 3.2 <= 3.W < 3.Y (a digit string: "3" then the minor).
    if (abi != "abi3" || v.size() < 2 || v[0] != static_cast<char>('0' + major)) return false;
    const auto w = two_numbers(std::string(v.substr(0, 1)) + "." + std::string(v.substr(1)), '.');
    return w && w->second >= 2 && w->second < minor;
  }
  if (py.starts_with("py") && abi == "none") {
    const std::string_view v = py.substr(2);
    if (v == std::to_string(major)) return true;
    if (v.size() < 2 || v[0] != static_cast<char>('0' + major)) return false;
    const auto w = two_numbers(std::string(v.substr(0, 1)) + "." + std::string(v.substr(1)), '.');
    return w && w->second <= minor;
  }
  return false;
}

bool platform_supported(std::string_view tag, const WheelTarget& target) {
  if (tag == "any") return true;
  const std::string& p = target.platform;
  if (p.starts_with("linux-")) {
    static const std::map<std::string, std::string> arch = {{"linux-64", "x86_64"},      {"linux-32", "i686"},
                                                            {"linux-aarch64", "aarch64"}, {"linux-ppc64le", "ppc64le"},
                                                            {"linux-s390x", "s390x"},     {"linux-armv7l", "armv7l"}};
    const auto a = arch.find(p);
    if (a == arch.end() || !tag.ends_with("_" + a->second)) return false;
    const std::string_view head = tag.substr(0, tag.size() - a->second.size() - 1);
    if (head == "linux") return true;
    std::optional<std::pair<int, int>> needs;
    if (head == "manylinux1") needs = std::make_pair(2, 5);
    else if (head == "manylinux2010") needs = std::make_pair(2, 12);
    else if (head == "manylinux2014") needs = std::make_pair(2, 17);
    else if (head.starts_with("manylinux_")) needs = two_numbers(head.substr(10), '_');
    const auto have = two_numbers(target.glibc, '.');
    return needs && have && *needs <= *have;
  }
  if (p == "osx-64" || p == "osx-arm64") {
    if (!tag.starts_with("macosx_")) return false;
    const std::size_t last = tag.rfind('_');
    const std::string_view arch = tag.substr(last + 1);
    if (!two_numbers(tag.substr(7, last - 7), '_')) return false;
    return p == "osx-64" ? arch == "x86_64" || arch == "intel" || arch == "universal" || arch == "universal2"
                         : arch == "arm64" || arch == "universal2";
  }
  return (p == "win-64" && tag == "win_amd64") || (p == "win-32" && tag == "win32") || (p == "win-arm64" && tag == "win_arm64");
}

}  // namespace

bool wheel_tags_supported(const WheelFileName& name, const WheelTarget& target) {
  const auto xy = two_numbers(target.python_xy, '.');
  bool platform_ok = false;
  for (std::string_view plat : split(name.platform_tag, '.')) platform_ok = platform_ok || platform_supported(plat, target);
  if (!platform_ok) return false;
  if (target.python_xy.empty()) return true;
  if (!xy) return false;
  for (std::string_view py : split(name.python_tag, '.'))
    for (std::string_view abi : split(name.abi_tag, '.'))
      if (python_abi_supported(py, abi, xy->first, xy->second)) return true;
  return false;
}

std::vector<std::string> remove_stale_wheel_staging(const fs::path& prefix) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(prefix, ec)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view head = ".envlock-wheel-";
    if (!name.starts_with(head)) continue;
    std::string_view rest = std::string_view(name).substr(head.size());
    if (rest.ends_with(".old")) rest.remove_suffix(4);
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash + 1 == rest.size() ||
        rest.find_first_not_of("0123456789-") != std::string_view::npos || rest.find('-', dash + 1) != std::string_view::npos || dash > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(std::string(rest.substr(0, dash))));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);  // removes a link itself, never what it names
    if (!rm) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

Result<InstalledWheel> install_wheel(const fs::path& wheel, const fs::path& prefix, const WheelInstallOptions& options) {
  auto file_name = parse_wheel_file_name(wheel.filename().string());
  if (!file_name) return file_name.error().with_context(wheel.string());
  std::string python_xy = options.python_xy;
  if (python_xy.empty()) {
    auto found = prefix_python_xy(prefix);
    if (!found) return found.error();
    python_xy = *found;
  }
  const std::string target_prefix = options.target_prefix.empty() ? prefix.string() : options.target_prefix;
  const std::string interpreter = options.interpreter.empty() ? target_prefix + "/bin/python" + python_xy : options.interpreter;
  const WheelScheme scheme = conda_wheel_scheme(python_xy, file_name->distribution);

  // The unpacked-wheel cache's entry of this wheel, when it is whole (else made below).
  std::string cache_key;
  std::optional<UnpackedEntry> unpacked;
  if (!options.unpacked_cache.empty()) {
    cache_key = ascii_lower(options.archive_sha256);
    if (cache_key.empty()) {
      if (auto digest = hash_file(wheel, HashAlgorithm::Sha256)) cache_key = *digest;
    }
    if (!hex64(cache_key)) cache_key.clear();
  }
  std::optional<Result<WheelContents>> from_cache;
  if (!cache_key.empty()) {
    const fs::path entry = options.unpacked_cache / cache_key;
    if (auto members = load_unpacked(entry, options.verify_unpacked_hashes)) {
      if (auto listing = unpacked_listing(entry, *members)) {
        auto checked = check_wheel_contents(wheel, *file_name, std::move(*listing));
        if (checked) {  // an entry that does not pass is damaged: unpacked again from the wheel
          from_cache.emplace(std::move(checked));
          unpacked = UnpackedEntry{entry, false, std::move(*members)};
        }
      }
    }
  }
  if (!from_cache && !cache_key.empty()) {
    // A first install: unpacked into the cache and checked in one reading of the ZIP.
    std::optional<WheelContents> checked;
    auto filled = fill_unpacked(wheel, options.unpacked_cache, cache_key, nullptr, options.limits, &*file_name, &checked);
    if (filled && *filled && checked) {
      from_cache.emplace(std::move(*checked));
      unpacked = std::move(**filled);
    }
  }
  auto contents = from_cache ? std::move(*from_cache) : read_wheel_contents(wheel, *file_name, options.limits);
  if (!contents) return contents.error();
  const std::string& dist_info = contents->dist_info;
  const std::string& stem = contents->stem;
  const bool root_is_purelib = contents->root_is_purelib;
  const std::map<std::string, RecordEntry>& record = contents->record;
  const std::vector<EntryPoint>& entry_points = contents->entry_points;
  const std::string& root_dir = root_is_purelib ? scheme.purelib : scheme.platlib;
  const std::string record_member = dist_info + "/RECORD";

  // Where each member goes: its scheme folder and the path inside it.
  const std::string data_dir = stem + ".data";
  const std::string file_data_dir = file_name->distribution + "-" + file_name->version + ".data";
  // A member's scheme (by name: purelib and platlib are one folder here, yet RECORD names a file
  // of the other one `./path`, as installer's os.path.relpath gives it) and its path inside it.
  struct Placed {
    std::string scheme_name, dir, path;
  };
  const std::string root_scheme = root_is_purelib ? "purelib" : "platlib";
  auto scheme_dir = [&](const std::string& name) -> const std::string* {
    return name == "purelib"   ? &scheme.purelib
           : name == "platlib" ? &scheme.platlib
           : name == "headers" ? &scheme.headers
           : name == "scripts" ? &scheme.scripts
           : name == "data"    ? &scheme.data
                               : nullptr;
  };
  auto place = [&](const std::string& name) -> Result<Placed> {
    const std::size_t slash = name.find('/');
    const std::string top = name.substr(0, slash);
    if (slash == std::string::npos || (top != data_dir && top != file_data_dir)) return Placed{root_scheme, root_dir, name};
    const std::string rest = name.substr(slash + 1);
    const std::size_t second = rest.find('/');
    const std::string scheme_name = rest.substr(0, second);
    const std::string* dir = scheme_dir(scheme_name);
    if (dir == nullptr || second == std::string::npos) {
      return bad_wheel(wheel, "refused member '" + name + "': not inside one of " + top + "/{purelib,platlib,headers,scripts,data}/",
                       "a wheel's .data folder holds the five scheme folders only (PEP 427)");
    }
    return Placed{scheme_name, *dir, rest.substr(second + 1)};
  };
  auto join = [](const std::string& dir, const std::string& path) { return dir.empty() ? path : dir + "/" + path; };
  auto row_path = [&](const std::string& scheme_name, const std::string& path) {
    return scheme_name == root_scheme ? path : relative_dir(*scheme_dir(scheme_name), root_dir) + "/" + path;
  };
  const std::string shebang = python_shebang(interpreter);

  // No member lands in the environment's records (conda-meta/, envlock's marker there) or in a
  // name envlock gives its own files in the prefix (.envlock-*): a wheel's `.data/data/` is the
  // prefix itself (attack 22 A13). Checked over RECORD, which lists every member.
  for (const auto& [member, row] : record) {
    auto where_to = place(member);
    if (!where_to) return where_to.error();
    const std::string rel = join(where_to->dir, where_to->path);
    const std::string top = rel.substr(0, rel.find('/'));
    if (top == detail::kGuardedFolder || top.starts_with(".envlock-") || top.starts_with(".envlock.")) {
      return bad_wheel(wheel, "refused member '" + member + "': it would install " + rel + ", which conda and envlock own",
                       "a wheel never writes the environment's records (conda-meta/) or envlock's files");
    }
  }

  if (!cache_key.empty() && !unpacked) {
    auto filled = fill_unpacked(wheel, options.unpacked_cache, cache_key, &record, options.limits);
    if (!filled) return filled.error();
    unpacked = std::move(*filled);
  }
  Staging temporary_entry;  // an entry that could not be moved into place, removed after the install
  if (unpacked && unpacked->temporary) temporary_entry.dir = unpacked->dir;

  Staging staging;
  staging.dir = prefix / next_staging_name();
  if (std::error_code ec; !fs::create_directory(staging.dir, ec)) {
    return io_error(prefix.string(), "cannot create the staging folder " + staging.dir.filename().string(), ec ? ec.value() : EEXIST);
  }

  std::vector<RecordRow> out_rows;
  std::set<fs::path> made{staging.dir};
  auto write_generated = [&](const std::string& scheme_name, const std::string& path, const std::string& bytes,
                             bool executable) -> Status {
    const std::string rel = join(*scheme_dir(scheme_name), path);
    StagedFile f;
    if (auto s = f.open(staging.dir / rel, rel, executable, made); !s) return s;
    if (auto s = f.write(bytes); !s) return s;
    auto done = f.close();
    if (!done) return done.error();
    out_rows.push_back({rel, row_path(scheme_name, path), done->first, done->second});
    return ok_status();
  };

  // Entry points first, as installer writes them (and their RECORD rows) first.
  for (const EntryPoint& ep : entry_points) {
    if (auto s = write_generated("scripts", ep.name, entry_point_script(shebang, ep), true); !s) return s.error();
    // installer's write_script: mode |= (mode & 0o444) >> 2
    const fs::path p = staging.dir / join(scheme.scripts, ep.name);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) ::chmod(p.c_str(), (st.st_mode & 07777) | ((st.st_mode & 0444) >> 2));
  }

  // From the unpacked cache: each member linked (or copied) from its entry, in the wheel's order;
  // a `#!python` script is the prefix's own, written new.
  if (unpacked) {
    const fs::path files = unpacked->dir / "files";
    struct Dir {
      int fd;
      ~Dir() {
        if (fd >= 0) ::close(fd);
      }
    } from_dir{::open(files.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)}, to_dir{::open(staging.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
    if (from_dir.fd < 0) return io_error(files.string(), "cannot open the unpacked-wheel cache entry", errno);
    if (to_dir.fd < 0) return io_error(staging.dir.string(), "cannot open the staging folder", errno);
    for (const CachedMember& m : unpacked->members) {
      if (m.name == record_member) continue;
      auto where_to = place(m.name);
      if (!where_to) return where_to.error();
      const auto& [scheme_name, dir, path] = *where_to;
      const std::string rel = join(dir, path);
      if (scheme_name == "scripts" && m.size > kMetadataCap) {
        return bad_wheel(wheel, "member '" + m.name + "' is over 64 MiB, too large for metadata");  // as read_member()
      }
      if (scheme_name == "scripts" && m.python_script) {
        std::ifstream in(files / m.name, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (text.size() != m.size) return io_error((files / m.name).string(), "cannot read the cached file", EIO);
        const std::size_t eol = text.find('\n');
        text.replace(0, eol == std::string::npos ? text.size() : eol + 1, shebang);
        StagedFile f;
        if (auto s = f.open(staging.dir / rel, rel, m.executable, made); !s) return s.error();
        if (auto s = f.write(text); !s) return s.error();
        auto done = f.close();
        if (!done) return done.error();
        out_rows.push_back({rel, row_path(scheme_name, path), done->first, done->second});
        continue;
      }
      if (auto s = link_or_copy(from_dir.fd, m.name, files / m.name, to_dir.fd, staging.dir / rel, rel, m.executable, !m.mode_ok, made); !s)
        return s.error();
      out_rows.push_back({rel, row_path(scheme_name, path), m.sha256, m.size});
    }
  }

  // Pass 2: every member into the staging tree, hashed as written and checked against RECORD.
  auto pass2 = unpacked ? ok_status() : read_zip(wheel, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
    if (m.kind != ZipMember::Kind::File || m.name.ends_with("/") || m.name == record_member) return ok_status();
    auto where_to = place(m.name);
    if (!where_to) return where_to.error();
    const auto& [scheme_name, dir, path] = *where_to;
    const std::string rel = join(dir, path);
    const bool executable = (m.mode & 0111) != 0;
    StagedFile f;
    if (auto s = f.open(staging.dir / rel, rel, executable, made); !s) return s;
    Hasher raw(HashAlgorithm::Sha256);
    if (scheme_name == "scripts") {
      // A script: `#!python...` becomes the environment's python (installer's fix_shebang reads
      // the first 8 bytes; the whole first line is replaced). Scripts are read whole.
      auto text = read_member(data, wheel, m.name);
      if (!text) return text.error();
      raw.update(*text);
      if (text->starts_with("#!python")) {
        std::size_t eol = text->find('\n');
        text->replace(0, eol == std::string::npos ? text->size() : eol + 1, shebang);
      }
      if (auto s = f.write(*text); !s) return s;
    } else {
      f.skip_hashing();  // the bytes are the member's: one digest serves RECORD's check and the new RECORD
      for (;;) {
        auto block = data.next();
        if (!block) return block.error();
        if (block->empty()) break;
        raw.update(*block);
        if (auto s = f.write(*block); !s) return s;
      }
    }
    auto done = f.close();
    if (!done) return done.error();
    const std::uint64_t raw_size = raw.bytes();
    const std::string raw_sha = raw.hex_digest();
    if (done->first.empty()) *done = std::make_pair(raw_sha, raw_size);
    auto it = record.find(m.name);
    const bool signature = it == record.end();  // RECORD.jws / RECORD.p7s, checked above
    if (!signature && (raw_sha != it->second.sha256 || raw_size != *it->second.size)) {
      return Error{ErrorKind::Integrity, wheel.string(), "member '" + m.name + "' does not match its RECORD row",
                   "  expected sha256 " + it->second.sha256 + ", " + std::to_string(*it->second.size) + " bytes\n  actual   sha256 " +
                       raw_sha + ", " + std::to_string(raw_size) + " bytes",
                   "the wheel was altered or damaged; download it again and check its sha256"};
    }
    out_rows.push_back({rel, row_path(scheme_name, path), done->first, done->second});
    return ok_status();
  }, options.limits);
  if (!pass2) return pass2.error();

  // Installation metadata, in pip's order (pip/_internal/operations/install/wheel.py).
  if (auto s = write_generated(root_scheme, dist_info + "/INSTALLER", options.installer + "\n", false); !s) return s.error();
  if (options.direct_url) {
    if (auto s = write_generated(root_scheme, dist_info + "/direct_url.json", direct_url_json(*options.direct_url), false); !s) return s.error();
  }
  if (options.requested == Requested::Yes) {
    if (auto s = write_generated(root_scheme, dist_info + "/REQUESTED", "", false); !s) return s.error();
  }
  if (!options.archive_sha256.empty()) {
    if (auto s = write_generated(root_scheme, dist_info + "/ENVLOCK_SHA256", options.archive_sha256 + "\n", false); !s) return s.error();
  }
  std::string record_out;
  for (const RecordRow& row : out_rows) {
    record_out += csv_field(row.record_path) + "," + record_hash(row.sha256) + "," + std::to_string(row.size) + "\n";
  }
  record_out += csv_field(record_member) + ",,\n";
  {
    const std::string rel = join(root_dir, record_member);
    StagedFile f;
    if (auto s = f.open(staging.dir / rel, rel, false, made); !s) return s.error();
    if (auto s = f.write(record_out); !s) return s.error();
    if (auto done = f.close(); !done) return done.error();
    out_rows.push_back({rel, record_member, "", record_out.size()});
  }

  std::unique_lock<std::mutex> commit;
  if (options.commit_lock != nullptr) commit = std::unique_lock<std::mutex>(*options.commit_lock);
  // The version this one replaces, moved aside first (put back if anything below fails).
  SetAside old;
  if (!options.replaces.empty()) {
    old.set_conda_files(options.conda_files);
    if (auto s = old.take(prefix, options.replaces, fs::path(staging.dir.string() + ".old")); !s) return s.error();
  }

  // No staged folder merges into a prefix folder that is a link out of the prefix (attack 22 A3):
  // each one the prefix has is resolved beneath it (detail::Tree, as the conda linker).
  {
    auto tree = detail::Tree::open(prefix);
    if (!tree) return tree.error();
    std::vector<std::string> dirs{""};
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(staging.dir / dirs[i], ec)) {
        if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
        const std::string rel = dirs[i].empty() ? entry.path().filename().string() : dirs[i] + "/" + entry.path().filename().string();
        struct stat st {};
        if (::lstat((prefix / rel).c_str(), &st) != 0) continue;  // not there: moved in whole
        if (auto fd = tree->dir(rel, false); !fd && fd.error().kind == ErrorKind::Integrity) {
          return Error{ErrorKind::Integrity, prefix.string(),
                       "the wheel " + wheel.filename().string() + " would write into " + rel + ", which leads outside the prefix through a link",
                       "", "nothing of this wheel was installed; remove the link by hand"};
        }
        dirs.push_back(rel);
      }
    }
  }
  // Into place, never over a file: check first, move, and undo the moves on a late conflict.
  std::vector<std::string> conflicts;
  find_conflicts(staging.dir, prefix, "", conflicts);
  if (!conflicts.empty()) {
    // Each path a conda record lists is named with that record's dist name, as conda names the
    // package a clobbered path belongs to (attack 23 F19): "bin/python3 (a file of conda package
    // python-3.11.7-0)". pip would overwrite it silently (ZipBackedFile.save unlinks it first).
    std::sort(conflicts.begin(), conflicts.end());  // as RECORD and every listing: not in directory order
    std::optional<CondaOwnedFiles> read_owned;
    const CondaOwnedFiles* owned = options.conda_files;
    if (owned == nullptr) {
      if (auto files = conda_owned_files(prefix)) owned = &read_owned.emplace(std::move(*files));
    }
    std::set<std::string> owners;
    std::string detail;
    for (std::size_t i = 0; i < conflicts.size(); ++i) {
      const auto it = owned == nullptr ? CondaOwnedFiles::const_iterator() : owned->find(conflicts[i]);
      const bool conda = owned != nullptr && it != owned->end();
      if (conda) owners.insert(it->second);
      if (i < 10) detail += (i ? "\n  " : "  ") + printable(conflicts[i]) + (conda ? " (a file of conda package " + it->second + ")" : "");
    }
    if (conflicts.size() > 10) detail += "\n  ... and " + std::to_string(conflicts.size() - 10) + " more";
    std::string owner_list;
    for (const std::string& o : owners) owner_list += (owner_list.empty() ? "" : ", ") + o;
    return Error{ErrorKind::Io, prefix.string(),
                 "the wheel " + wheel.filename().string() + " would overwrite " + std::to_string(conflicts.size()) +
                     " file(s) already in the prefix" + (owners.empty() ? "" : " (of conda package " + owner_list + ")"),
                 detail,
                 owners.empty() ? "another package owns them; remove it first (nothing of this wheel was installed)"
                                : "the conda package and the wheel install the same file(s): drop one of them from the environment "
                                  "and lock again (nothing of this wheel was installed)"};
  }
  std::vector<std::pair<fs::path, fs::path>> moved;
  if (auto s = move_tree(staging.dir, prefix, "", moved); !s) {
    for (auto it = moved.rbegin(); it != moved.rend(); ++it) ::rename(it->second.c_str(), it->first.c_str());
    return s.error().with_context(prefix.string());
  }
  std::set<fs::path> keep{prefix};
  for (const std::string* dir : {&scheme.purelib, &scheme.platlib, &scheme.headers, &scheme.scripts, &scheme.data})
    keep.insert(dir->empty() ? prefix : prefix / *dir);
  old.commit(keep);

  InstalledWheel result;
  result.name = file_name->distribution;
  result.version = file_name->version;
  result.dist_info = join(root_dir, dist_info);
  for (RecordRow& row : out_rows) result.files.push_back({std::move(row.path), std::move(row.record_path), std::move(row.sha256), row.size});
  result.left_in_place = old.left_in_place();
  return result;
}

Result<UninstalledDistribution> uninstall_distribution(const fs::path& prefix, const std::string& dist_info, const std::string& python_xy) {
  std::string tag;
  if (const auto dot = python_xy.find('.'); dot != std::string::npos)
    tag = "cpython-" + python_xy.substr(0, dot) + python_xy.substr(dot + 1);
  SetAside old;
  if (auto s = old.take(prefix, dist_info, prefix / (next_staging_name() + ".old"), tag); !s) return s.error();
  const WheelScheme scheme = conda_wheel_scheme(python_xy, "");
  std::set<fs::path> keep{prefix};
  for (const std::string* dir : {&scheme.purelib, &scheme.platlib, &scheme.scripts, &scheme.data})
    keep.insert(dir->empty() ? prefix : prefix / *dir);
  keep.insert(prefix / fs::path(scheme.headers).parent_path());  // include/pythonX.Y, not a distribution's folder in it
  UninstalledDistribution out{old.size(), old.left_in_place()};
  old.commit(keep);
  return out;
}

}  // namespace envlock
