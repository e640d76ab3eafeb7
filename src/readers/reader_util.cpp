// Shared helpers of the lockfile readers (see reader_util.hpp).
#include "reader_util.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "envlock/pypi_name.hpp"
#include "envlock/record_url.hpp"
#include "envlock/url.hpp"
#include "yaml_source.hpp"

namespace envlock::readers {

std::string where(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string where(const std::string& source, const YamlNode& node) {
  if (node.line() <= 0) return source;
  return source + ":" + std::to_string(node.line()) + ":" + std::to_string(node.column());
}

Error error_at(const std::string& source, const YamlNode& node, const std::string& message,
               const std::string& hint) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = where(source, node);
  e.message = message;
  e.hint = hint;
  return e;
}

Result<block_yaml::Document> load_yaml(const std::string& text, const std::string& source) {
  if (auto fast = block_yaml::parse_block_yaml(text)) return std::move(*fast);
  if (auto st = yaml::check_alias_expansion(text, source); !st) return st.error();
  try {
    return block_yaml::from_yaml_cpp(YAML::Load(text));
  } catch (const YAML::Exception& ex) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = where(source, ex.mark);
    e.message = "YAML syntax error: " + ex.msg;
    e.hint = "the file is not valid YAML (truncated or hand-edited?); restore it from version "
             "control or regenerate it with the tool that wrote it";
    return e;
  }
}

std::optional<long long> as_integer(const YamlNode& node) {
  if (!node.IsScalar()) return std::nullopt;
  std::string_view t = node.Scalar();
  const bool negative = !t.empty() && t.front() == '-';
  if (!t.empty() && (t.front() == '-' || t.front() == '+')) t.remove_prefix(1);
  if (t.empty() || t.size() > 18 || !std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  long long v = 0;
  for (char c : t) v = v * 10 + (c - '0');
  return negative ? -v : v;
}

Result<std::optional<std::string>> get_string(const std::string& source, const YamlNode& map,
                                              const char* key) {
  YamlNode v = map[key];
  if (!v || v.IsNull()) return std::optional<std::string>{};
  if (!v.IsScalar()) {
    return error_at(source, v, std::string("`") + key + "` must be a single value, found a " +
                                   (v.IsMap() ? "map" : "list"));
  }
  return std::optional<std::string>{std::string(v.Scalar())};
}

Result<std::optional<std::uint64_t>> get_uint(const std::string& source, const YamlNode& map,
                                              const char* key) {
  auto s = get_string(source, map, key);
  if (!s) return s.error();
  if (!*s) return std::optional<std::uint64_t>{};
  const std::string& t = **s;
  if (t.empty() || t.size() > 19 ||
      !std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return error_at(source, map[key],
                    std::string("`") + key + "` must be a non-negative integer, found '" + t + "'");
  }
  return std::optional<std::uint64_t>{std::stoull(t)};
}

Status read_version(const std::string& source, const YamlNode& entry, const std::string& text,
                    const std::string& label, LockedPackage& pkg) {
  if (text.empty()) return ok_status();
  auto v = Version::parse(text);
  if (!v) {
    return error_at(source, entry["version"],
                    label + "'" + text + "' is not a conda version: " + v.error().message);
  }
  pkg.version = std::move(v).value();
  return ok_status();
}

Status read_record_fields(const std::string& source, const YamlNode& entry, LockedPackage& pkg) {
  for (const auto& [key, out] : {std::pair{"build", &pkg.build}, std::pair{"subdir", &pkg.subdir},
                                 std::pair{"license", &pkg.license}}) {
    auto s = get_string(source, entry, key);
    if (!s) return s.error();
    if (*s) *out = **s;
  }
  auto bn = get_uint(source, entry, "build_number");
  if (!bn) return bn.error();
  if (*bn) pkg.build_number = **bn;
  for (const auto& [key, out] : {std::pair{"size", &pkg.size}, std::pair{"timestamp", &pkg.timestamp}}) {
    auto n = get_uint(source, entry, key);
    if (!n) return n.error();
    if (*n) *out = **n;
  }
  return ok_status();
}

Result<std::vector<std::string>> get_string_list(const std::string& source, const YamlNode& map,
                                                 const char* key) {
  std::vector<std::string> out;
  YamlNode v = map[key];
  if (!v || v.IsNull()) return out;
  if (v.IsScalar()) {
    out.emplace_back(v.Scalar());
    return out;
  }
  if (!v.IsSequence()) {
    return error_at(source, v, std::string("`") + key + "` must be a list of strings");
  }
  out.reserve(v.size());
  for (YamlNode item : v.items()) {
    if (!item.IsScalar()) {
      return error_at(source, item, std::string("`") + key + "` entries must be strings");
    }
    out.emplace_back(item.Scalar());
  }
  return out;
}

Status check_unique_keys(const std::string& source, const YamlNode& map, const std::string& what) {
  if (!map.IsMap()) return ok_status();
  auto duplicate = [&](const YamlNode& key, const YamlNode& first) {
    return error_at(source, key,
                    "duplicate key '" + std::string(key.Scalar()) + "' in " + what + " (first at " +
                        where(source, first) + ")",
                    "keep one of the two entries");
  };
  if (map.size() <= 32) {  // a package entry (about 15 keys): a linear scan beats building a set
    std::vector<YamlNode> seen;
    seen.reserve(map.size());
    for (auto [k, v] : map.entries()) {
      for (const YamlNode& first : seen)
        if (first.Scalar() == k.Scalar()) return duplicate(k, first);
      seen.push_back(k);
    }
    return ok_status();
  }
  std::unordered_map<std::string_view, YamlNode> seen;
  seen.reserve(map.size());
  for (auto [k, v] : map.entries()) {
    auto [it, inserted] = seen.emplace(k.Scalar(), k);
    if (!inserted) return duplicate(k, it->second);
  }
  return ok_status();
}

Status check_unique_keys_everywhere(const std::string& source, const YamlNode& root) {
  std::vector<std::pair<YamlNode, std::string>> todo{{root, "the top level"}};
  while (!todo.empty()) {
    auto [node, what] = std::move(todo.back());
    todo.pop_back();
    if (node.IsMap()) {
      if (auto st = check_unique_keys(source, node, what); !st) return st;
      for (auto [k, v] : node.entries())
        if (v.IsMap() || v.IsSequence()) todo.emplace_back(v, "`" + std::string(k.Scalar()) + "`");
    } else if (node.IsSequence()) {
      for (YamlNode item : node.items())
        if (item.IsMap() || item.IsSequence()) todo.emplace_back(item, "an entry of " + what);
    }
  }
  return ok_status();
}

bool is_hex(std::string_view s, std::size_t len) {
  return s.size() == len &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}


namespace {
std::string dup_key(const std::string& env, const std::string& platform, const std::string& name) {
  std::string k = env;
  k += '\0';
  k += platform;
  k += '\0';
  k += name;
  return k;
}

LockedPlatform& platform_of(Lockfile& lock, const std::string& env, const std::string& key,
                            const std::string& subdir) {
  auto& e = lock.environments[env];
  e.name = env;
  auto& p = e.platforms[key];
  if (p.platform.empty()) p.platform = subdir.empty() ? key : subdir;
  return p;
}

Error duplicate_error(const std::string& name, const std::string& env, const std::string& platform,
                      const std::string& place, const std::string& first_place,
                      const std::string& url, const std::string& first_url) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = place;
  e.message = "duplicated package '" + name + "' for environment '" + env + "', platform '" +
              platform + "' (first listed at " + first_place + ")";
  e.detail = "  first:  " + redact_url(first_url) + "\n  second: " + redact_url(url);
  e.hint = "a lockfile pins one record per package name; remove one entry or regenerate the "
           "lockfile";
  return e;
}
}  // namespace

namespace {
std::set<std::string> split_layers(const std::string& s) {
  std::set<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.insert(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// A second listing may only add categories that were not listed before: the same category
// twice, or a format without categories, is a duplicate.
bool adds_new_layers(const std::set<std::string>& seen, const std::set<std::string>& added) {
  if (added.empty()) return false;
  return std::none_of(added.begin(), added.end(), [&](const auto& l) { return seen.contains(l); });
}

Error record_mismatch_error(const std::string& name, const std::string& env,
                            const std::string& platform, const std::string& place,
                            const std::string& first_place, const std::string& url) {
  Error e = duplicate_error(name, env, platform, place, first_place, url, url);
  e.message += ": the two entries share the URL but differ in other fields (version, build, hashes...)";
  return e;
}
}  // namespace

// conda names: letters, digits and `._+-` (conda's MatchSpec / conda-build rules); PyPI names:
// letters, digits and `._-` (PEP 508). Anything else -- white space, control characters, `|<>`,
// quotes -- would split `envlock show` lines or inject text into diff output.
Status check_name(const std::string& name, bool pypi, const std::string& place) {
  if (is_valid_package_name(name, pypi)) return ok_status();
  std::string shown;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      shown += buf;
    } else {
      shown += ch;
    }
  }
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = place;
  e.message = std::string(pypi ? "PyPI" : "conda") + " package name '" + shown + "' is not valid";
  e.hint = pypi ? "a PyPI name holds only letters, digits, '.', '_' and '-' (PEP 508)"
                : "a conda package name holds only letters, digits, '.', '_', '+' and '-'";
  return e;
}

namespace {
// A backslash in a network URL: refused (issue 17, finding 2), as no lockfile writer puts one
// there. A local path (`E:\dev\pkg`, rattler's test-data absolute-path-lock.yml) and a file://
// URL name no host and stay as they are.
Status check_url(const std::string& name, const std::string& url, const std::string& place) {
  const auto scheme_end = url.find("://");
  if (url.find('\\') == std::string::npos || scheme_end == std::string::npos ||
      ascii_lower(url.substr(0, scheme_end)) == "file")
    return ok_status();
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = place;
  e.message = "package '" + name + "': URL '" + printable(redact_url(url)) +
              "' holds a backslash, which downloaders read differently";
  e.hint = "WHATWG URL parsers, requests and urllib3 read '\\' as '/' (`https://a\\@b/` is host a), "
           "others as part of the user name; a lockfile URL never holds one: regenerate the lockfile";
  return e;
}

// A path segment of a package URL that percent-decodes to something holding '/' or '\\', or to
// '.' or '..' (encoded_path_segment, envlock/record_url.hpp): refused, as Lockfile::parse refuses
// it in an envlock.lock.
Status check_encoded_segments(const std::string& name, const std::string& url, const std::string& place) {
  const auto segment = encoded_path_segment(url);
  if (!segment) return ok_status();
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = place;
  e.message = "package '" + printable(name) + "': URL '" + printable(redact_url(url)) +
              "' has a path segment that decodes to a '/', '\\', '.' or '..' ('" + printable(*segment) + "')";
  e.hint = "servers that decode the path first serve another file than the one the URL names; a lockfile URL never "
           "encodes one: regenerate the lockfile";
  return e;
}
}  // namespace

Status check_record_matches_url(const std::string& source, const YamlNode& entry, const LockedPackage& pkg) {
  // An encoded '/', '\\' or '..' is add_package's refusal (check_encoded_segments), named as such.
  if (!check_encoded_segments(pkg.name, pkg.url, "")) return ok_status();
  // A name no installer writes is add_package's refusal (check_name), named as such.
  if (!is_valid_package_name(pkg.name, false)) return ok_status();
  const auto mismatch = record_file_mismatch(pkg, pkg.file_name);
  if (!mismatch) return ok_status();
  const char* key = mismatch->key.c_str();
  const YamlNode node = entry[key];
  return error_at(source, node ? node : entry,
                  "package '" + printable(pkg.name) + "': `" + mismatch->key + "` '" + printable(mismatch->recorded) +
                      "' disagrees with the file its URL names, " + printable(pkg.file_name) + " (" + mismatch->key +
                      " '" + printable(mismatch->in_file) + "')",
                  "an installer downloads the URL, so the entry would be shown as one package and "
                  "installed as another; regenerate the lockfile, or fix the entry or its URL");
}

Status add_package(Lockfile& lock, DuplicateIndex& index, const std::string& env,
                   const std::string& platform_key, const std::string& subdir, LockedPackage pkg,
                   const std::string& place, const std::string& identity) {
  if (auto st = check_name(pkg.name, false, place); !st) return st;
  if (auto st = check_url(pkg.name, pkg.url, place); !st) return st;
  if (auto st = check_encoded_segments(pkg.name, pkg.url, place); !st) return st;
  auto& plat = platform_of(lock, env, platform_key, subdir);
  const auto layers = split_layers(pkg.layer);
  auto [it, inserted] = index.seen.emplace(
      dup_key(env, platform_key, identity.empty() ? pkg.name : identity),
      DuplicateIndex::Seen{pkg.url, place, layers});
  if (inserted) {
    plat.packages.push_back(std::move(pkg));
    return ok_status();
  }
  auto& first = it->second;
  if (first.url != pkg.url || !adds_new_layers(first.layers, layers)) {
    return duplicate_error(pkg.name, env, platform_key, place, first.place, pkg.url, first.url);
  }
  // The same record listed under another category (conda-lock): merge the layer names.
  for (auto& existing : plat.packages) {
    if (existing.name != pkg.name || existing.url != pkg.url) continue;
    LockedPackage a = existing, b = pkg;
    a.layer.clear();
    b.layer.clear();
    if (!(a == b)) return record_mismatch_error(pkg.name, env, platform_key, place, first.place, pkg.url);
    first.layers.insert(layers.begin(), layers.end());
    std::string joined;
    for (const auto& l : first.layers) joined += (joined.empty() ? "" : ",") + l;
    existing.layer = joined;
  }
  return ok_status();
}

Status add_pip(Lockfile& lock, DuplicateIndex& index, const std::string& env,
               const std::string& platform_key, const std::string& subdir, PipPackage pkg,
               const std::string& place, const std::string& layer) {
  if (auto st = check_name(pkg.name, true, place); !st) return st;
  if (auto st = check_url(pkg.name, pkg.url, place); !st) return st;
  auto& plat = platform_of(lock, env, platform_key, subdir);
  const auto layers = split_layers(layer);
  auto [it, inserted] = index.seen.emplace(dup_key(env, platform_key, "pypi:" + pkg.name),
                                           DuplicateIndex::Seen{pkg.url, place, layers});
  if (inserted) {
    plat.pip.push_back(std::move(pkg));
    return ok_status();
  }
  auto& first = it->second;
  if (first.url != pkg.url || !adds_new_layers(first.layers, layers)) {
    return duplicate_error(pkg.name, env, platform_key, place, first.place, pkg.url, first.url);
  }
  for (const auto& existing : plat.pip) {
    if (existing.name == pkg.name && existing.url == pkg.url && !(existing == pkg)) {
      return record_mismatch_error(pkg.name, env, platform_key, place, first.place, pkg.url);
    }
  }
  first.layers.insert(layers.begin(), layers.end());
  return ok_status();
}

void sort_lockfile(Lockfile& lock) {
  for (auto& [_, env] : lock.environments) {
    for (auto& [__, plat] : env.platforms) {
      std::sort(plat.packages.begin(), plat.packages.end(),
                [](const LockedPackage& a, const LockedPackage& b) {
                  return std::tie(a.name, a.url) < std::tie(b.name, b.url);
                });
      std::sort(plat.pip.begin(), plat.pip.end(), [](const PipPackage& a, const PipPackage& b) {
        return std::tie(a.name, a.url) < std::tie(b.name, b.url);
      });
    }
  }
}

std::string spec_name(std::string_view spec) {
  std::size_t i = 0;
  while (i < spec.size() && std::isspace(static_cast<unsigned char>(spec[i]))) ++i;
  std::size_t start = i;
  while (i < spec.size()) {
    char c = spec[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '=' || c == '<' || c == '>' ||
        c == '!' || c == '~' || c == '[' || c == ';' || c == '(')
      break;
    ++i;
  }
  std::string name(spec.substr(start, i - start));
  // channel::name and channel/subdir::name
  if (auto colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  return ascii_lower(name);
}

}  // namespace envlock::readers
