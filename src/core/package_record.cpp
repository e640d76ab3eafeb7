// PackageRecord, RepoDataRecord, PrefixRecord in the conda JSON layout (conda/models/records.py,
// rattler_conda_types::{PackageRecord, RepoDataRecord, PrefixRecord}); read_conda_meta.
#include "envlock/package_record.hpp"

#include <sys/stat.h>


#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "envlock/input_file.hpp"
#include "envlock/text.hpp"

namespace envlock {
namespace {

using nlohmann::json;

// Largest timestamp read as seconds (9999-12-31T23:59:59Z), as conda does; larger values are ms.
constexpr std::uint64_t kMaxSecondsTimestamp = 253402300799ULL;

const char* type_name(const json& v) { return v.type_name(); }

Error key_error(const std::string& where, const std::string& key, const std::string& what) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = where;
  e.message = "key '" + key + "' " + what;
  return e;
}

// Reads an optional string key; null and absent give "".
Status read_string(const json& j, const char* key, std::string& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ok_status();
  if (!it->is_string()) return key_error(where, key, std::string("must be a string, not ") + type_name(*it));
  out = it->get<std::string>();
  return ok_status();
}

Status read_strings(const json& j, const char* key, std::vector<std::string>& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ok_status();
  if (!it->is_array()) return key_error(where, key, std::string("must be a list of strings, not ") + type_name(*it));
  for (const auto& v : *it) {
    if (!v.is_string()) return key_error(where, key, std::string("must hold only strings, found ") + type_name(v));
    out.push_back(v.get<std::string>());
  }
  return ok_status();
}

Status read_uint(const json& j, const char* key, std::optional<std::uint64_t>& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ok_status();
  if (it->is_number_unsigned()) {
    out = it->get<std::uint64_t>();
  } else if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    out = static_cast<std::uint64_t>(it->get<std::int64_t>());
  } else if (it->is_number_float() && it->get<double>() >= 0) {
    out = static_cast<std::uint64_t>(it->get<double>());
  } else {
    return key_error(where, key, std::string("must be a non-negative integer, not ") + type_name(*it));
  }
  return ok_status();
}

std::string where_of(const json& j) {
  auto n = j.find("name");
  auto v = j.find("version");
  auto b = j.find("build");
  std::string w;
  if (n != j.end() && n->is_string()) w = n->get<std::string>();
  if (!w.empty() && v != j.end() && v->is_string()) w += "-" + v->get<std::string>();
  if (!w.empty() && b != j.end() && b->is_string()) w += "-" + b->get<std::string>();
  return w;
}

#define ENVLOCK_TRY(expr)          \
  do {                             \
    auto _st = (expr);             \
    if (!_st) return _st.error();  \
  } while (0)

}  // namespace

namespace {
// conda/models/enums.py PathType, in conda's spelling.
constexpr std::pair<std::string_view, PathEntry::Type> kPathTypes[] = {
    {"hardlink", PathEntry::Type::HardLink},
    {"softlink", PathEntry::Type::SoftLink},
    {"directory", PathEntry::Type::Directory},
    {"pyc_file", PathEntry::Type::PycFile},
    {"unix_python_entry_point", PathEntry::Type::UnixPythonEntryPoint},
    {"windows_python_entry_point_script", PathEntry::Type::WindowsPythonEntryPointScript},
    {"windows_python_entry_point_exe", PathEntry::Type::WindowsPythonEntryPointExe},
    {"linked_package_record", PathEntry::Type::LinkedPackageRecord},
};
}  // namespace

std::string_view to_string(PathEntry::Type type) {
  for (const auto& [text, t] : kPathTypes)
    if (t == type) return text;
  return "hardlink";
}

std::optional<PathEntry::Type> path_type_from_string(std::string_view name) {
  if (name.empty()) return PathEntry::Type::HardLink;
  for (const auto& [text, t] : kPathTypes)
    if (text == name) return t;
  return std::nullopt;
}

std::optional<PathEntry::PlaceholderMode> placeholder_mode_from_string(std::string_view mode) {
  if (mode.empty()) return PathEntry::PlaceholderMode::None;
  if (mode == "text") return PathEntry::PlaceholderMode::Text;
  if (mode == "binary") return PathEntry::PlaceholderMode::Binary;
  return std::nullopt;
}

std::string PackageRecord::dist_name() const { return name + "-" + version.to_string() + "-" + build; }

Result<PackageRecord> PackageRecord::from_json(const json& j) {
  if (!j.is_object()) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.message = std::string("a package record must be a JSON object, not ") + type_name(j);
    return e;
  }
  const std::string where = where_of(j);
  PackageRecord r;
  for (const char* key : {"name", "version", "build"}) {
    auto it = j.find(key);
    if (it == j.end()) return key_error(where, key, "is missing (every package record has name, version, build)");
    if (!it->is_string()) return key_error(where, key, std::string("must be a string, not ") + type_name(*it));
  }
  r.name = ascii_lower(j["name"].get<std::string>());
  auto version = Version::parse(j["version"].get<std::string>());
  if (!version) return version.error().with_context(where.empty() ? "version" : where);
  r.version = std::move(*version);
  r.build = j["build"].get<std::string>();
  std::optional<std::uint64_t> build_number;
  ENVLOCK_TRY(read_uint(j, "build_number", build_number, where));
  r.build_number = build_number.value_or(0);
  ENVLOCK_TRY(read_string(j, "subdir", r.subdir, where));
  ENVLOCK_TRY(read_strings(j, "depends", r.depends, where));
  ENVLOCK_TRY(read_strings(j, "constrains", r.constrains, where));
  if (auto it = j.find("track_features"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      r.track_features = split_features(it->get<std::string>());
    } else {
      // A list (rattler writes one): entries are trimmed and empty ones dropped, as conda does.
      std::vector<std::string> entries;
      ENVLOCK_TRY(read_strings(j, "track_features", entries, where));
      for (const auto& entry : entries) {
        for (auto& f : split_features(entry)) r.track_features.push_back(std::move(f));
      }
    }
  }
  if (auto it = j.find("features"); it != j.end() && it->is_array()) {
    std::vector<std::string> f;
    ENVLOCK_TRY(read_strings(j, "features", f, where));
    for (const auto& s : f) r.features += (r.features.empty() ? "" : " ") + s;
  } else {
    ENVLOCK_TRY(read_string(j, "features", r.features, where));
  }
  ENVLOCK_TRY(read_string(j, "license", r.license, where));
  ENVLOCK_TRY(read_string(j, "license_family", r.license_family, where));
  ENVLOCK_TRY(read_string(j, "md5", r.md5, where));
  ENVLOCK_TRY(read_string(j, "sha256", r.sha256, where));
  r.md5 = ascii_lower(r.md5);
  r.sha256 = ascii_lower(r.sha256);
  ENVLOCK_TRY(read_uint(j, "size", r.size, where));
  ENVLOCK_TRY(read_uint(j, "timestamp", r.timestamp, where));
  if (r.timestamp && *r.timestamp <= kMaxSecondsTimestamp) *r.timestamp *= 1000;
  if (auto it = j.find("noarch"); it != j.end() && !it->is_null()) {
    if (it->is_boolean()) {
      r.noarch = it->get<bool>() ? NoArchKind::Generic : NoArchKind::None;
    } else if (it->is_string() && it->get<std::string>() == "python") {
      r.noarch = NoArchKind::Python;
    } else if (it->is_string() && it->get<std::string>() == "generic") {
      r.noarch = NoArchKind::Generic;
    } else if (it->is_string() && it->get<std::string>().empty()) {
      r.noarch = NoArchKind::None;
    } else {
      return key_error(where, "noarch", "must be \"python\", \"generic\" or a boolean, not " + it->dump());
    }
  }
  ENVLOCK_TRY(read_string(j, "arch", r.arch, where));
  ENVLOCK_TRY(read_string(j, "platform", r.platform, where));
  ENVLOCK_TRY(read_string(j, "python_site_packages_path", r.python_site_packages_path, where));
  return r;
}

void PackageRecord::to_json(json& j) const {
  j = json::object();
  j["name"] = name;
  j["version"] = version.to_string();
  j["build"] = build;
  j["build_number"] = build_number;
  j["depends"] = depends;
  if (!constrains.empty()) j["constrains"] = constrains;
  if (!track_features.empty()) {
    std::string tf;
    for (const auto& f : track_features) tf += (tf.empty() ? "" : " ") + f;
    j["track_features"] = tf;
  }
  if (!features.empty()) j["features"] = features;
  if (!license.empty()) j["license"] = license;
  if (!license_family.empty()) j["license_family"] = license_family;
  if (!md5.empty()) j["md5"] = md5;
  if (!sha256.empty()) j["sha256"] = sha256;
  if (size) j["size"] = *size;
  if (timestamp) {
    // Readers take values up to kMaxSecondsTimestamp as seconds; a whole-second time that small
    // (before 1978 in ms) is therefore written in seconds so it reads back the same.
    bool as_seconds = *timestamp <= kMaxSecondsTimestamp && *timestamp % 1000 == 0;
    j["timestamp"] = as_seconds ? *timestamp / 1000 : *timestamp;
  }
  if (noarch == NoArchKind::Python) j["noarch"] = "python";
  if (noarch == NoArchKind::Generic) j["noarch"] = "generic";
  if (!arch.empty()) j["arch"] = arch;
  if (!platform.empty()) j["platform"] = platform;
  if (!subdir.empty()) j["subdir"] = subdir;
  if (!python_site_packages_path.empty()) j["python_site_packages_path"] = python_site_packages_path;
}

Result<RepoDataRecord> RepoDataRecord::from_json(const json& j) {
  auto base = PackageRecord::from_json(j);
  if (!base) return base.error();
  RepoDataRecord r;
  static_cast<PackageRecord&>(r) = std::move(*base);
  const std::string where = r.dist_name();
  ENVLOCK_TRY(read_string(j, "url", r.url, where));
  ENVLOCK_TRY(read_string(j, "fn", r.file_name, where));
  ENVLOCK_TRY(read_string(j, "channel", r.channel, where));
  if (r.file_name.empty() && !r.url.empty()) r.file_name = r.url.substr(r.url.rfind('/') + 1);
  return r;
}

void RepoDataRecord::to_json(json& j) const {
  PackageRecord::to_json(j);
  if (!url.empty()) j["url"] = url;
  if (!file_name.empty()) j["fn"] = file_name;
  if (!channel.empty()) j["channel"] = channel;
}

Result<PrefixRecord> PrefixRecord::from_json(const json& j) {
  auto base = RepoDataRecord::from_json(j);
  if (!base) return base.error();
  PrefixRecord r;
  static_cast<RepoDataRecord&>(r) = std::move(*base);
  const std::string where = r.dist_name();
  ENVLOCK_TRY(read_strings(j, "files", r.files, where));
  std::sort(r.files.begin(), r.files.end());
  ENVLOCK_TRY(read_string(j, "package_tarball_full_path", r.package_tarball_full_path, where));
  ENVLOCK_TRY(read_string(j, "extracted_package_dir", r.extracted_package_dir, where));
  ENVLOCK_TRY(read_string(j, "requested_spec", r.requested_spec, where));
  if (auto link = j.find("link"); link != j.end() && link->is_object()) {
    if (auto t = link->find("type"); t != link->end() && !t->is_null()) {
      int type = t->is_number_integer() ? t->get<int>() : 0;
      if (type == 1) {
        r.link_type = "hardlink";
      } else if (type == 2) {
        r.link_type = "softlink";
      } else if (type == 3) {
        r.link_type = "copy";
      } else {
        return key_error(where, "link.type", "must be 1 (hardlink), 2 (softlink) or 3 (copy), not " + t->dump());
      }
    }
    if (r.extracted_package_dir.empty()) ENVLOCK_TRY(read_string(*link, "source", r.extracted_package_dir, where));
  }
  if (auto pd = j.find("paths_data"); pd != j.end() && !pd->is_null()) {
    if (!pd->is_object()) return key_error(where, "paths_data", "must be an object");
    if (auto pv = pd->find("paths_version"); pv != pd->end() && !(pv->is_number_integer() && pv->get<int>() == 1)) {
      return key_error(where, "paths_data.paths_version", "must be 1, not " + pv->dump());
    }
    auto paths = pd->find("paths");
    if (paths != pd->end() && !paths->is_array()) return key_error(where, "paths_data.paths", "must be a list");
    if (paths != pd->end()) {
      for (const auto& p : *paths) {
        if (!p.is_object()) return key_error(where, "paths_data.paths", "must hold objects");
        PathEntry e;
        auto path = p.find("_path");
        if (path == p.end() || !path->is_string()) return key_error(where, "paths_data.paths[]._path", "is missing");
        e.path = path->get<std::string>();
        const std::string pwhere = where + ": " + e.path;
        std::string type;
        ENVLOCK_TRY(read_string(p, "path_type", type, pwhere));
        const auto known = path_type_from_string(type);
        if (!known) {
          return key_error(pwhere, "path_type",
                           "must be one of conda's path types (hardlink, softlink, directory, pyc_file, "
                           "unix_python_entry_point, ...), not '" + type + "'");
        }
        e.type = *known;
        std::string in_package, in_prefix;
        ENVLOCK_TRY(read_string(p, "sha256", in_package, pwhere));
        ENVLOCK_TRY(read_string(p, "sha256_in_prefix", in_prefix, pwhere));
        e.sha256 = in_prefix.empty() ? in_package : in_prefix;
        if (!in_prefix.empty() && in_package != in_prefix) e.sha256_in_package = in_package;
        ENVLOCK_TRY(read_uint(p, "size_in_bytes", e.size_in_bytes, pwhere));
        ENVLOCK_TRY(read_string(p, "prefix_placeholder", e.prefix_placeholder, pwhere));
        std::string mode;
        ENVLOCK_TRY(read_string(p, "file_mode", mode, pwhere));
        const auto file_mode = placeholder_mode_from_string(mode);
        if (!file_mode) return key_error(pwhere, "file_mode", "must be text or binary, not '" + mode + "'");
        e.file_mode = *file_mode;
        if (auto nl = p.find("no_link"); nl != p.end() && nl->is_boolean()) e.no_link = nl->get<bool>();
        r.paths.push_back(std::move(e));
      }
    }
  }
  return r;
}

void PrefixRecord::to_json(json& j) const {
  RepoDataRecord::to_json(j);
  j["files"] = files;
  json paths_json = json::array();
  for (const auto& p : paths) {
    json e = json::object();
    e["_path"] = p.path;
    e["path_type"] = std::string(to_string(p.type));
    if (!p.sha256.empty() || !p.sha256_in_package.empty()) {
      e["sha256"] = p.sha256_in_package.empty() ? p.sha256 : p.sha256_in_package;
      if (!p.sha256_in_package.empty()) e["sha256_in_prefix"] = p.sha256;
    }
    if (p.size_in_bytes) e["size_in_bytes"] = *p.size_in_bytes;
    if (!p.prefix_placeholder.empty()) e["prefix_placeholder"] = p.prefix_placeholder;
    if (p.file_mode == PathEntry::PlaceholderMode::Text) e["file_mode"] = "text";
    if (p.file_mode == PathEntry::PlaceholderMode::Binary) e["file_mode"] = "binary";
    if (p.no_link) e["no_link"] = true;
    paths_json.push_back(std::move(e));
  }
  j["paths_data"] = json{{"paths", std::move(paths_json)}, {"paths_version", 1}};
  if (!package_tarball_full_path.empty()) j["package_tarball_full_path"] = package_tarball_full_path;
  if (!extracted_package_dir.empty()) j["extracted_package_dir"] = extracted_package_dir;
  if (!requested_spec.empty()) j["requested_spec"] = requested_spec;
  int type = link_type == "softlink" ? 2 : (link_type == "copy" ? 3 : 1);
  j["link"] = json{{"source", extracted_package_dir}, {"type", type}};
}

std::vector<std::string> split_features(std::string_view text) {
  auto is_blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = start;
    while (end < text.size() && text[end] != ',' && text[end] != ' ') ++end;
    std::string_view name = text.substr(start, end - start);
    while (!name.empty() && is_blank(name.front())) name.remove_prefix(1);
    while (!name.empty() && is_blank(name.back())) name.remove_suffix(1);
    if (!name.empty()) out.emplace_back(name);
    start = end + 1;
  }
  return out;
}

std::optional<ArchiveName> parse_archive_name(std::string_view file_name) {
  std::string_view ext;
  if (file_name.ends_with(".conda")) {
    ext = ".conda";
  } else if (file_name.ends_with(".tar.bz2")) {
    ext = ".tar.bz2";
  } else {
    return std::nullopt;
  }
  std::string_view stem = file_name.substr(0, file_name.size() - ext.size());
  if (stem.find('/') != std::string_view::npos) return std::nullopt;
  std::size_t b = stem.rfind('-');
  if (b == std::string_view::npos || b == 0) return std::nullopt;
  std::size_t v = stem.rfind('-', b - 1);
  if (v == std::string_view::npos || v == 0) return std::nullopt;
  ArchiveName out{std::string(stem.substr(0, v)), std::string(stem.substr(v + 1, b - v - 1)),
                  std::string(stem.substr(b + 1)), std::string(ext)};
  if (out.name.empty() || out.version.empty() || out.build.empty()) return std::nullopt;
  return out;
}

Result<std::string> read_conda_meta_record_text(const std::filesystem::path& file) {
  // A record that is a link is refused when it leads into /proc, /sys or /dev; one that is a
  // file is read wherever its prefix is, `/dev/shm` included, as snapshot capture reads it: every
  // record of a prefix on /dev/shm had been skipped as "in /dev", so an update there kept no
  // generation and replaced every file as owned by no package (found by scripts/bench 23-rollback).
  struct stat st {};
  const bool link = ::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  InputFile in = read_input_file(file, kMaxCondaMetaRecordBytes, /*system_folders=*/link);
  std::string why;
  switch (in.problem) {
    case InputFile::Problem::None: return std::move(in.text);
    case InputFile::Problem::Open: why = std::string("cannot be opened: ") + std::strerror(in.error_number); break;
    case InputFile::Problem::Refused: why = in.message; break;
    case InputFile::Problem::TooLarge:
      why = "is larger than 64 MiB, the most envlock reads of a conda-meta record; it is not read";
      break;
    case InputFile::Problem::Read: why = std::string("cannot be read: ") + std::strerror(in.error_number); break;
  }
  return Error{ErrorKind::Io, file.string(), why, "", "the record is damaged; reinstall the package or remove the file"};
}

Result<std::vector<PrefixRecord>> read_conda_meta(const std::filesystem::path& prefix) {
  namespace fs = std::filesystem;
  const fs::path dir = prefix / "conda-meta";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    Error e;
    e.kind = ErrorKind::Io;
    e.where = dir.string();
    e.message = "no conda-meta folder: this is not a conda environment prefix";
    e.hint = "pass the environment's root folder (the one holding conda-meta/)";
    return e;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) {
    Error e;
    e.kind = ErrorKind::Io;
    e.where = dir.string();
    e.message = "cannot list the folder: " + ec.message();
    return e;
  }
  std::sort(files.begin(), files.end());
  std::vector<PrefixRecord> out;
  for (const auto& f : files) {
    auto read = read_conda_meta_record_text(f);
    if (!read) return read.error();
    const std::string& text = *read;
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& pe) {
      std::size_t byte = pe.byte > 0 ? pe.byte - 1 : 0;
      std::size_t line = 1, col = 1;
      for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
          ++line;
          col = 1;
        } else {
          ++col;
        }
      }
      Error e;
      e.kind = ErrorKind::Parse;
      e.where = f.string() + ":" + std::to_string(line) + ":" + std::to_string(col);
      e.message = "invalid JSON in a conda-meta record";
      e.hint = "the file is damaged; reinstall the package or remove the file";
      return e;
    }
    auto rec = PrefixRecord::from_json(j);
    if (!rec) return rec.error().with_context(f.string());
    out.push_back(std::move(*rec));
  }
  std::stable_sort(out.begin(), out.end(), [](const PrefixRecord& a, const PrefixRecord& b) { return a.name < b.name; });
  return out;
}

}  // namespace envlock
