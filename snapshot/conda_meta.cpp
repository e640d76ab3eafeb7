// conda-meta records read with simdjson (DOM) instead of nlohmann: the capture of a 700-package
// prefix spent a quarter of its CPU time building nlohmann trees of conda-meta/*.json. The reader
// gives exactly what PrefixRecord::from_json(nlohmann::json::parse(text)) gives, or nothing when
// it is not sure (text simdjson refuses, a mistyped or unexpected value): the caller then reads
// the record with nlohmann and PrefixRecord::from_json, which produce the exact error message.
// Duplicate keys: the last one counts, as in nlohmann's tree.
#include <simdjson.h>

#include <algorithm>
#include <cctype>

#include "text_util.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Largest timestamp read as seconds, as PackageRecord::from_json (conda's rule).
constexpr std::uint64_t kMaxSecondsTimestamp = 253402300799ULL;

// Optional string: absent/null keep `out` as is (empty), a string sets it, anything else fails.
bool opt_string(const element* e, std::string& out) {
  if (e == nullptr || e->is_null()) return true;
  std::string_view v;
  if (e->get_string().get(v) != simdjson::SUCCESS) return false;
  out.assign(v.data(), v.size());
  return true;
}

bool opt_strings(const element* e, std::vector<std::string>& out) {
  if (e == nullptr || e->is_null()) return true;
  array a;
  if (e->get_array().get(a) != simdjson::SUCCESS) return false;
  for (element v : a) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return false;
    out.emplace_back(s);
  }
  return true;
}

// Non-negative integer (or a non-negative float, truncated, as nlohmann's get does).
bool opt_uint(const element* e, std::optional<std::uint64_t>& out) {
  if (e == nullptr || e->is_null()) return true;
  switch (e->type()) {
    case simdjson::dom::element_type::UINT64: out = e->get_uint64().value_unsafe(); return true;
    case simdjson::dom::element_type::INT64: {
      const std::int64_t v = e->get_int64().value_unsafe();
      if (v < 0) return false;
      out = static_cast<std::uint64_t>(v);
      return true;
    }
    case simdjson::dom::element_type::DOUBLE: {
      const double d = e->get_double().value_unsafe();
      if (!(d >= 0 && d < 1.8e19)) return false;
      out = static_cast<std::uint64_t>(d);
      return true;
    }
    default: return false;
  }
}

// An integer that is exactly `1`, `2`, ... (nlohmann's get<int> would truncate larger ones: those
// are left to the reference reader).
bool small_int(const element& e, std::int64_t& out) {
  if (e.type() == simdjson::dom::element_type::INT64) {
    out = e.get_int64().value_unsafe();
    return out >= 0 && out <= 1000;
  }
  if (e.type() == simdjson::dom::element_type::UINT64) {
    const std::uint64_t u = e.get_uint64().value_unsafe();
    out = static_cast<std::int64_t>(u);
    return u <= 1000;
  }
  return false;
}

// The keys PrefixRecord::from_json reads, and the last value of each (a repeated key overwrites).
enum RecordKey {
  kName, kVersion, kBuild, kBuildNumber, kSubdir, kDepends, kConstrains, kTrackFeatures, kFeatures, kLicense,
  kLicenseFamily, kMd5, kSha256, kSize, kTimestamp, kNoarch, kArch, kPlatform, kSitePackagesPath, kUrl, kFn,
  kChannel, kFiles, kTarballPath, kExtractedDir, kRequestedSpec, kLink, kPathsData, kRecordKeys
};

int record_key(std::string_view key) {
  switch (key.size()) {
    case 2: return key == "fn" ? kFn : -1;
    case 3: return key == "md5" ? kMd5 : key == "url" ? kUrl : -1;
    case 4: return key == "name" ? kName : key == "size" ? kSize : key == "arch" ? kArch : key == "link" ? kLink : -1;
    case 5: return key == "build" ? kBuild : key == "files" ? kFiles : -1;
    case 6: return key == "subdir" ? kSubdir : key == "sha256" ? kSha256 : key == "noarch" ? kNoarch : -1;
    case 7:
      return key == "version" ? kVersion : key == "depends" ? kDepends : key == "license" ? kLicense
             : key == "channel" ? kChannel : -1;
    case 8: return key == "features" ? kFeatures : key == "platform" ? kPlatform : -1;
    case 9: return key == "timestamp" ? kTimestamp : -1;
    case 10: return key == "constrains" ? kConstrains : key == "paths_data" ? kPathsData : -1;
    case 12: return key == "build_number" ? kBuildNumber : -1;
    case 14:
      return key == "track_features" ? kTrackFeatures : key == "license_family" ? kLicenseFamily
             : key == "requested_spec" ? kRequestedSpec : -1;
    case 21: return key == "extracted_package_dir" ? kExtractedDir : -1;
    case 25:
      return key == "package_tarball_full_path" ? kTarballPath
             : key == "python_site_packages_path" ? kSitePackagesPath : -1;
    default: return -1;
  }
}

enum PathKey { kPath, kPathType, kPathSha256, kSha256InPrefix, kSizeInBytes, kPlaceholder, kFileMode, kNoLink, kPathKeys };

int path_key(std::string_view key) {
  switch (key.size()) {
    case 5: return key == "_path" ? kPath : -1;
    case 6: return key == "sha256" ? kPathSha256 : -1;
    case 7: return key == "no_link" ? kNoLink : -1;
    case 9: return key == "path_type" ? kPathType : key == "file_mode" ? kFileMode : -1;
    case 13: return key == "size_in_bytes" ? kSizeInBytes : -1;
    case 16: return key == "sha256_in_prefix" ? kSha256InPrefix : -1;
    case 18: return key == "prefix_placeholder" ? kPlaceholder : -1;
    default: return -1;
  }
}

// The last value of each key of `o` that `key_of` knows (nullptr: absent).
template <std::size_t N>
struct Fields {
  element values[N];
  bool present[N] = {};
  const element* operator[](int k) const { return present[k] ? &values[k] : nullptr; }
  void fill(object o, int (*key_of)(std::string_view)) {
    for (auto field : o) {
      const int k = key_of(field.key);
      if (k < 0) continue;
      values[k] = field.value;
      present[k] = true;
    }
  }
};

bool read_path_entry(element p, PathEntry& e) {
  object o;
  if (p.get_object().get(o) != simdjson::SUCCESS) return false;
  Fields<kPathKeys> k;
  k.fill(o, path_key);
  std::string_view path;
  if (k[kPath] == nullptr || k[kPath]->get_string().get(path) != simdjson::SUCCESS) return false;
  e.path.assign(path.data(), path.size());
  std::string type;
  if (!opt_string(k[kPathType], type)) return false;
  const auto path_type = path_type_from_string(type);
  if (!path_type) return false;
  e.type = *path_type;
  std::string in_package, in_prefix;
  if (!opt_string(k[kPathSha256], in_package) || !opt_string(k[kSha256InPrefix], in_prefix)) return false;
  if (!in_prefix.empty() && in_package != in_prefix) e.sha256_in_package = in_package;
  e.sha256 = in_prefix.empty() ? std::move(in_package) : std::move(in_prefix);
  if (!opt_uint(k[kSizeInBytes], e.size_in_bytes)) return false;
  if (!opt_string(k[kPlaceholder], e.prefix_placeholder)) return false;
  std::string mode;
  if (!opt_string(k[kFileMode], mode)) return false;
  const auto file_mode = placeholder_mode_from_string(mode);
  if (!file_mode) return false;
  e.file_mode = *file_mode;
  if (k[kNoLink] != nullptr) {
    bool b = false;
    if (k[kNoLink]->get_bool().get(b) == simdjson::SUCCESS) e.no_link = b;
  }
  return true;
}

std::optional<PrefixRecord> record_from(element root) {
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  Fields<kRecordKeys> k;
  k.fill(o, record_key);
  PrefixRecord r;
  std::string_view name, version, build;
  if (k[kName] == nullptr || k[kName]->get_string().get(name) != simdjson::SUCCESS) return std::nullopt;
  if (k[kVersion] == nullptr || k[kVersion]->get_string().get(version) != simdjson::SUCCESS) return std::nullopt;
  if (k[kBuild] == nullptr || k[kBuild]->get_string().get(build) != simdjson::SUCCESS) return std::nullopt;
  r.name.assign(name.data(), name.size());
  r.name = ascii_lower(std::move(r.name));
  auto v = Version::parse(version);
  if (!v) return std::nullopt;
  r.version = std::move(*v);
  r.build.assign(build.data(), build.size());
  std::optional<std::uint64_t> build_number;
  if (!opt_uint(k[kBuildNumber], build_number)) return std::nullopt;
  r.build_number = build_number.value_or(0);
  if (!opt_string(k[kSubdir], r.subdir)) return std::nullopt;
  if (!opt_strings(k[kDepends], r.depends) || !opt_strings(k[kConstrains], r.constrains)) return std::nullopt;
  if (k[kTrackFeatures] != nullptr && !k[kTrackFeatures]->is_null()) {
    std::string_view s;
    if (k[kTrackFeatures]->get_string().get(s) == simdjson::SUCCESS) {
      r.track_features = split_features(s);
    } else {
      std::vector<std::string> entries;
      if (!opt_strings(k[kTrackFeatures], entries)) return std::nullopt;
      for (const auto& entry : entries) {
        for (auto& f : split_features(entry)) r.track_features.push_back(std::move(f));
      }
    }
  }
  if (k[kFeatures] != nullptr && k[kFeatures]->is_array()) {
    std::vector<std::string> f;
    if (!opt_strings(k[kFeatures], f)) return std::nullopt;
    for (const auto& s : f) r.features += (r.features.empty() ? "" : " ") + s;
  } else if (!opt_string(k[kFeatures], r.features)) {
    return std::nullopt;
  }
  if (!opt_string(k[kLicense], r.license) || !opt_string(k[kLicenseFamily], r.license_family)) return std::nullopt;
  if (!opt_string(k[kMd5], r.md5) || !opt_string(k[kSha256], r.sha256)) return std::nullopt;
  r.md5 = ascii_lower(std::move(r.md5));
  r.sha256 = ascii_lower(std::move(r.sha256));
  if (!opt_uint(k[kSize], r.size) || !opt_uint(k[kTimestamp], r.timestamp)) return std::nullopt;
  if (r.timestamp && *r.timestamp <= kMaxSecondsTimestamp) *r.timestamp *= 1000;
  if (k[kNoarch] != nullptr && !k[kNoarch]->is_null()) {
    bool b = false;
    std::string_view s;
    if (k[kNoarch]->get_bool().get(b) == simdjson::SUCCESS) {
      r.noarch = b ? NoArchKind::Generic : NoArchKind::None;
    } else if (k[kNoarch]->get_string().get(s) == simdjson::SUCCESS && (s == "python" || s == "generic" || s.empty())) {
      r.noarch = s == "python" ? NoArchKind::Python : s == "generic" ? NoArchKind::Generic : NoArchKind::None;
    } else {
      return std::nullopt;
    }
  }
  if (!opt_string(k[kArch], r.arch) || !opt_string(k[kPlatform], r.platform)) return std::nullopt;
  if (!opt_string(k[kSitePackagesPath], r.python_site_packages_path)) return std::nullopt;
  if (!opt_string(k[kUrl], r.url) || !opt_string(k[kFn], r.file_name) || !opt_string(k[kChannel], r.channel)) return std::nullopt;
  if (r.file_name.empty() && !r.url.empty()) r.file_name = r.url.substr(r.url.rfind('/') + 1);
  if (!opt_strings(k[kFiles], r.files)) return std::nullopt;
  std::sort(r.files.begin(), r.files.end());
  if (!opt_string(k[kTarballPath], r.package_tarball_full_path)) return std::nullopt;
  if (!opt_string(k[kExtractedDir], r.extracted_package_dir)) return std::nullopt;
  if (!opt_string(k[kRequestedSpec], r.requested_spec)) return std::nullopt;
  if (object link; k[kLink] != nullptr && k[kLink]->get_object().get(link) == simdjson::SUCCESS) {
    Fields<2> l;
    l.fill(link, [](std::string_view key) { return key == "type" ? 0 : key == "source" ? 1 : -1; });
    if (const element* type = l[0]; type != nullptr && !type->is_null()) {
      std::int64_t t = 0;
      if (!small_int(*type, t) || t < 1 || t > 3) return std::nullopt;
      r.link_type = t == 1 ? "hardlink" : t == 2 ? "softlink" : "copy";
    }
    if (r.extracted_package_dir.empty() && !opt_string(l[1], r.extracted_package_dir)) return std::nullopt;
  }
  if (k[kPathsData] != nullptr && !k[kPathsData]->is_null()) {
    object pd;
    if (k[kPathsData]->get_object().get(pd) != simdjson::SUCCESS) return std::nullopt;
    Fields<2> f;
    f.fill(pd, [](std::string_view key) { return key == "paths_version" ? 0 : key == "paths" ? 1 : -1; });
    const element* version_e = f[0];
    const element* paths_e = f[1];
    if (version_e != nullptr) {
      std::int64_t pv = 0;
      if (!small_int(*version_e, pv) || pv != 1) return std::nullopt;
    }
    if (paths_e != nullptr) {
      array paths;
      if (paths_e->get_array().get(paths) != simdjson::SUCCESS) return std::nullopt;
      r.paths.reserve(paths.size());
      for (element p : paths) {
        PathEntry e;
        if (!read_path_entry(p, e)) return std::nullopt;
        r.paths.push_back(std::move(e));
      }
    }
  }
  return r;
}

}  // namespace

struct PrefixRecordReader::Impl {
  simdjson::dom::parser parser;
};

PrefixRecordReader::PrefixRecordReader() : impl_(std::make_unique<Impl>()) {}
PrefixRecordReader::~PrefixRecordReader() = default;
PrefixRecordReader::PrefixRecordReader(PrefixRecordReader&&) noexcept = default;
PrefixRecordReader& PrefixRecordReader::operator=(PrefixRecordReader&&) noexcept = default;

std::size_t PrefixRecordReader::padding() { return simdjson::SIMDJSON_PADDING; }

std::optional<PrefixRecord> PrefixRecordReader::read(const char* data, std::size_t size, std::size_t capacity) {
  element root;
  const bool padded = capacity >= size + simdjson::SIMDJSON_PADDING;
  if (impl_->parser.parse(reinterpret_cast<const std::uint8_t*>(data), size, !padded).get(root) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  return record_from(root);
}

std::optional<PrefixRecord> PrefixRecordReader::read(std::string_view text) {
  return read(text.data(), text.size(), text.size());
}

}  // namespace envlock
