// Format detection, dispatch, and the URL-derived record fields shared by every reader.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "envlock/pip.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/readers.hpp"
#include "envlock/input_file.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "reader_util.hpp"

namespace envlock {

using readers::error_at;
using readers::load_yaml;
using readers::YamlNode;
using readers::as_integer;

std::string FormatInfo::to_string() const {
  switch (format) {
    case LockFormat::Envlock: return "envlock.lock v" + std::to_string(version);
    case LockFormat::CondaLock:
      return by_pixi ? "pixi.lock v" + std::to_string(std::max(version, 1)) : "conda-lock v" + std::to_string(version);
    case LockFormat::PixiLock: return "pixi.lock v" + std::to_string(version);
    case LockFormat::Explicit: return "@EXPLICIT";
    case LockFormat::CondaMeta: return "conda-meta prefix";
  }
  return "unknown";
}

namespace {

Error refuse(const std::string& source, const std::string& message, const std::string& hint) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = source;
  e.message = message;
  e.hint = hint;
  return e;
}

bool has_explicit_marker(const std::string& text) {
  if (text.find("@EXPLICIT") == std::string::npos) return false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line) == "@EXPLICIT") return true;
  }
  return false;
}

// The first line that is neither empty nor a comment (lines as std::getline splits them).
std::string first_content_line(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string t = trim(text.substr(pos, end - pos));
    if (!t.empty() && t[0] != '#') return t;
    pos = end + 1;
  }
  return {};
}

// A line quoted in an error: at most 120 bytes (cut before a UTF-8 continuation byte) and "…", so
// a one-line file of megabytes is not echoed whole to standard error.
std::string quoted_line(std::string_view line) {
  constexpr std::size_t kMax = 120;
  if (line.size() <= kMax) return std::string(line);
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) --cut;
  return std::string(line.substr(0, cut)) + "…";
}

/// The format version of an envlock.lock told by its top-level lines alone — a `manifest_hash`
/// key and `version: N` with N a version this envlock reads — or 0. Spares a YAML parse of the
/// whole file just to name its format (a lockfile of 1,000 packages x 5 platforms is megabytes);
/// Lockfile::parse validates the rest, and anything else takes the full detection below.
int envlock_header_version(std::string_view text) {
  bool has_hash = false;
  int version = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == ' ' || line.front() == '#' || line.front() == '-') continue;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.starts_with("manifest_hash:")) {
      has_hash = true;
    } else if (line.starts_with("version: ")) {
      std::string_view v = line.substr(9);
      if (v.size() != 1 || v[0] < '1' || v[0] > '0' + Lockfile::kFormatVersion) return 0;
      version = v[0] - '0';
    } else if (!line.starts_with("environments:")) {
      return 0;  // another top-level key: not the shape envlock writes
    }
  }
  return has_hash ? version : 0;
}

/// What binary input is, by its first bytes ("" for text): package archives (`.conda` is a zip,
/// `.tar.bz2` a bzip2 stream), other compressed data, and anything with a NUL byte in its first
/// 8 KiB (no lockfile format holds one). Checked before any YAML parser sees the bytes, whose
/// errors ("unknown escape character") would say nothing useful.
std::string binary_kind(std::string_view text) {
  if (text.starts_with("PK\x03\x04")) return "a package archive (.conda, a zip file)";
  if (text.size() > 3 && text.starts_with("BZh") && text[3] >= '1' && text[3] <= '9') return "a package archive (.tar.bz2, bzip2-compressed)";
  if (text.starts_with("\x1f\x8b")) return "gzip-compressed data";
  if (text.starts_with("\x28\xb5\x2f\xfd")) return "zstd-compressed data";
  if (text.starts_with("\xfd" "7zXZ")) return "xz-compressed data";
  if (text.substr(0, 8192).find('\0') != std::string_view::npos) return "a binary file";
  return {};
}

constexpr int kMaxPixiVersion = 7;
constexpr int kMaxCondaLockVersion = 1;

}  // namespace

Result<FormatInfo> detect_lock_format(const std::string& text, const std::string& source) {
  if (auto binary = binary_kind(text); !binary.empty()) {
    if (binary == "zstd-compressed data") {
      // envlock's own zstd files are snapshot bundles (`snapshot capture --bundle`, *.tar.zst).
      const bool bundle_name = source.ends_with(".tar.zst") || source.ends_with(".tzst");
      return refuse(source,
                    "this is zstd-compressed data" + std::string(bundle_name ? " (by its name, an envlock snapshot bundle)" : "") +
                        ", not a lockfile",
                    "an envlock snapshot bundle (`envlock snapshot capture --bundle`) is compared with `envlock snapshot diff "
                    "A B`, which reads bundles and snapshot files; `envlock diff` and `show` read conda-lock.yml, pixi.lock, "
                    "@EXPLICIT files, envlock.lock and prefixes");
    }
    return refuse(source, "this is " + binary + ", not a lockfile",
                  "pass a conda-lock.yml, pixi.lock, @EXPLICIT file, envlock.lock or prefix; to see "
                  "what a package archive holds, extract it (`cph extract`, `unzip`/`tar`)");
  }
  const std::string first = first_content_line(text);
  if (first.empty()) {
    return refuse(source, "empty file: no lockfile content found",
                  "pass a conda-lock.yml, pixi.lock, @EXPLICIT file, envlock.lock or prefix");
  }
  if (has_explicit_marker(text)) return FormatInfo{LockFormat::Explicit, 0};
  if (first[0] == '{') {
    std::string what = "a JSON document";
    if (text.find("\"lockVersion\"") != std::string::npos) {
      what = "a mambajs/emscripten-forge JSON lockfile (\"lockVersion\")";
    }
    return refuse(source, "unsupported lockfile format: " + what,
                  "envlock reads conda-lock.yml, pixi.lock (format 1-7), @EXPLICIT files, "
                  "envlock.lock and environment prefixes");
  }
  if (first[0] == '[') {
    return refuse(source,
                  "not a lockfile: found a TOML table header '" + quoted_line(first) +
                      "' (a pixi.toml or pyproject.toml manifest?)",
                  "pass the lockfile the manifest produced (pixi.lock), not the manifest");
  }
  if (first.find("://") != std::string::npos) {
    return refuse(source,
                  "not a lockfile: a list of URLs without an '@EXPLICIT' line (first line: '" +
                      quoted_line(redact_url(first)) + "')",
                  "conda explicit files start the package list with a line '@EXPLICIT'");
  }
  if (int v = envlock_header_version(text); v > 0) return FormatInfo{LockFormat::Envlock, v};
  // A file of no lockfile's shape (a committed link to /etc/shadow or a token file) is named,
  // never quoted: no line, key or caret of it (envlock/input_file.hpp). A YAML list is an
  // environment file, named below with its first line.
  if (!starts_like_yaml_map(text) && !first.starts_with("- ")) {
    auto plain = load_yaml(text, source);
    if (plain && !plain->root().IsMap()) {
      return refuse(source,
                    "not a lockfile: no YAML mapping at the top level; a plain list of specs is an environment file, "
                    "not a lockfile (its text is not shown)",
                    "lock it first (`envlock lock`, conda-lock or pixi), then pass the lockfile");
    }
    return refuse(source, "not a lockfile: its first line is not YAML `key: value`; its text is not shown",
                  "envlock reads conda-lock.yml, pixi.lock (format 1-7), @EXPLICIT files, "
                  "envlock.lock and environment prefixes");
  }
  auto doc = load_yaml(text, source);
  if (!doc) return doc.error();
  const YamlNode root = doc->root();
  if (!root.IsMap()) {
    return refuse(source,
                  "not a lockfile: no YAML mapping at the top level (first line: '" + quoted_line(first) +
                      "'); a plain list of specs is an environment file, not a lockfile",
                  "lock it first (`envlock lock`, conda-lock or pixi), then pass the lockfile");
  }
  std::optional<long long> version;
  if (YamlNode v = root["version"]; v && !v.IsNull()) {
    version = as_integer(v);
    if (!version) {
      return error_at(source, v, "lockfile `version` must be an integer, found '" +
                                     (v.IsScalar() ? std::string(v.Scalar()) : std::string("a collection")) + "'");
    }
  }
  const bool has_package = static_cast<bool>(root["package"]);
  const bool has_environments = static_cast<bool>(root["environments"]);
  const bool has_metadata = static_cast<bool>(root["metadata"]);
  const bool envlock_name = source.ends_with("envlock.lock");
  // envlock.lock: top-level keys version, manifest_hash, environments (no `packages` list, which
  // pixi.lock 4-7 always have, and no version 4-7).
  const bool envlock_shape = has_environments && !has_package && !root["packages"] &&
                             (!version || *version < 4);
  if (!version && !root["manifest_hash"] && !has_package &&
      (root["channels"] || root["dependencies"] || root["platforms"])) {
    // An envlock.yaml (or environment.yml) has `channels`/`dependencies`/`platforms` at the top
    // and neither `version` nor `manifest_hash`: a manifest, not a lockfile of an unknown version.
    return refuse(source,
                  "not a lockfile: this looks like a manifest (top-level `channels`, `dependencies` "
                  "or `platforms`, no `version` or `manifest_hash`)",
                  "lock it first with `envlock lock -f FILE`, then pass the lockfile it writes");
  }
  if (root["manifest_hash"] || envlock_shape || (envlock_name && !has_package)) {
    int v = version ? static_cast<int>(*version) : 0;
    if (v > Lockfile::kFormatVersion || v < 1) {
      return error_at(source, root["version"] ? root["version"] : root,
                      "envlock.lock format version " + std::to_string(v) +
                          (v > Lockfile::kFormatVersion ? " is newer than this envlock reads ("
                                                        : " is unknown (this envlock reads ") +
                          std::to_string(Lockfile::kFormatVersion) + ")",
                      "upgrade envlock to read this lockfile");
    }
    return FormatInfo{LockFormat::Envlock, v};
  }
  if (has_package || (has_metadata && !has_environments)) {
    // conda-lock v0 (no version) and v1; pixi.lock 1 (no version), 2 and 3 share this shape.
    long long v = version.value_or(0);
    if (v < 0 || v > 3) {
      std::string msg = "lockfile format version " + std::to_string(v) + " in the conda-lock shape (";
      msg += "`metadata` + `package`) ";
      msg += v < 0 ? "is unknown" : "is newer than this envlock reads (conda-lock 0-1, pixi.lock 1-3)";
      return error_at(source, root["version"], msg,
                      v < 0 ? "the `version` key is damaged; regenerate the lockfile"
                            : "upgrade envlock, or regenerate the lockfile with a version of "
                              "conda-lock/pixi that writes a format envlock reads");
    }
    if (!has_package) {
      return error_at(source, root, "conda-lock file without a `package` list",
                      "the file is incomplete; regenerate it with conda-lock");
    }
    const bool pixi_name = std::filesystem::path(source).filename().string().find("pixi.lock") != std::string::npos;
    return FormatInfo{LockFormat::CondaLock, static_cast<int>(v), v >= 2 || pixi_name};
  }
  if (has_environments) {
    if (!version) {
      return error_at(source, root, "pixi.lock without a `version` key",
                      "the file is incomplete; regenerate it with `pixi lock`");
    }
    if (*version > kMaxPixiVersion || *version < 4) {
      return error_at(source, root["version"],
                      "pixi.lock format version " + std::to_string(*version) +
                          (*version > kMaxPixiVersion ? " is newer than this envlock reads (1-7)"
                                                      : " is unknown with an `environments` map "
                                                        "(pixi.lock 4-7 have one)"),
                      "upgrade envlock, or regenerate the lockfile with a pixi version that "
                      "writes format 7 or older");
    }
    return FormatInfo{LockFormat::PixiLock, static_cast<int>(*version)};
  }
  std::string keys;
  for (auto [k, v] : root.entries()) keys += (keys.empty() ? "" : ", ") + std::string(k.Scalar());
  if (version) {
    return error_at(source, root["version"],
                    "unknown lockfile format: `version: " + std::to_string(*version) +
                        "` with top-level keys " + keys,
                    "envlock reads conda-lock.yml, pixi.lock (format 1-7), @EXPLICIT files, "
                    "envlock.lock and environment prefixes");
  }
  return refuse(source, "unknown lockfile format: top-level keys " + keys,
                "envlock reads conda-lock.yml, pixi.lock (format 1-7), @EXPLICIT files, "
                "envlock.lock and environment prefixes");
}

Result<ReadResult> read_lockfile_text(const std::string& text, const std::string& source,
                                      const std::filesystem::path& directory) {
  auto format = detect_lock_format(text, source);
  if (!format) return format.error();
  Result<Lockfile> lock = Error{};
  switch (format->format) {
    case LockFormat::Envlock: lock = Lockfile::parse(text, source, directory); break;
    case LockFormat::CondaLock: lock = read_conda_lock(text, source); break;
    case LockFormat::PixiLock: lock = read_pixi_lock(text, source); break;
    case LockFormat::Explicit: lock = read_explicit(text, source); break;
    case LockFormat::CondaMeta:
      return refuse(source, "a conda-meta prefix is a directory, not text", "pass the prefix path");
  }
  if (!lock) return lock.error();
  return ReadResult{std::move(lock).value(), *format};
}

Error input_too_large(const std::string& where) {
  return Error{ErrorKind::Io, where,
               "is larger than " + std::to_string(kMaxLockfileBytes >> 20) + " MiB, more than any lockfile; it is not read", "",
               "check that this is the lockfile meant (a lockfile is a few MB); envlock diff and show read at most " +
                   std::to_string(kMaxLockfileBytes >> 20) + " MiB of one input"};
}

Result<std::string> read_bounded_input(std::istream& in, const std::string& where) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxLockfileBytes) return input_too_large(where);
  }
  return text;
}

Result<ReadResult> read_lockfile_path(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (!std::filesystem::is_directory(path / "conda-meta", ec)) {
      Error e;
      e.kind = ErrorKind::Io;
      e.where = path.string();
      e.message = "directory is not an environment prefix (no conda-meta/ inside)";
      e.hint = "pass a lockfile, or the prefix of a conda, mamba, pixi or envlock environment";
      return e;
    }
    std::vector<std::string> warnings;
    auto lock = read_prefix(path, &warnings);
    if (!lock) return lock.error();
    return ReadResult{std::move(lock).value(), FormatInfo{LockFormat::CondaMeta, 0}, std::move(warnings)};
  }
  // A device (/dev/zero never ends) or socket is no lockfile; a FIFO is read (`<(git show ...)`),
  // up to kMaxLockfileBytes like any file.
  if (const auto type = std::filesystem::status(path, ec).type();
      type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::socket) {
    return Error{ErrorKind::Io, path.string(), "is a device or socket, not a lockfile", "",
                 "pass a lockfile, a prefix, '-' for standard input or REV:PATH"};
  }
  auto too_large = [&] { return input_too_large(path.string()); };
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Error e;
    e.kind = ErrorKind::Io;
    e.where = path.string();
    e.message = std::filesystem::exists(path, ec) ? "cannot open the file for reading"
                                                  : "no such file or directory";
    e.hint = "check the path";
    return e;
  }
  // Straight into the string (a lockfile can be megabytes: no stream buffer and copy between).
  std::string text;
  if (auto size = std::filesystem::file_size(path, ec); !ec) {
    if (size > kMaxLockfileBytes) return too_large();
    text.resize(static_cast<std::size_t>(size));
    in.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<std::size_t>(in.gcount()));
  }
  char buf[1 << 16];  // the rest, or all of a file whose size is not known (a pipe)
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxLockfileBytes) return too_large();
  }
  // The file's folder: relative local channels resolve as `install` resolves them, so a lockfile
  // and the prefix `create` made from it compare equal.
  auto absolute = std::filesystem::absolute(path, ec);
  return read_lockfile_text(text, path.string(), ec ? std::filesystem::path() : absolute.parent_path());
}

Status complete_record_from_url(RepoDataRecord& record, const std::string& where) {
  auto fail = [&](const std::string& message, const std::string& hint) -> Status {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = where;
    e.message = message;
    e.hint = hint;
    return e;
  };
  record.url = redact_url(record.url);
  std::string path = record.url;
  if (auto cut = path.find_first_of("?#"); cut != std::string::npos) path.resize(cut);
  while (!path.empty() && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  // Percent-decoded (RFC 3986): `hd590300%5F5.conda` is the file `hd590300_5.conda`, and its build
  // string is `hd590300_5` (a new-user attack, session 10: an encoded name passed a swapped
  // archive off as another build).
  std::string file = percent_decode(slash == std::string::npos ? path : path.substr(slash + 1));
  if (record.file_name.empty()) record.file_name = file;
  std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash);
  const auto slash2 = dir.rfind('/');
  std::string parent = slash2 == std::string::npos ? std::string() : dir.substr(slash2 + 1);

  auto archive = parse_archive_name(record.file_name);
  if (record.name.empty() || record.build.empty() || record.version.to_string() == "0") {
    if (!archive) {
      if (record.name.empty()) {
        return fail("cannot tell the package name: the entry has no `name` and the URL '" +
                        record.url + "' does not end in name-version-build.conda or .tar.bz2",
                    "add name, version and build to the entry, or fix the URL");
      }
    } else {
      if (record.name.empty()) record.name = archive->name;
      if (record.build.empty()) record.build = archive->build;
      if (record.version.to_string() == "0" && archive->version != "0") {
        auto v = Version::parse(archive->version);
        if (!v) {
          return fail("the version '" + archive->version + "' in '" + record.file_name +
                          "' is not a conda version: " + v.error().message,
                      "fix the URL or give `version` in the entry");
        }
        record.version = std::move(v).value();
      }
    }
  }
  record.name = ascii_lower(record.name);
  if (record.subdir.empty() && archive) record.subdir = parent;
  if (record.channel.empty() && slash2 != std::string::npos && archive &&
      parent == record.subdir) {
    record.channel = dir.substr(0, slash2);
  }
  record.channel = redact_url(record.channel);
  return ok_status();
}

namespace {
/// The 64 lower-case hex digits of `<dist_info>/ENVLOCK_SHA256` (one line, as install_wheel()
/// writes it), read as every input is (read_input_file: a regular file, never a FIFO or /proc);
/// empty when there is none or it holds anything else.
std::string envlock_wheel_sha256(const std::filesystem::path& dist_info) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(dist_info / "ENVLOCK_SHA256", ec))) return {};
  InputFile f = read_input_file(dist_info / "ENVLOCK_SHA256", 256);
  if (f.problem != InputFile::Problem::None) return {};
  std::string line = f.text.substr(0, f.text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() != 64 || !std::all_of(line.begin(), line.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
    return {};
  return line;
}
}  // namespace

Result<Lockfile> read_prefix(const std::filesystem::path& prefix, std::vector<std::string>* warnings) {
  // A tree whose install was interrupted (killed while its post-link scripts ran) is no
  // environment yet: history, verify and list call the generation before it current, and the
  // next install rolls it back; `diff LOCK PREFIX` had called it "no changes" (attack 30, F9).
  if (struct stat st {}; ::lstat((prefix / "conda-meta/envlock-pending").c_str(), &st) == 0)
    return Error{ErrorKind::Io, prefix.string(),
                 "an install was interrupted (conda-meta/envlock-pending): the tree there was never committed", "",
                 "run `envlock install` again (or `envlock rollback`, `envlock remove`); each rolls the interrupted "
                 "install back first"};
  auto records = read_conda_meta(prefix);
  if (!records) return records.error();
  auto warn = [&](std::string w) {
    if (warnings != nullptr) warnings->push_back(std::move(w));
  };
  // read_conda_meta reads regular files only: a record that is a FIFO, a device (a link to
  // /dev/zero) or a socket is left out and named, as snapshot capture lists it as a problem.
  {
    std::error_code ec;
    std::vector<std::string> odd;
    for (std::filesystem::directory_iterator it(prefix / "conda-meta", ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() != ".json") continue;
      std::error_code type_ec;
      const auto type = std::filesystem::status(it->path(), type_ec).type();
      if (type != std::filesystem::file_type::regular && type != std::filesystem::file_type::directory)
        odd.push_back(it->path().string());
    }
    std::sort(odd.begin(), odd.end());
    for (const auto& f : odd)
      warn(f + ": is not a regular file (a FIFO, device, socket or broken link); not read, the package it "
               "describes is left out");
  }
  // Two records of one package name (a damaged prefix: conda keeps one per name): the newest
  // (version, then build number) is kept, as snapshot capture keeps it, and the other is named.
  {
    std::vector<std::size_t> order(records->size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto& rs = *records;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      if (rs[x].name != rs[y].name) return rs[x].name < rs[y].name;
      if (rs[x].version != rs[y].version) return rs[y].version < rs[x].version;
      return rs[x].build_number > rs[y].build_number;
    });
    std::vector<PrefixRecord> kept;
    kept.reserve(rs.size());
    for (std::size_t i : order) {
      if (!kept.empty() && kept.back().name == rs[i].name) {
        warn((prefix / "conda-meta" / (rs[i].dist_name() + ".json")).string() + ": a second record of package " +
             rs[i].name + " (" + rs[i].version.to_string() + " " + rs[i].build + ") beside " + kept.back().dist_name() +
             ".json; the newest is compared and this one left out (remove the stale record)");
        continue;
      }
      kept.push_back(rs[i]);
    }
    *records = std::move(kept);
  }
  Lockfile lock;
  std::map<std::string, std::size_t> subdirs;
  for (const auto& r : *records) {
    if (!r.subdir.empty() && r.subdir != "noarch") ++subdirs[r.subdir];
  }
  std::string subdir = "noarch";
  std::size_t best = 0;
  for (const auto& [s, n] : subdirs) {
    if (n > best) {
      best = n;
      subdir = s;
    }
  }
  // envlock's own record of the install (conda-meta/envlock, install.hpp PrefixOrigin): the
  // environment's name and its platform, which a prefix of noarch packages alone cannot tell.
  std::string env_name = "default";
  // Only a regular file is opened (a FIFO there would block forever, a link to /dev/zero never
  // end: a new-user attack, session 10); anything else is warned about and read as absent.
  const std::filesystem::path origin_path = prefix / "conda-meta" / "envlock";
  std::error_code origin_ec;
  const auto origin_type = std::filesystem::status(origin_path, origin_ec).type();
  bool read_origin = origin_type == std::filesystem::file_type::regular;
  if (!read_origin && origin_type != std::filesystem::file_type::not_found)
    warn(origin_path.string() + ": is not a regular file (a FIFO, device, socket or folder); not read, the prefix is "
         "compared as environment 'default' on the platform of its records");
  if (read_origin && std::filesystem::file_size(origin_path, origin_ec) > (1u << 20)) {
    warn(origin_path.string() + ": is larger than 1 MiB, not the record envlock writes; not read");
    read_origin = false;
  }
  if (std::ifstream origin; read_origin && (origin.open(origin_path, std::ios::binary), origin)) {
    const auto j = nlohmann::json::parse(origin, nullptr, false);
    if (j.is_object()) {
      const auto text = [&](const char* key) {
        return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
      };
      if (const auto e = text("environment"); !e.empty()) env_name = e;
      if (const auto p = text("platform"); subdir == "noarch" && !p.empty()) subdir = p;
    }
  }
  auto& env = lock.environments[env_name];
  env.name = env_name;
  auto& plat = env.platforms[subdir];
  plat.platform = subdir;
  std::set<std::string> requested;
  for (const auto& r : *records) {
    if (auto st = readers::check_name(r.name, false, (prefix / "conda-meta" / (r.dist_name() + ".json")).string()); !st)
      return st.error();
    LockedPackage p;
    static_cast<RepoDataRecord&>(p) = r;
    auto st = complete_record_from_url(p, (prefix / "conda-meta" / (r.dist_name() + ".json")).string());
    if (!st) return st.error();
    // conda writes the channel with the subdir (`https://conda.anaconda.org/conda-forge/noarch`),
    // mamba and envlock without: the channel is the part before it, as lockfiles hold it.
    for (const std::string& sd : {p.subdir, std::string("noarch")}) {
      if (!sd.empty() && p.channel.size() > sd.size() + 1 && p.channel.ends_with("/" + sd)) {
        p.channel.resize(p.channel.size() - sd.size() - 1);
        break;
      }
    }
    if (!r.requested_spec.empty()) requested.insert(r.requested_spec);
    plat.packages.push_back(std::move(p));
  }
  env.requested.assign(requested.begin(), requested.end());

  // The pip side: site-packages/*.dist-info. A conda package's own dist-info (INSTALLER "conda",
  // or none while a conda record lists its METADATA) is already a conda record above.
  std::set<std::string> conda_listed;  // prefix-relative .dist-info/METADATA paths in conda-meta
  for (const auto& r : *records) {
    auto note = [&](const std::string& path) {
      if (path.ends_with(".dist-info/METADATA")) conda_listed.insert(path);
    };
    for (const auto& pe : r.paths) note(pe.path);
    for (const auto& f : r.files) note(f);
  }
  std::vector<PipDistribution> pip;
  for (const auto& site : site_packages_dirs(prefix)) {
    for (const auto& info : dist_info_dirs(prefix / site)) {
      const std::string rel = site + "/" + info.filename().string();
      const bool listed = conda_listed.count(rel + "/METADATA") > 0;
      auto dist = read_dist_info(info, rel, DistInfoParts::WithoutRecord);
      if (!dist) {
        // A damaged dist-info must not stop a comparison: it is left out and named.
        if (!listed && warnings != nullptr) {
          const Error& e = dist.error();
          warnings->push_back((prefix / e.where).string() + ": " + e.message + "; left out of the pip packages" +
                              (e.hint.empty() ? std::string() : " (" + e.hint + ")"));
        }
        continue;
      }
      if (dist->installer == "conda" || (listed && dist->installer.empty())) continue;
      if (!is_valid_package_name(dist->name, true)) {
        warn((prefix / rel / "METADATA").string() + ": PyPI package name '" + printable(dist->name) +
             "' is not valid; left out of the pip packages");
        continue;
      }
      pip.push_back(std::move(*dist));
    }
    for (auto& d : read_egg_links(prefix / site, site)) pip.push_back(std::move(d));
  }
  // Two dist-info folders of one project (pip left the old one behind): the newest is listed, as
  // snapshot capture keeps it, and the stale folder is named.
  for (const auto& s : keep_newest_dist_infos(pip)) {
    if (warnings != nullptr) {
      warnings->push_back((prefix / s.stale.dist_info).string() + ": a second dist-info of " + s.stale.name + " (" +
                          s.stale.version + ") beside " + s.kept + "; left out of the pip packages (remove the stale folder)");
    }
  }
  for (const auto& d : pip) {
    PipPackage pp = to_pip_package(d);
    // The sha256 of the wheel envlock installed it from (ENVLOCK_SHA256, envlock/wheel.hpp), so a
    // prefix compares with its lockfile's pin by hash as well as by version (issue 20): another
    // build of the locked version reads as hash-changed. pip's index installs record none.
    if (pp.sha256.empty()) pp.sha256 = envlock_wheel_sha256(prefix / d.dist_info);
    plat.pip.push_back(std::move(pp));
  }
  // A conda record whose project pip installed over stays: its conda-meta record is still there
  // (pixi's install leaves it too, pip's wheel over it), and the lockfile made from such a prefix
  // pins both (`snapshot lock`, pixi.lock), so the prefix reads as that lockfile
  // (docs/review.md, "pip over conda").
  readers::sort_lockfile(lock);
  return lock;
}

}  // namespace envlock
