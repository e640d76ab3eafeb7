// Lockfile::parse / read — envlock.lock (YAML, format version 1) read with yaml-cpp and validated:
// every error names file:line:col and shows the offending line.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <locale>
#include <optional>
#include <set>
#include <span>
#include <unordered_set>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "envlock/input_file.hpp"
#include "block_yaml.hpp"
#include "envlock/paths.hpp"
#include "envlock/platform.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"
#include "envlock/record_url.hpp"
#include "envlock/url.hpp"
#include "yaml_source.hpp"

namespace envlock {
namespace {

using block_yaml::kind_name;
using block_yaml::Node;

/// What a value is, for error messages ("version of numpy"): up to four pieces, joined only when
/// an error is reported, so reading a lockfile of thousands of records builds no message text.
struct What {
  std::string_view part[4];
  What(const char* s) : part{s} {}                // NOLINT: implicit, as a string would be
  What(const std::string& s) : part{s} {}         // NOLINT
  What(std::string_view a, std::string_view b, std::string_view c = {}) : part{a, b, c} {}
  /// `prefix` + this (the last piece is dropped when all four are used).
  [[nodiscard]] What prefixed(std::string_view prefix) const {
    What w(prefix, part[0], part[1]);
    w.part[3] = part[2];
    return w;
  }
  [[nodiscard]] std::string str() const {
    std::string s;
    for (auto p : part) s += p;
    return s;
  }
};

/// Map keys of the lockfile, in the order `unknown key` hints list them.
constexpr std::string_view kPackageKeys[] = {
    "name",      "version", "build", "build_number", "subdir",   "noarch",         "channel",
    "url",       "file_name", "sha256", "md5",       "size",     "depends",        "constrains",
    "license",   "license_family", "timestamp", "track_features", "features", "python_site_packages_path",
    "arch",      "platform", "layer"};
enum PackageKey : std::size_t {
  kName, kVersion, kBuild, kBuildNumber, kSubdir, kNoarch, kChannel, kUrl, kFileName, kSha256, kMd5, kSize,
  kDepends, kConstrains, kLicense, kLicenseFamily, kTimestamp, kTrackFeatures, kFeatures,
  kPythonSitePackagesPath, kArch, kPlatform, kLayer, kPackageKeyCount
};
static_assert(std::size(kPackageKeys) == kPackageKeyCount);
constexpr std::string_view kPackageRequired[] = {"name", "version", "build", "build_number", "subdir", "channel", "url", "layer"};

/// A URL can carry credentials only in its authority (`user:pw@`), a `/t/<token>/` segment or its
/// query (redact_url); most carry none of these, and need no redaction to tell.
bool may_carry_credentials(std::string_view url) {
  return url.find('@') != std::string_view::npos || url.find("/t/") != std::string_view::npos ||
         url.find('?') != std::string_view::npos;
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}
  Result<Lockfile> read();

 private:
  /// The text as yaml::Source (made on first use: for an error, or for yaml-cpp).
  const yaml::Source& src() const {
    if (!src_) src_.emplace(std::string(text_), source_);
    return *src_;
  }
  Error at(const Node& n, const std::string& message, const std::string& hint = {}) const {
    return src().error_at(n.Mark(), message, hint);
  }
  /// `at` with no text of the file quoted (yaml::Source::error_at_unquoted).
  Error at_unquoted(const Node& n, const std::string& message, const std::string& hint = {}) const {
    return src().error_at_unquoted(n.Mark(), message, hint);
  }
  /// `at` for a key the file should not have: its line up to the key's `:` (error_at_key).
  Error at_key(const Node& key, const std::string& message, const std::string& hint = {}) const {
    return src().error_at_key(key.Mark(), message, hint);
  }
  /// Checks that `map` has no key twice (as yaml::check_unique_keys).
  Status check_unique_keys(const Node& map) const {
    constexpr std::size_t kSmall = 32;  // small maps compare pairwise, large ones use a set
    std::string_view small[kSmall];
    std::set<std::string_view> seen;
    std::size_t i = 0;
    for (auto [key, value] : map.entries()) {
      if (!key.IsScalar()) return at(key, "a key must be a plain string, found " + kind_name(key));
      const std::string_view k = key.Scalar();
      bool dup = false;
      if (map.size() <= kSmall) {
        for (std::size_t j = 0; j < i && !dup; ++j) dup = small[j] == k;
        small[i] = k;
      } else {
        dup = !seen.insert(k).second;
      }
      if (dup) return at(key, "duplicate key '" + std::string(k) + "'", "remove one of the two entries");
      ++i;
    }
    return ok_status();
  }
  Status str(const Node& n, const What& what, std::string& out) const {
    if (!n.IsScalar()) return at(n, what.str() + " must be a string, found " + kind_name(n));
    out.assign(n.Scalar());
    return ok_status();
  }
  Result<std::string> str(const Node& n, const What& what) const {
    std::string out;
    if (auto st = str(n, what, out); !st) return st.error();
    return out;
  }
  Result<std::uint64_t> uint(const Node& n, const What& what) const {
    if (n.IsScalar()) {
      const std::string_view s = n.Scalar();
      std::uint64_t v = 0;
      bool ok = !s.empty() && s.size() <= 20 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
      for (char c : s) {
        if (!ok) break;
        if (v > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(c - '0')) / 10) ok = false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (ok) return v;
    }
    return at(n, what.str() + " must be a non-negative integer, found " + kind_name(n));
  }
  Result<double> real(const Node& n, const What& what) const {
    if (n.IsScalar()) {
      // YAML 1.2 core schema floats, as yaml-cpp's as<double>() reads them.
      const std::string_view s = n.Scalar();
      if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf") return std::numeric_limits<double>::infinity();
      if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
      if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
      std::istringstream in{std::string(s)};
      in.imbue(std::locale::classic());
      double v = 0;
      if (in >> v && (in >> std::ws).eof()) return v;
    }
    return at(n, what.str() + " must be a number, found " + kind_name(n));
  }
  Status strings(const Node& n, const What& what, std::vector<std::string>& out) const {
    if (!n.IsSequence()) return at(n, what.str() + " must be a list, found " + kind_name(n));
    out.clear();
    out.reserve(n.size());
    for (Node i : n.items()) {
      if (!i.IsScalar()) return at(i, what.prefixed("an entry of ").str() + " must be a string, found " + kind_name(i));
      out.emplace_back(i.Scalar());
    }
    return ok_status();
  }
  /// Checks the keys of a map: unique, each in `allowed`, and each of `required` present; puts
  /// the value of allowed[i] into found[i] (Undefined when absent).
  Status keys(const Node& n, const What& what, std::span<const std::string_view> allowed,
              std::span<const std::string_view> required, Node* found) const {
    if (!n.IsMap()) return at(n, what.str() + " must be a map, found " + kind_name(n));
    for (std::size_t i = 0; i < allowed.size(); ++i) found[i] = Node();
    // One pass while every key is an allowed string: a key seen twice is then the first duplicate.
    // Anything else takes the two passes below, which report it as before.
    bool simple = true;
    for (auto [key, value] : n.entries()) {
      const auto it = key.IsScalar() ? std::find(allowed.begin(), allowed.end(), key.Scalar()) : allowed.end();
      if (it == allowed.end()) {
        simple = false;
        break;
      }
      Node& slot = found[it - allowed.begin()];
      if (slot) return at(key, "duplicate key '" + std::string(key.Scalar()) + "'", "remove one of the two entries");
      slot = value;
    }
    if (!simple) {
      if (auto st = check_unique_keys(n); !st) return st;
      for (auto [key, value] : n.entries()) {
        const std::string_view k = key.Scalar();
        const auto it = std::find(allowed.begin(), allowed.end(), k);
        if (it == allowed.end()) {
          std::string list;
          for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
          return at_key(key, "unknown key '" + std::string(k) + "' in " + what.str(), "allowed keys: " + list);
        }
        found[it - allowed.begin()] = value;
      }
    }
    for (auto r : required)
      if (!found[std::find(allowed.begin(), allowed.end(), r) - allowed.begin()])
        return at(n, what.str() + " has no `" + std::string(r) + "`",
                  "the lockfile is incomplete; re-create it with `envlock lock`");
    return ok_status();
  }
  Status hex(const Node& n, const What& what, std::size_t len, std::string& out) const {
    if (!n.IsScalar()) return str(n, what, out);  // the "must be a string" error
    const std::string_view s = n.Scalar();
    bool ok = s.size() == len;
    for (std::size_t i = 0; ok && i < s.size(); ++i) ok = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
    if (!ok)
      return at(n, what.str() + " must be " + std::to_string(len) + " lower-case hex digits, found '" + std::string(s) + "'");
    out.assign(s);
    return ok_status();
  }
  Status url(const Node& n, const What& what, std::string& out) const {
    if (auto st = str(n, what, out); !st) return st;
    if (may_carry_credentials(out) && url_has_credentials(out)) return credentials_error(n, what, out);
    return ok_status();
  }

  /// The error for a URL with credentials; the line shown has each of them replaced by `<***>`
  /// (marked_url), so that it reads as the file's line with the secrets blanked, not as a line
  /// the file does not hold (attack on issue 18, finding 6).
  Error credentials_error(const Node& n, const What& what, const std::string& raw) const {
    Error e = at(n, what.str() + " carries credentials",
                 "lockfiles must be credential-free; re-create it with `envlock lock`");
    const std::string clean = redact_url(raw);
    const std::string marked = marked_url(raw);
    // The excerpt is redacted already (redacted_excerpt); the caret sits at the value's start.
    for (const std::string& seen : {raw, clean})
      if (const std::size_t at = e.detail.find(seen); at != std::string::npos) {
        e.detail.replace(at, seen.size(), marked);
        break;
      }
    return e;
  }

  Status package(const Node& n, const std::string& where, LockedPackage& p);
  Result<PipPackage> pip(const Node& n);
  Result<LockedPlatform> platform(const std::string& name, const Node& n);
  Result<LockedEnvironment> environment(const std::string& name, const Node& n);

  std::string_view text_;
  const std::string& source_;
  mutable std::optional<yaml::Source> src_;
};

Status Reader::package(const Node& n, const std::string& where, LockedPackage& p) {
  Node f[kPackageKeyCount];
  if (auto st = keys(n, What("a package of ", where), kPackageKeys, kPackageRequired, f); !st) return st;
  if (auto st = str(f[kName], "name", p.name); !st) return st;
  if (p.name.empty()) return at(f[kName], "empty package name");
  if (!is_valid_package_name(p.name, false))
    return at(f[kName], "conda package name '" + printable(p.name) + "' is not valid",
              "a conda package name holds only letters, digits, '.', '_', '+' and '-'");
  const std::string& name = p.name;
  std::string v;
  if (auto st = str(f[kVersion], What("version of ", name), v); !st) return st;
  auto version = Version::parse(v);
  if (!version) return at(f[kVersion], "invalid version '" + v + "' of " + name + ": " + version.error().message);
  p.version = std::move(*version);
  if (auto st = str(f[kBuild], What("build of ", name), p.build); !st) return st;
  auto bn = uint(f[kBuildNumber], What("build_number of ", name));
  if (!bn) return bn.error();
  p.build_number = *bn;
  if (auto st = str(f[kSubdir], What("subdir of ", name), p.subdir); !st) return st;
  if (f[kNoarch]) {
    std::string na;
    if (auto st = str(f[kNoarch], What("noarch of ", name), na); !st) return st;
    if (na == "python") p.noarch = NoArchKind::Python;
    else if (na == "generic") p.noarch = NoArchKind::Generic;
    else return at(f[kNoarch], "noarch of " + name + " must be python or generic, found '" + na + "'");
  }
  if (auto st = url(f[kChannel], What("channel of ", name), p.channel); !st) return st;
  if (auto st = url(f[kUrl], What("url of ", name), p.url); !st) return st;
  if (p.url.empty()) return at(f[kUrl], "empty url of " + name);
  if (f[kFileName]) {
    if (auto st = str(f[kFileName], What("file_name of ", name), p.file_name); !st) return st;
  } else {
    p.file_name = p.url.substr(p.url.find_last_of('/') + 1);
    if (auto hash = p.file_name.find('#'); hash != std::string::npos) p.file_name.resize(hash);
  }
  // The archive the URL names is the one installed: an entry that says another name, version or
  // build (or a `file_name` that does), or a URL segment that a decoding server resolves to another
  // file (`%2F..%2F`), would be shown by `show` and `diff` as one package and installed as another
  // (envlock/record_url.hpp; the conda-lock and pixi.lock readers refuse the same).
  if (auto segment = encoded_path_segment(p.url))
    return at(f[kUrl],
              "package '" + name + "': URL '" + printable(p.url) + "' has a path segment that decodes to a '/', '\\', '.' or '..' ('" +
                  printable(*segment) + "')",
              "servers that decode the path first serve another file than the one the URL names; a lockfile URL never "
              "encodes one: re-create the lockfile with `envlock lock`");
  for (const bool from_url : {true, false}) {
    if (!from_url && !f[kFileName]) break;
    const std::string file = from_url ? url_file_name(p.url) : p.file_name;
    const auto mismatch = record_file_mismatch(p, file);
    if (!mismatch) continue;
    const std::size_t key = mismatch->key == "name" ? kName : mismatch->key == "version" ? kVersion : kBuild;
    return at(f[key],
              "package '" + name + "': `" + mismatch->key + "` '" + printable(mismatch->recorded) + "' disagrees with " +
                  (from_url ? "the file its URL names, " : "its `file_name`, ") + printable(file) + " (" + mismatch->key +
                  " '" + printable(mismatch->in_file) + "')",
              "an installer downloads the URL, so the entry would be shown as one package and installed as another; "
              "re-create the lockfile with `envlock lock`, or fix the entry or its URL");
  }
  if (f[kSha256])
    if (auto st = hex(f[kSha256], What("sha256 of ", name), 64, p.sha256); !st) return st;
  if (f[kMd5])
    if (auto st = hex(f[kMd5], What("md5 of ", name), 32, p.md5); !st) return st;
  if (f[kSize]) {
    auto s = uint(f[kSize], What("size of ", name));
    if (!s) return s.error();
    p.size = *s;
  }
  if (f[kTimestamp]) {
    auto t = uint(f[kTimestamp], What("timestamp of ", name));
    if (!t) return t.error();
    p.timestamp = *t;
  }
  for (auto [key, field] : {std::pair{kDepends, &p.depends}, std::pair{kConstrains, &p.constrains},
                            std::pair{kTrackFeatures, &p.track_features}}) {
    if (!f[key]) continue;
    if (auto st = strings(f[key], What(kPackageKeys[key], " of ", name), *field); !st) return st;
  }
  for (auto [key, field] : {std::pair{kLicense, &p.license}, std::pair{kLicenseFamily, &p.license_family},
                            std::pair{kFeatures, &p.features},
                            std::pair{kPythonSitePackagesPath, &p.python_site_packages_path},
                            std::pair{kArch, &p.arch}, std::pair{kPlatform, &p.platform},
                            std::pair{kLayer, &p.layer}}) {
    if (!f[key]) continue;
    if (auto st = str(f[key], What(kPackageKeys[key], " of ", name), *field); !st) return st;
  }
  if (p.layer.empty()) return at(f[kLayer], "empty layer of " + name, "a layer names the environment whose solve introduced the package");
  return ok_status();
}

Result<PipPackage> Reader::pip(const Node& n) {
  // `name` is absent for a pip line that names no project (`-e .`, `--extra-index-url URL`).
  static constexpr std::string_view kKeys[] = {"name",          "version",       "url",         "file_name",
                                               "sha256",        "size",          "index",       "requires_python",
                                               "requires_dist", "required_by",   "requirement", "editable"};
  enum Key : std::size_t { kName, kVersion, kUrl, kFile, kSha, kSize, kIndex, kPython, kDist, kBy, kReq, kEditable };
  Node f[std::size(kKeys)];
  if (auto st = keys(n, "a pip entry", kKeys, {}, f); !st) return st.error();
  PipPackage p;
  for (auto [key, field] : {std::pair{kName, &p.name}, std::pair{kVersion, &p.version}, std::pair{kFile, &p.file_name},
                            std::pair{kPython, &p.requires_python}}) {
    if (!f[key]) continue;
    if (auto st = str(f[key], What("pip ", kKeys[key]), *field); !st) return st.error();
  }
  if (f[kName] && !p.name.empty() && !is_valid_package_name(p.name, true))  // "" : a pip line naming no project
    return at(f[kName], "PyPI package name '" + printable(p.name) + "' is not valid",
              "a PyPI name holds only letters, digits, '.', '_' and '-' (PEP 508)");
  if (f[kUrl])
    if (auto st = url(f[kUrl], "pip url", p.url); !st) return st.error();
  if (f[kIndex])
    if (auto st = url(f[kIndex], "pip index", p.index); !st) return st.error();
  if (f[kSha])
    if (auto st = hex(f[kSha], "pip sha256", 64, p.sha256); !st) return st.error();
  if (f[kSize]) {
    auto s = uint(f[kSize], "pip size");
    if (!s) return s.error();
    p.size = *s;
  }
  for (auto [key, field] : {std::pair{kDist, &p.requires_dist}, std::pair{kBy, &p.required_by}}) {
    if (!f[key]) continue;
    if (auto st = strings(f[key], What("pip ", kKeys[key]), *field); !st) return st.error();
  }
  // The file the URL names is the one installed: a `file_name` that says another would be shown
  // by `show` and `diff` as one wheel and installed as another (as a conda entry's, above).
  if (f[kFile] && !p.url.empty() && url_file_name(p.url) != p.file_name)
    return at(f[kFile],
              "pip package '" + printable(p.name) + "': `file_name` '" + printable(p.file_name) +
                  "' is not the file its URL names, " + printable(url_file_name(p.url)),
              "an installer downloads the URL, so the entry would be shown as one wheel and installed as another; "
              "re-create the lockfile with `envlock lock`, or fix the entry or its URL");
  // Read credential-free: an older envlock wrote a manifest's pip line verbatim, token
  // included; `envlock lock` keeps the pins and rewrites such a file clean.
  if (f[kReq]) {
    if (auto st = str(f[kReq], "pip requirement", p.requirement); !st) return st.error();
    if (p.requirement.find("://") != std::string::npos) p.requirement = redact_text(p.requirement);
  }
  if (f[kEditable]) {  // an editable install (PEP 610 dir_info.editable): a working tree, never a pin
    std::string e;
    if (auto st = str(f[kEditable], "pip editable", e); !st) return st.error();
    if (e != "true" && e != "false") return at(f[kEditable], "pip editable must be true or false, found '" + e + "'");
    p.editable = e == "true";
  }
  if (p.name.empty() && p.requirement.empty())
    return at(n, "a pip entry needs a name or a requirement");
  return p;
}

Result<LockedPlatform> Reader::platform(const std::string& name, const Node& n) {
  const std::string where = "platform " + name;
  static constexpr std::string_view kKeys[] = {"channels", "virtual_packages", "packages", "pip", "channel_names", "pypi_indexes"};
  static constexpr std::string_view kRequired[] = {"channels", "packages"};
  Node f[std::size(kKeys)];
  if (auto st = keys(n, where, kKeys, kRequired, f); !st) return st.error();
  LockedPlatform lp;
  lp.platform = name;
  if (auto st = strings(f[0], What("channels of ", where), lp.channels); !st) return st.error();
  std::size_t i = 0;
  for (const auto& c : lp.channels) {
    if (url_has_credentials(c)) return credentials_error(f[0].item(i), What("a channel of ", where), c);
    ++i;
  }
  if (const Node& names = f[4]) {  // {channel as written in `channels`: name}
    if (!names.IsMap())
      return at(names, "channel_names of " + where + " must be a map, found " + kind_name(names));
    if (auto st = check_unique_keys(names); !st) return st.error();
    lp.channel_names.assign(lp.channels.size(), "");
    for (auto [key, value] : names.entries()) {
      auto k = str(key, What("a channel in channel_names of ", where));
      if (!k) return k.error();
      auto v = str(value, What("a channel name in channel_names of ", where));
      if (!v) return v.error();
      const auto it = std::find(lp.channels.begin(), lp.channels.end(), *k);
      if (it == lp.channels.end())
        return at(key, "channel_names of " + where + " names '" + *k + "', which is not one of its channels");
      if (v->empty()) return at(value, "the channel name of '" + *k + "' is empty");
      lp.channel_names[static_cast<std::size_t>(it - lp.channels.begin())] = *v;
    }
  }
  if (const Node& ix = f[5]) {  // the PyPI indexes the pins were resolved against, primary first
    if (!ix.IsSequence()) return at(ix, "pypi_indexes of " + where + " must be a list, found " + kind_name(ix));
    for (Node item : ix.items()) {
      if (auto st = url(item, What("a PyPI index of ", where), lp.pypi_indexes.emplace_back()); !st) return st.error();
    }
  }
  if (const Node& vps = f[1]) {
    if (!vps.IsSequence()) return at(vps, "virtual_packages of " + where + " must be a list, found " + kind_name(vps));
    for (Node item : vps.items()) {
      auto s = str(item, "a virtual package");
      if (!s) return s.error();
      auto vp = VirtualPackage::parse(*s);
      if (!vp) return at(item, vp.error().message, vp.error().hint);
      lp.virtual_packages.push_back(std::move(*vp));
    }
  }
  const Node& pkgs = f[2];
  if (!pkgs.IsSequence()) return at(pkgs, "packages of " + where + " must be a list, found " + kind_name(pkgs));
  // A name locked twice is found in file order. envlock writes packages sorted by name, so while
  // the names rise no set is needed; from the first one that does not, a set of the names seen.
  std::vector<std::string_view> names;
  std::unordered_set<std::string_view> seen;
  bool rising = true;
  lp.packages.reserve(pkgs.size());
  names.reserve(pkgs.size());
  for (Node item : pkgs.items()) {
    if (auto st = package(item, where, lp.packages.emplace_back()); !st) return st.error();
    const std::string_view pkg_name = item["name"].Scalar();  // the text p.name holds, alive with the document
    if (rising && !names.empty() && !(names.back() < pkg_name)) {
      rising = false;
      seen.reserve(pkgs.size());
      seen.insert(names.begin(), names.end());
    }
    if (!rising && !seen.insert(pkg_name).second)
      return at(item, "package '" + lp.packages.back().name + "' is locked twice for " + where,
                "a platform locks one record per name; re-create the lockfile with `envlock lock`");
    names.push_back(pkg_name);
  }
  if (!rising)
    std::sort(lp.packages.begin(), lp.packages.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (const Node& pips = f[3]) {
    if (!pips.IsSequence()) return at(pips, "pip of " + where + " must be a list, found " + kind_name(pips));
    for (Node item : pips.items()) {
      auto p = pip(item);
      if (!p) return p.error();
      lp.pip.push_back(std::move(*p));
    }
  }
  return lp;
}

Result<LockedEnvironment> Reader::environment(const std::string& name, const Node& n) {
  const std::string where = "environment " + name;
  static constexpr std::string_view kKeys[] = {"base", "requested", "reference", "platforms", "base-lockfile"};
  static constexpr std::string_view kRequired[] = {"platforms"};
  Node f[std::size(kKeys)];
  if (auto st = keys(n, where, kKeys, kRequired, f); !st) return st.error();
  LockedEnvironment env;
  env.name = name;
  if (f[0])
    if (auto st = str(f[0], What("base of ", where), env.base); !st) return st.error();
  if (f[1])
    if (auto st = strings(f[1], What("requested of ", where), env.requested); !st) return st.error();
  if (const Node& b = f[4]) {
    static constexpr std::string_view kBaseKeys[] = {"lockfile", "environment", "sha256"};
    Node bf[std::size(kBaseKeys)];
    if (auto st = keys(b, What("base-lockfile of ", where), kBaseKeys, kBaseKeys, bf); !st) return st.error();
    LockedBase lb;
    // (credential-free as every URL of a lockfile: an envlock before the fix of attack 18 A11 wrote
    // the manifest's user:token@ here; refused as such a channel is)
    if (auto st = url(bf[0], What("base-lockfile lockfile of ", where), lb.lockfile); !st) return st.error();
    if (auto st = str(bf[1], What("base-lockfile environment of ", where), lb.environment); !st) return st.error();
    if (auto st = str(bf[2], What("base-lockfile sha256 of ", where), lb.sha256); !st) return st.error();
    env.base_lockfile = std::move(lb);
  }
  if (const Node& r = f[2]) {
    static constexpr std::string_view kRefKeys[] = {"command", "metric", "tolerance", "recorded_value", "recorded_host"};
    static constexpr std::string_view kRefRequired[] = {"command", "metric"};
    Node rf[std::size(kRefKeys)];
    if (auto st = keys(r, What("reference of ", where), kRefKeys, kRefRequired, rf); !st) return st.error();
    ReferenceRun run;
    if (auto st = str(rf[0], "reference command", run.command); !st) return st.error();
    if (auto st = str(rf[1], "reference metric", run.metric); !st) return st.error();
    if (rf[2]) {
      auto t = real(rf[2], "reference tolerance");
      if (!t) return t.error();
      // As the manifest: |value - recorded| <= NaN never holds, and a negative bound fails always.
      if (!std::isfinite(*t) || *t < 0) {
        return at(rf[2], "reference tolerance must be a finite number >= 0, found " + std::string(rf[2].Scalar()),
                  "write an absolute tolerance, e.g. `tolerance: 0.01`, or run envlock lock again");
      }
      run.tolerance = *t;
    }
    if (rf[3]) {
      auto v = real(rf[3], "reference recorded_value");
      if (!v) return v.error();
      if (!std::isfinite(*v)) {
        return at(rf[3], "reference recorded_value must be a finite number, found " + std::string(rf[3].Scalar()),
                  "run envlock reference record again");
      }
      run.recorded_value = *v;
    }
    if (const Node& h = rf[4]) {
      if (!h.IsMap()) return at(h, "recorded_host must be a map, found " + kind_name(h));
      if (auto st = check_unique_keys(h); !st) return st.error();
      for (auto [key, value] : h.entries()) {
        auto v = str(value, What("recorded_host.", key.Scalar()));
        if (!v) return v.error();
        run.recorded_host[std::string(key.Scalar())] = *v;
      }
    }
    env.reference = std::move(run);
  }
  const Node& platforms = f[3];
  if (!platforms.IsMap()) return at(platforms, "platforms of " + where + " must be a map, found " + kind_name(platforms));
  if (auto st = check_unique_keys(platforms); !st) return st.error();
  for (auto [key, value] : platforms.entries()) {
    const std::string plat(key.Scalar());
    // A known subdir, as the manifest requires (Platform::parse).
    if (auto known = Platform::parse(plat); !known)
      return at(key, "platform '" + printable(plat) + "' of " + where + " is not a known subdir", known.error().hint);
    auto lp = platform(plat, value);
    if (!lp) return lp.error();
    env.platforms.emplace(plat, std::move(*lp));
  }
  return env;
}

Result<Lockfile> Reader::read() {
  // envlock's own block subset in one pass; anything else through yaml-cpp.
  block_yaml::Document doc;
  if (auto fast = block_yaml::parse_block_yaml(text_)) {
    doc = std::move(*fast);
  } else {
    auto loaded = src().load();
    if (!loaded) return loaded.error();
    doc = block_yaml::from_yaml_cpp(*loaded);
  }
  const Node root = doc.root();
  if (!root.IsMap())
    return Error{ErrorKind::Parse, src().where(root.Mark()), "not an envlock lockfile: expected a YAML map with `version: 1`, found " + kind_name(root),
                 "", "create one with `envlock lock`"};
  // The version first: a newer format is refused by name, whatever else it contains.
  if (!root["version"])
    return at_unquoted(root, "not an envlock lockfile: no `version`", "envlock lockfiles start with `version: 1`");
  auto v = uint(root["version"], "version");
  if (!v) return v.error();
  if (*v > static_cast<std::uint64_t>(Lockfile::kFormatVersion))
    return at(root["version"],
                         "lockfile format version " + std::to_string(*v) + " is newer than this envlock reads (version " +
                             std::to_string(Lockfile::kFormatVersion) + ")",
                         "upgrade envlock to read it; the file is left as it is");
  if (*v < 1) return at(root["version"], "lockfile format version " + std::to_string(*v) + " does not exist");
  static constexpr std::string_view kKeys[] = {"version", "manifest_hash", "environments"};
  static constexpr std::string_view kRequired[] = {"version", "environments"};
  Node f[std::size(kKeys)];
  if (auto st = keys(root, "the lockfile", kKeys, kRequired, f); !st) return st.error();
  Lockfile lf;
  lf.version = static_cast<int>(*v);
  if (f[1])
    if (auto st = str(f[1], "manifest_hash", lf.manifest_hash); !st) return st.error();
  const Node& envs = f[2];
  if (!envs.IsMap()) return at(envs, "environments must be a map, found " + kind_name(envs));
  if (auto st = check_unique_keys(envs); !st) return st.error();
  for (auto [key, value] : envs.entries()) {
    const std::string name(key.Scalar());
    // The manifest's rule for an environment name (`[A-Za-z0-9][A-Za-z0-9._-]*`): a name with a
    // space, '/' or a newline made every `show` line start with a fake package line.
    const bool plain = !name.empty() && std::isalnum(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                       });
    if (!plain)
      return at(key, "environment name '" + printable(name) + "' is not a plain name",
                "a manifest allows letters, digits, '.', '_' and '-' (starting with a letter or digit); lock again "
                "with `envlock lock`");
    auto env = environment(name, value);
    if (!env) return env.error();
    lf.environments.emplace(name, std::move(*env));
  }
  for (const auto& [name, env] : lf.environments)
    if (!env.base.empty() && !lf.environments.count(env.base))
      return at(envs[name]["base"], "base '" + env.base + "' of environment " + name + " is not in the lockfile");
  return lf;
}

/// A channel or URL written relative to the lockfile's directory (docs/lockfile.md, "Local channels").
bool is_relative_reference(std::string_view s) {
  return s == "." || s == ".." || s.starts_with("./") || s.starts_with("../");
}

/// A channel or URL written under the home folder (`~/…`, docs/lockfile.md, "Local channels").
bool is_home_reference(std::string_view s) { return s == "~" || s.starts_with("~/"); }

/// Resolves the relative channels and package URLs of `lf` against `directory` (none when empty)
/// and lists the channels in relative_channels; `~/…` ones are resolved against the home folder
/// (kept as written when there is none, or no `directory`) and not listed: written again, they are `~/…` again.
void resolve_relative_channels(Lockfile& lf, const std::filesystem::path& directory) {
  std::set<std::string> channels;
  const std::filesystem::path home = home_folder();
  // The relative spelling of a channel is a path (as a manifest writes it): its URL is
  // file_url_from_path() of the absolute path, as resolve_channel() gives for the manifest.
  auto resolve_path = [&](const std::string& s) {
    std::string p = is_home_reference(s) ? std::filesystem::path(expand_home(s, home)).lexically_normal().string()
                                         : (std::filesystem::absolute(directory) / s).lexically_normal().string();
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return file_url_from_path(p);
  };
  auto resolvable = [&](const std::string& s) {
    if (directory.empty()) return false;  // kept as written (`envlock show`)
    return is_home_reference(s) ? !home.empty() : is_relative_reference(s);
  };
  auto resolve_channel = [&](std::string& s) {
    if (!is_relative_reference(s) && !is_home_reference(s)) return;
    const bool relative = is_relative_reference(s);
    if (resolvable(s)) s = resolve_path(s);
    if (relative) channels.insert(s);
  };
  for (auto& [env_name, env] : lf.environments) {
    for (auto& [platform, lp] : env.platforms) {
      for (auto& c : lp.channels) resolve_channel(c);
      for (auto& p : lp.packages) {
        const std::string written = p.channel;
        resolve_channel(p.channel);
        if (!resolvable(p.url)) continue;
        // A package URL is its channel's URL, '/', and `subdir/file_name` as written (file names
        // are joined unencoded, as the channel's own records join them).
        // A rest with `.` or `..` segments (`./chan/../../elsewhere/x.conda`) is not under the
        // channel: the whole path is normalised instead, so the URL names the folder really read.
        const std::string rest = p.url.size() > written.size() ? p.url.substr(written.size()) : std::string();
        const bool dotted = ("/" + rest + "/").find("/../") != std::string::npos || ("/" + rest + "/").find("/./") != std::string::npos;
        if (!dotted && p.url.size() > written.size() && p.url.starts_with(written) && p.url[written.size()] == '/')
          p.url = p.channel + rest;
        else
          p.url = resolve_path(p.url);
      }
      // A pip source under the home folder (`url: ~/src/mylib`, `mylib @ ~/src/mylib`): its
      // file:// URL against this reader's home folder, as to_yaml spelled it.
      for (auto& ix : lp.pypi_indexes) resolve_channel(ix);  // a local index folder, as a pin's `index`
      for (auto& pip : lp.pip) {
        if (is_home_reference(pip.url) && resolvable(pip.url)) pip.url = resolve_path(pip.url);
        // A wheel of a find-links folder that travels with the project (`index: ./wheels`,
        // `url: ./wheels/x.whl`): resolved against the lockfile's folder, as a local channel and
        // its packages are, the folder listed so that it is written relative again.
        resolve_channel(pip.index);
        if (is_relative_reference(pip.url) && resolvable(pip.url)) {
          pip.url = resolve_path(pip.url);
          if (const auto path = path_from_file_url(pip.url))
            channels.insert(file_url_from_path(std::filesystem::path(*path).parent_path().string()));
        }
        for (std::size_t at = pip.requirement.find('~'); at != std::string::npos; at = pip.requirement.find('~', at + 1)) {
          if (at > 0 && pip.requirement[at - 1] != ' ' && pip.requirement[at - 1] != '@') continue;
          std::size_t end = pip.requirement.find_first_of(" ;", at);
          if (end == std::string::npos) end = pip.requirement.size();
          const std::string ref = pip.requirement.substr(at, end - at);
          if (!is_home_reference(ref) || !resolvable(ref)) continue;
          const std::string url = resolve_path(ref);
          pip.requirement.replace(at, end - at, url);
          at += url.size() - 1;
        }
      }

    }
  }
  lf.relative_channels.assign(channels.begin(), channels.end());
}

}  // namespace

namespace {

/// The text with the lines of a top-level `snapshot:` block blanked (line numbers kept), or
/// nullopt when there is none: a snapshot file is an envlock.lock document plus that block. The
/// block's `format:` is checked here (a newer snapshot format is refused at `source:line:col`, as
/// Snapshot::parse refuses it), since the rest of the block is not read.
Result<std::optional<std::string>> without_snapshot_block(const std::string& text, const std::string& source) {
  if (!text.starts_with("snapshot:") && text.find("\nsnapshot:") == std::string::npos) return std::optional<std::string>();
  std::string out;
  out.reserve(text.size());
  bool inside = false;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    ++line_no;
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '-';
    if (top_level) inside = line.starts_with("snapshot:");
    constexpr std::string_view kFormat = "  format:";
    if (inside && line.starts_with(kFormat)) {
      std::size_t col = kFormat.size();
      while (col < line.size() && line[col] == ' ') ++col;
      std::size_t stop = line.find_first_of(" #\r", col);
      const std::string_view value = line.substr(col, stop == std::string_view::npos ? std::string_view::npos : stop - col);
      const std::string at = source + ":" + std::to_string(line_no) + ":" + std::to_string(col + 1);
      const bool digits = !value.empty() && value.size() <= 9 &&
                          std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits)
        return Error{ErrorKind::Parse, at, "the snapshot `format` must be a whole number, found '" + std::string(value) + "'",
                     "", "the file may be damaged; capture the snapshot again"};
      if (std::stoi(std::string(value)) > kSnapshotFormatVersion)
        return Error{ErrorKind::Parse, at,
                     "snapshot format " + std::string(value) + " is newer than this envlock reads (format " +
                         std::to_string(kSnapshotFormatVersion) + ")",
                     "", "upgrade envlock to read this snapshot"};
    }
    if (!inside) out += line;
    out += '\n';
    pos = end + 1;
  }
  return std::optional<std::string>(std::move(out));
}

}  // namespace

Result<Lockfile> Lockfile::parse(const std::string& text, const std::string& source,
                                 const std::filesystem::path& directory) {
  auto lock_part = without_snapshot_block(text, source);
  if (!lock_part) return lock_part.error();
  auto lf = Reader(*lock_part ? **lock_part : text, source).read();
  if (!lf) return lf;
  resolve_relative_channels(*lf, directory);
  if (*lock_part) {  // a snapshot: never solved, so no host facts as assumptions
    for (auto& [name, env] : lf->environments)
      for (auto& [platform, lp] : env.platforms) lp.virtual_packages = unsolved_virtual_packages(platform);
  }
  return lf;
}

std::vector<VirtualPackage> unsolved_virtual_packages(std::string_view platform) {
  std::vector<VirtualPackage> out;
  if (platform.starts_with("linux-")) out = {{"__linux", "0", "0"}, {"__unix", "0", "0"}};
  else if (platform.starts_with("osx-")) out = {{"__osx", "0", "0"}, {"__unix", "0", "0"}};
  else if (platform.starts_with("freebsd-")) out = {{"__unix", "0", "0"}};
  else if (platform.starts_with("win-")) out = {{"__win", "0", "0"}};
  return out;
}

Result<Lockfile> Lockfile::read(const std::filesystem::path& path) {
  if (std::error_code dir_ec; std::filesystem::is_directory(path, dir_ec))
    return Error{ErrorKind::Io, path.string(), "is a directory, not a lockfile", "",
                 "pass the lockfile itself, e.g. " + (path / "envlock.lock").string()};
  // Untrusted input (a pull request's envlock.lock can be a link to anything): read_input_file
  // (envlock/input_file.hpp) takes regular files only, outside /proc, /sys and /dev, bounded by
  // kMaxLockfileBytes (lockfile.hpp), the cap of every lockfile reader.
  InputFile file = read_input_file(path, kMaxLockfileBytes);
  switch (file.problem) {
    case InputFile::Problem::None: break;
    case InputFile::Problem::Open:
      return Error{ErrorKind::Io, path.string(), std::string("cannot open the lockfile: ") + std::strerror(file.error_number), "",
                   "create it with `envlock lock -f envlock.yaml`, or pass the right path with -l"};
    case InputFile::Problem::Refused:
      return Error{ErrorKind::Io, path.string(), file.message, "", "pass the project's envlock.lock, a regular file"};
    case InputFile::Problem::TooLarge:
      return Error{ErrorKind::Parse, path.string(),
                   "is larger than " + std::to_string(kMaxLockfileBytes >> 20) + " MiB, more than any lockfile; it is not read", "",
                   "check that this is the lockfile meant (a lockfile is a few MB); envlock reads at most " +
                       std::to_string(kMaxLockfileBytes >> 20) + " MiB of one lockfile"};
    case InputFile::Problem::Read:
      return Error{ErrorKind::Io, path.string(), std::string("cannot read the lockfile: ") + std::strerror(file.error_number), "", ""};
  }
  if (!starts_like_yaml_map(file.text)) return input_not_yaml_map(path.string(), "an envlock.lock");
  std::error_code ec;
  return parse(file.text, path.string(), std::filesystem::absolute(path, ec).parent_path());
}

// Whether a record's URL names the archive the record says it is (envlock/record_url.hpp): here,
// beside the envlock.lock reader, its first user; the other readers link this module.

std::optional<std::string> encoded_path_segment(std::string_view url) {
  const auto scheme_end = url.find("://");
  std::size_t path_start = 0;
  if (scheme_end != std::string_view::npos) {
    path_start = url.find('/', scheme_end + 3);
    if (path_start == std::string_view::npos) return std::nullopt;
  }
  const std::size_t path_end = std::min(url.find_first_of("?#", path_start), url.size());
  for (std::size_t pos = path_start; pos < path_end;) {
    const std::size_t end = std::min(url.find('/', pos), path_end);
    const std::string_view segment = url.substr(pos, end - pos);
    pos = end + 1;
    if (segment.find('%') == std::string_view::npos) continue;
    const std::string decoded = percent_decode(segment);
    if (decoded.find_first_of("/\\") != std::string::npos || decoded == "." || decoded == "..")
      return std::string(segment);
  }
  return std::nullopt;
}

std::string url_file_name(std::string_view url) {
  std::string_view path = url.substr(0, url.find_first_of("?#"));
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return percent_decode(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::optional<RecordFileMismatch> record_file_mismatch(const PackageRecord& record, std::string_view file_name) {
  const auto archive = parse_archive_name(file_name);
  if (!archive) return std::nullopt;
  if (ascii_lower(archive->name) != ascii_lower(record.name)) return RecordFileMismatch{"name", record.name, archive->name};
  if (auto v = Version::parse(archive->version); !v || !(*v == record.version))
    return RecordFileMismatch{"version", record.version.to_string(), archive->version};
  if (archive->build != record.build) return RecordFileMismatch{"build", record.build, archive->build};
  return std::nullopt;
}

}  // namespace envlock
