// Lockfile::parse / read — envlock.lock (YAML, format version 1) read with yaml-cpp and validated:
// every error names file:line:col and shows the offending line.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <locale>
#include <set>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "block_yaml.hpp"
#include "envlock/url.hpp"
#include "yaml_source.hpp"

namespace envlock {
namespace {

using block_yaml::kind_name;
using Node = block_yaml::Node;

class Reader {
 public:
  Reader(const yaml::Source& src, std::string_view text) : src_(src), text_(text) {}
  Result<Lockfile> read();

 private:
  Error at(const Node& n, const std::string& message, const std::string& hint = {}) const {
    return src_.error_at(n.Mark(), message, hint);
  }
  /// Checks that `map` has no key twice (as yaml::check_unique_keys).
  Status check_unique_keys(const Node& map) const {
    const auto& e = map.entries;
    std::set<std::string_view> seen;  // only for large maps; small ones compare pairwise
    for (std::size_t i = 0; i < e.size(); ++i) {
      const Node& key = e[i].first;
      if (!key.IsScalar()) return at(key, "a key must be a plain string, found " + kind_name(key));
      bool dup = false;
      if (e.size() <= 32) {
        for (std::size_t j = 0; j < i && !dup; ++j) dup = e[j].first.IsScalar() && e[j].first.Scalar() == key.Scalar();
      } else {
        dup = !seen.insert(key.Scalar()).second;
      }
      if (dup) return at(key, "duplicate key '" + key.Scalar() + "'", "remove one of the two entries");
    }
    return ok_status();
  }
  Result<std::string> str(const Node& n, const std::string& what) const {
    if (!n.IsScalar()) return at(n, what + " must be a string, found " + kind_name(n));
    return n.Scalar();
  }
  Result<std::uint64_t> uint(const Node& n, const std::string& what) const {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      std::uint64_t v = 0;
      bool ok = !s.empty() && s.size() <= 20 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
      for (char c : s) {
        if (!ok) break;
        if (v > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(c - '0')) / 10) ok = false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (ok) return v;
    }
    return at(n, what + " must be a non-negative integer, found " + kind_name(n));
  }
  Result<double> real(const Node& n, const std::string& what) const {
    if (n.IsScalar()) {
      // YAML 1.2 core schema floats, as yaml-cpp's as<double>() reads them.
      const std::string& s = n.Scalar();
      if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf") return std::numeric_limits<double>::infinity();
      if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
      if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
      std::istringstream in(s);
      in.imbue(std::locale::classic());
      double v = 0;
      if (in >> v && (in >> std::ws).eof()) return v;
    }
    return at(n, what + " must be a number, found " + kind_name(n));
  }
  Result<std::vector<std::string>> strings(const Node& n, const std::string& what) const {
    if (!n.IsSequence()) return at(n, what + " must be a list, found " + kind_name(n));
    std::vector<std::string> out;
    for (const auto& i : n.items) {
      auto s = str(i, "an entry of " + what);
      if (!s) return s.error();
      out.push_back(*s);
    }
    return out;
  }
  /// Checks the keys of a map: unique, each in `allowed`, and each of `required` present.
  Status keys(const Node& n, const std::string& what, std::initializer_list<std::string_view> allowed,
              std::initializer_list<std::string_view> required) const {
    if (!n.IsMap()) return at(n, what + " must be a map, found " + kind_name(n));
    if (auto st = check_unique_keys(n); !st) return st;
    for (const auto& kv : n.entries) {
      const std::string& k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return at(kv.first, "unknown key '" + k + "' in " + what, "allowed keys: " + list);
      }
    }
    for (auto r : required)
      if (!n[std::string(r)])
        return at(n, what + " has no `" + std::string(r) + "`",
                             "the lockfile is incomplete; re-create it with `envlock lock`");
    return ok_status();
  }
  Status hex(const Node& n, const std::string& what, std::size_t len, std::string& out) const {
    auto s = str(n, what);
    if (!s) return s.error();
    bool ok = s->size() == len && std::all_of(s->begin(), s->end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (!ok)
      return at(n, what + " must be " + std::to_string(len) + " lower-case hex digits, found '" + *s + "'");
    out = *s;
    return ok_status();
  }
  Status url(const Node& n, const std::string& what, std::string& out) const {
    auto s = str(n, what);
    if (!s) return s.error();
    if (url_has_credentials(*s)) return credentials_error(n, what, *s);
    out = *s;
    return ok_status();
  }

  /// The error for a URL with credentials; the line shown has them redacted too.
  Error credentials_error(const Node& n, const std::string& what, const std::string& raw) const {
    Error e = at(n, what + " carries credentials",
                            "lockfiles must be credential-free; re-create it with `envlock lock`");
    const std::string clean = redact_url(raw);
    for (std::size_t at = e.detail.find(raw); at != std::string::npos; at = e.detail.find(raw, at + clean.size()))
      e.detail.replace(at, raw.size(), clean);
    return e;
  }

  Result<LockedPackage> package(const Node& n, const std::string& where);
  Result<PipPackage> pip(const Node& n);
  Result<LockedPlatform> platform(const std::string& name, const Node& n);
  Result<LockedEnvironment> environment(const std::string& name, const Node& n);

  const yaml::Source& src_;
  std::string_view text_;
};

Result<LockedPackage> Reader::package(const Node& n, const std::string& where) {
  if (auto st = keys(n, "a package of " + where,
                     {"name", "version", "build", "build_number", "subdir", "noarch", "channel", "url", "file_name",
                      "sha256", "md5", "size", "depends", "constrains", "license", "license_family", "timestamp",
                      "track_features", "features", "python_site_packages_path", "arch", "platform", "layer"},
                     {"name", "version", "build", "build_number", "subdir", "channel", "url", "layer"});
      !st)
    return st.error();
  LockedPackage p;
  auto name = str(n["name"], "name");
  if (!name) return name.error();
  p.name = *name;
  if (p.name.empty()) return at(n["name"], "empty package name");
  auto v = str(n["version"], "version of " + p.name);
  if (!v) return v.error();
  auto version = Version::parse(*v);
  if (!version) {
    Error e = at(n["version"], "invalid version '" + *v + "' of " + p.name + ": " + version.error().message);
    return e;
  }
  p.version = std::move(*version);
  auto build = str(n["build"], "build of " + p.name);
  if (!build) return build.error();
  p.build = *build;
  auto bn = uint(n["build_number"], "build_number of " + p.name);
  if (!bn) return bn.error();
  p.build_number = *bn;
  auto subdir = str(n["subdir"], "subdir of " + p.name);
  if (!subdir) return subdir.error();
  p.subdir = *subdir;
  if (n["noarch"]) {
    auto na = str(n["noarch"], "noarch of " + p.name);
    if (!na) return na.error();
    if (*na == "python") p.noarch = NoArchKind::Python;
    else if (*na == "generic") p.noarch = NoArchKind::Generic;
    else return at(n["noarch"], "noarch of " + p.name + " must be python or generic, found '" + *na + "'");
  }
  if (auto st = url(n["channel"], "channel of " + p.name, p.channel); !st) return st.error();
  if (auto st = url(n["url"], "url of " + p.name, p.url); !st) return st.error();
  if (p.url.empty()) return at(n["url"], "empty url of " + p.name);
  if (n["file_name"]) {
    auto f = str(n["file_name"], "file_name of " + p.name);
    if (!f) return f.error();
    p.file_name = *f;
  } else {
    p.file_name = p.url.substr(p.url.find_last_of('/') + 1);
    if (auto hash = p.file_name.find('#'); hash != std::string::npos) p.file_name.resize(hash);
  }
  if (n["sha256"])
    if (auto st = hex(n["sha256"], "sha256 of " + p.name, 64, p.sha256); !st) return st.error();
  if (n["md5"])
    if (auto st = hex(n["md5"], "md5 of " + p.name, 32, p.md5); !st) return st.error();
  if (n["size"]) {
    auto s = uint(n["size"], "size of " + p.name);
    if (!s) return s.error();
    p.size = *s;
  }
  if (n["timestamp"]) {
    auto t = uint(n["timestamp"], "timestamp of " + p.name);
    if (!t) return t.error();
    p.timestamp = *t;
  }
  for (auto [key, field] : {std::pair{"depends", &p.depends}, std::pair{"constrains", &p.constrains},
                            std::pair{"track_features", &p.track_features}}) {
    if (!n[key]) continue;
    auto l = strings(n[key], std::string(key) + " of " + p.name);
    if (!l) return l.error();
    *field = std::move(*l);
  }
  for (auto [key, field] : {std::pair{"license", &p.license}, std::pair{"license_family", &p.license_family},
                            std::pair{"features", &p.features},
                            std::pair{"python_site_packages_path", &p.python_site_packages_path},
                            std::pair{"arch", &p.arch}, std::pair{"platform", &p.platform},
                            std::pair{"layer", &p.layer}}) {
    if (!n[key]) continue;
    auto s = str(n[key], std::string(key) + " of " + p.name);
    if (!s) return s.error();
    *field = *s;
  }
  if (p.layer.empty()) return at(n["layer"], "empty layer of " + p.name, "a layer names the environment whose solve introduced the package");
  return p;
}

Result<PipPackage> Reader::pip(const Node& n) {
  if (auto st = keys(n, "a pip entry", {"name", "version", "url", "sha256", "requirement"}, {"name"}); !st)
    return st.error();
  PipPackage p;
  for (auto [key, field] : {std::pair{"name", &p.name}, std::pair{"version", &p.version},
                            std::pair{"requirement", &p.requirement}}) {
    if (!n[key]) continue;
    auto s = str(n[key], std::string("pip ") + key);
    if (!s) return s.error();
    *field = *s;
  }
  if (n["url"])
    if (auto st = url(n["url"], "pip url", p.url); !st) return st.error();
  if (n["sha256"])
    if (auto st = hex(n["sha256"], "pip sha256", 64, p.sha256); !st) return st.error();
  if (p.name.empty() && p.requirement.empty())
    return at(n, "a pip entry needs a name or a requirement");
  return p;
}

Result<LockedPlatform> Reader::platform(const std::string& name, const Node& n) {
  const std::string where = "platform " + name;
  if (auto st = keys(n, where, {"channels", "virtual_packages", "packages", "pip"}, {"channels", "packages"}); !st)
    return st.error();
  LockedPlatform lp;
  lp.platform = name;
  auto channels = strings(n["channels"], "channels of " + where);
  if (!channels) return channels.error();
  std::size_t i = 0;
  for (const auto& c : *channels) {
    if (url_has_credentials(c)) return credentials_error(n["channels"].items[i], "a channel of " + where, c);
    ++i;
  }
  lp.channels = std::move(*channels);
  if (n["virtual_packages"]) {
    const Node& vps = n["virtual_packages"];
    if (!vps.IsSequence()) return at(vps, "virtual_packages of " + where + " must be a list, found " + kind_name(vps));
    for (const auto& item : vps.items) {
      auto s = str(item, "a virtual package");
      if (!s) return s.error();
      auto vp = VirtualPackage::parse(*s);
      if (!vp) return at(item, vp.error().message, vp.error().hint);
      lp.virtual_packages.push_back(std::move(*vp));
    }
  }
  const Node& pkgs = n["packages"];
  if (!pkgs.IsSequence()) return at(pkgs, "packages of " + where + " must be a list, found " + kind_name(pkgs));
  std::set<std::string> names;
  for (const auto& item : pkgs.items) {
    auto p = package(item, where);
    if (!p) return p.error();
    if (!names.insert(p->name).second)
      return at(item, "package '" + p->name + "' is locked twice for " + where,
                           "a platform locks one record per name; re-create the lockfile with `envlock lock`");
    lp.packages.push_back(std::move(*p));
  }
  std::sort(lp.packages.begin(), lp.packages.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (n["pip"]) {
    const Node& pips = n["pip"];
    if (!pips.IsSequence()) return at(pips, "pip of " + where + " must be a list, found " + kind_name(pips));
    for (const auto& item : pips.items) {
      auto p = pip(item);
      if (!p) return p.error();
      lp.pip.push_back(std::move(*p));
    }
  }
  return lp;
}

Result<LockedEnvironment> Reader::environment(const std::string& name, const Node& n) {
  const std::string where = "environment " + name;
  if (auto st = keys(n, where, {"base", "requested", "reference", "platforms"}, {"platforms"}); !st) return st.error();
  LockedEnvironment env;
  env.name = name;
  if (n["base"]) {
    auto b = str(n["base"], "base of " + where);
    if (!b) return b.error();
    env.base = *b;
  }
  if (n["requested"]) {
    auto r = strings(n["requested"], "requested of " + where);
    if (!r) return r.error();
    env.requested = std::move(*r);
  }
  if (n["reference"]) {
    const Node& r = n["reference"];
    if (auto st = keys(r, "reference of " + where, {"command", "metric", "tolerance", "recorded_value", "recorded_host"},
                       {"command", "metric"});
        !st)
      return st.error();
    ReferenceRun run;
    auto c = str(r["command"], "reference command");
    if (!c) return c.error();
    run.command = *c;
    auto m = str(r["metric"], "reference metric");
    if (!m) return m.error();
    run.metric = *m;
    if (r["tolerance"]) {
      auto t = real(r["tolerance"], "reference tolerance");
      if (!t) return t.error();
      run.tolerance = *t;
    }
    if (r["recorded_value"]) {
      auto v = real(r["recorded_value"], "reference recorded_value");
      if (!v) return v.error();
      run.recorded_value = *v;
    }
    if (r["recorded_host"]) {
      const Node& h = r["recorded_host"];
      if (!h.IsMap()) return at(h, "recorded_host must be a map, found " + kind_name(h));
      if (auto st = check_unique_keys(h); !st) return st.error();
      for (const auto& kv : h.entries) {
        auto v = str(kv.second, "recorded_host." + kv.first.Scalar());
        if (!v) return v.error();
        run.recorded_host[kv.first.Scalar()] = *v;
      }
    }
    env.reference = std::move(run);
  }
  const Node& platforms = n["platforms"];
  if (!platforms.IsMap()) return at(platforms, "platforms of " + where + " must be a map, found " + kind_name(platforms));
  if (auto st = check_unique_keys(platforms); !st) return st.error();
  for (const auto& kv : platforms.entries) {
    auto lp = platform(kv.first.Scalar(), kv.second);
    if (!lp) return lp.error();
    env.platforms.emplace(kv.first.Scalar(), std::move(*lp));
  }
  return env;
}

Result<Lockfile> Reader::read() {
  // envlock's own block subset in one pass; anything else through yaml-cpp.
  Node root;
  if (auto fast = block_yaml::parse_block_yaml(text_)) {
    root = std::move(*fast);
  } else {
    auto loaded = src_.load();
    if (!loaded) return loaded.error();
    root = block_yaml::from_yaml_cpp(*loaded);
  }
  if (!root.IsMap())
    return Error{ErrorKind::Parse, src_.where(root.Mark()), "not an envlock lockfile: expected a YAML map with `version: 1`, found " + kind_name(root),
                 "", "create one with `envlock lock`"};
  // The version first: a newer format is refused by name, whatever else it contains.
  if (!root["version"])
    return at(root, "not an envlock lockfile: no `version`", "envlock lockfiles start with `version: 1`");
  auto v = uint(root["version"], "version");
  if (!v) return v.error();
  if (*v > static_cast<std::uint64_t>(Lockfile::kFormatVersion))
    return at(root["version"],
                         "lockfile format version " + std::to_string(*v) + " is newer than this envlock reads (version " +
                             std::to_string(Lockfile::kFormatVersion) + ")",
                         "upgrade envlock to read it; the file is left as it is");
  if (*v < 1) return at(root["version"], "lockfile format version " + std::to_string(*v) + " does not exist");
  if (auto st = keys(root, "the lockfile", {"version", "manifest_hash", "environments"}, {"version", "environments"}); !st)
    return st.error();
  Lockfile lf;
  lf.version = static_cast<int>(*v);
  if (root["manifest_hash"]) {
    auto h = str(root["manifest_hash"], "manifest_hash");
    if (!h) return h.error();
    lf.manifest_hash = *h;
  }
  const Node& envs = root["environments"];
  if (!envs.IsMap()) return at(envs, "environments must be a map, found " + kind_name(envs));
  if (auto st = check_unique_keys(envs); !st) return st.error();
  for (const auto& kv : envs.entries) {
    auto env = environment(kv.first.Scalar(), kv.second);
    if (!env) return env.error();
    lf.environments.emplace(kv.first.Scalar(), std::move(*env));
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

/// Resolves the relative channels and package URLs of `lf` against `directory` (none when empty)
/// and lists the channels in relative_channels.
void resolve_relative_channels(Lockfile& lf, const std::filesystem::path& directory) {
  std::set<std::string> channels;
  auto resolve = [&](std::string& s, bool is_channel) {
    if (!is_relative_reference(s)) return;
    if (!directory.empty()) {
      std::string p = (directory / s).lexically_normal().string();
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      s = "file://" + p;
    }
    if (is_channel) channels.insert(s);
  };
  for (auto& [env_name, env] : lf.environments) {
    for (auto& [platform, lp] : env.platforms) {
      for (auto& c : lp.channels) resolve(c, true);
      for (auto& p : lp.packages) {
        resolve(p.channel, true);
        resolve(p.url, false);
      }
    }
  }
  lf.relative_channels.assign(channels.begin(), channels.end());
}

}  // namespace

Result<Lockfile> Lockfile::parse(const std::string& text, const std::string& source,
                                 const std::filesystem::path& directory) {
  yaml::Source src(text, source);
  auto lf = Reader(src, text).read();
  if (lf) resolve_relative_channels(*lf, directory);
  return lf;
}

Result<Lockfile> Lockfile::read(const std::filesystem::path& path) {
  if (std::error_code dir_ec; std::filesystem::is_directory(path, dir_ec))
    return Error{ErrorKind::Io, path.string(), "is a directory, not a lockfile", "",
                 "pass the lockfile itself, e.g. " + (path / "envlock.lock").string()};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{ErrorKind::Io, path.string(), std::string("cannot open the lockfile: ") + std::strerror(errno), "",
                 "create it with `envlock lock -f envlock.yaml`, or pass the right path with -l"};
  constexpr std::uintmax_t kMaxLockfileBytes = 512u << 20;  // untrusted input: bounded
  std::error_code ec;
  if (auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxLockfileBytes)
    return Error{ErrorKind::Parse, path.string(),
                 "the lockfile is " + std::to_string(size) + " bytes; envlock reads lockfiles up to 512 MiB", "",
                 "is this the right file?"};
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Error{ErrorKind::Io, path.string(), "cannot read the lockfile", "", ""};
  return parse(buf.str(), path.string(), std::filesystem::absolute(path, ec).parent_path());
}

}  // namespace envlock
