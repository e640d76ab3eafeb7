// Lockfile::to_yaml — envlock's own emitter, so the bytes are fixed by this file alone:
// fixed key order, sorted environments/platforms/packages, block style, 2-space indent, and
// quoting that keeps every string a string under YAML 1.1 and 1.2 readers (PyYAML, yaml-cpp,
// ruamel): versions such as 1.10 or 2 are always quoted.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "envlock/lockfile.hpp"
#include "envlock/paths.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

bool is_reserved_word(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* const kWords[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"};
  return std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return l == w; });
}

bool plain_safe(std::string_view s) {
  if (s.empty() || is_reserved_word(s)) return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(first) || first == '_' || first == '/')) return false;  // no digits: never a number
  if (s.back() == ' ' || s.back() == ':') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_.+-/=<>!*,:@%~?&#| ").find(c) != std::string_view::npos;
    if (!ok) return false;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return false;  // "a: b" would be a map
    if (c == '#' && i > 0 && s[i - 1] == ' ') return false;             // " #" starts a comment
  }
  return true;
}

/// A YAML scalar for `s`: plain when unambiguous, else double-quoted with escapes.
std::string q(std::string_view s) {
  if (plain_safe(s)) return std::string(s);
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos && s.find("inf") == std::string::npos &&
      s.find("nan") == std::string::npos)
    s += ".0";  // keep it a float for YAML readers
  return s;
}

class Out {
 public:
  void kv(int indent, std::string_view key, std::string_view value) { line(indent, std::string(key) + ": " + std::string(value)); }
  void key(int indent, std::string_view k) { line(indent, std::string(k) + ":"); }
  void list(int indent, std::string_view k, const std::vector<std::string>& items) {
    if (items.empty()) {
      kv(indent, k, "[]");
      return;
    }
    key(indent, k);
    for (const auto& i : items) line(indent + 2, "- " + q(i));
  }
  void line(int indent, const std::string& text) {
    text_.append(static_cast<std::size_t>(indent), ' ');
    text_ += text;
    text_ += '\n';
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

/// Spells the relative channels of a lockfile (and the URLs under them) relative to the directory
/// the file is written to, and every other `file://` channel or URL under the home folder as
/// `~/…` (docs/lockfile.md, "Local channels"); everything else passes through unchanged.
class LocalChannels {
 public:
  LocalChannels(const std::vector<std::string>& channels, const std::filesystem::path& directory)
      : home_(home_folder()) {
    if (directory.empty()) return;
    const std::filesystem::path dir = directory.lexically_normal();
    for (const auto& url : channels) {
      const auto path = path_from_file_url(url);  // the spelling is a path, as the manifest's
      if (!path) continue;
      const std::string rel = std::filesystem::path(*path).lexically_relative(dir).string();
      if (rel.empty()) continue;
      map_.emplace_back(url, rel == "." || rel.starts_with("..") ? rel : "./" + rel);
    }
    // Longest first, so a channel nested in another is matched by its own entry.
    std::sort(map_.begin(), map_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
  [[nodiscard]] std::string channel(const std::string& c) const {
    for (const auto& [url, rel] : map_)
      if (c == url) return rel;
    return under_home(c);
  }
  [[nodiscard]] std::string url(const std::string& u) const {
    for (const auto& [url, rel] : map_)
      if (u.size() > url.size() && u.starts_with(url) && u[url.size()] == '/')
        return rel + u.substr(url.size());
    return under_home(u);
  }

 private:
  /// A `file://` URL under the home folder as `~/decoded path`, as a relative channel is
  /// spelled by its decoded path; anything else unchanged.
  [[nodiscard]] std::string under_home(const std::string& u) const {
    if (home_.empty() || !u.starts_with("file:")) return u;
    const auto path = path_from_file_url(u);
    if (!path) return u;
    const std::filesystem::path p = std::filesystem::path(*path).lexically_normal();
    return is_under(p, home_) ? tilde_path(p, home_) : u;
  }

  std::vector<std::pair<std::string, std::string>> map_;  ///< file:// URL -> relative spelling
  std::filesystem::path home_;
};

// Every `file:` URL in `text` (up to white space, `,`, `;`, `:` or `)`) as `local` spells a
// channel or URL.
std::string respelled(std::string_view text, const LocalChannels& local) {
  if (text.find("file:") == std::string_view::npos) return std::string(text);
  std::string out;
  std::size_t copied = 0;
  for (std::size_t at = text.find("file:"); at != std::string_view::npos; at = text.find("file:", at)) {
    std::size_t end = at + 5;
    while (end < text.size() && std::string_view(" \t\n,;:)").find(text[end]) == std::string_view::npos) ++end;
    const std::string url(text.substr(at, end - at));
    const std::string as_channel = local.channel(url);
    out.append(text.substr(copied, at - copied));
    out += as_channel != url ? as_channel : local.url(url);
    copied = at = end;
  }
  out.append(text.substr(copied));
  return out;
}

void emit_package(Out& o, int ind, const LockedPackage& p, const LocalChannels& local) {
  // `- name:` opens the item; the other keys align under `name`.
  o.line(ind, "- name: " + q(p.name));
  const int k = ind + 2;
  o.kv(k, "version", q(p.version.to_string()));
  o.kv(k, "build", q(p.build));
  o.kv(k, "build_number", std::to_string(p.build_number));
  o.kv(k, "subdir", q(p.subdir));
  if (p.noarch != NoArchKind::None) o.kv(k, "noarch", p.noarch == NoArchKind::Python ? "python" : "generic");
  o.kv(k, "channel", q(local.channel(redact_url(p.channel))));
  const std::string url = local.url(redact_url(p.url));
  o.kv(k, "url", q(url));
  const std::string base = url.substr(url.find_last_of('/') + 1);
  if (!p.file_name.empty() && p.file_name != base) o.kv(k, "file_name", q(p.file_name));
  if (!p.sha256.empty()) o.kv(k, "sha256", q(p.sha256));
  if (!p.md5.empty()) o.kv(k, "md5", q(p.md5));
  if (p.size) o.kv(k, "size", std::to_string(*p.size));
  o.list(k, "depends", p.depends);
  o.list(k, "constrains", p.constrains);
  if (!p.license.empty()) o.kv(k, "license", q(p.license));
  if (!p.license_family.empty()) o.kv(k, "license_family", q(p.license_family));
  if (p.timestamp) o.kv(k, "timestamp", std::to_string(*p.timestamp));
  o.list(k, "track_features", p.track_features);
  if (!p.features.empty()) o.kv(k, "features", q(p.features));
  if (!p.python_site_packages_path.empty()) o.kv(k, "python_site_packages_path", q(p.python_site_packages_path));
  if (!p.arch.empty()) o.kv(k, "arch", q(p.arch));
  if (!p.platform.empty()) o.kv(k, "platform", q(p.platform));
  o.kv(k, "layer", q(p.layer));
}

// A pip entry; a pip line that names no project (`-e .`, `--extra-index-url URL`) has no `name`
// key: it starts with its first key present. URLs, the requirement's included, credential-free.
void emit_pip(Out& o, int ind, const PipPackage& p, const LocalChannels& local) {
  std::vector<std::pair<std::string_view, std::string>> keys;
  if (!p.name.empty()) keys.emplace_back("name", q(p.name));
  if (!p.version.empty()) keys.emplace_back("version", q(p.version));
  // An editable or path source under the home folder is written `~/…`, in its URL and in its
  // requirement (`mylib @ ~/src/mylib`), and read back against the reader's home folder.
  if (!p.url.empty()) keys.emplace_back("url", q(local.url(redact_url(p.url))));
  if (!p.sha256.empty()) keys.emplace_back("sha256", q(p.sha256));
  if (!p.requirement.empty()) keys.emplace_back("requirement", q(respelled(redact_text(p.requirement), local)));
  if (p.editable) keys.emplace_back("editable", "true");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0) o.line(ind, "- " + std::string(keys[i].first) + ": " + keys[i].second);
    else o.kv(ind + 2, keys[i].first, keys[i].second);
  }
}

template <class T, class Key>
std::vector<const T*> sorted(const std::vector<T>& v, Key key) {
  std::vector<const T*> out;
  for (const auto& x : v) out.push_back(&x);
  std::stable_sort(out.begin(), out.end(), [&](const T* a, const T* b) { return key(*a) < key(*b); });
  return out;
}

}  // namespace

std::string Lockfile::written_locations(std::string_view text, const std::filesystem::path& directory) const {
  if (text.find("file:") == std::string_view::npos) return std::string(text);
  return respelled(text, LocalChannels(relative_channels, directory));
}

std::string Lockfile::to_yaml(const std::filesystem::path& directory) const {
  const LocalChannels local(relative_channels, directory);
  Out o;
  o.line(0, "# envlock.lock — written by `envlock lock`; do not edit by hand. Format: docs/lockfile.md");
  o.kv(0, "version", std::to_string(version));
  o.kv(0, "manifest_hash", q(manifest_hash));
  if (environments.empty()) {
    o.kv(0, "environments", "{}");
    return o.take();
  }
  o.key(0, "environments");
  for (const auto& [env_name, env] : environments) {
    o.key(2, q(env_name));
    if (!env.base.empty()) o.kv(4, "base", q(env.base));
    if (env.base_lockfile) {
      o.key(4, "base-lockfile");
      o.kv(6, "lockfile", q(env.base_lockfile->lockfile));
      o.kv(6, "environment", q(env.base_lockfile->environment));
      o.kv(6, "sha256", q(env.base_lockfile->sha256));
    }
    std::vector<std::string> requested = env.requested;
    std::sort(requested.begin(), requested.end());
    o.list(4, "requested", requested);
    if (env.reference) {
      const ReferenceRun& r = *env.reference;
      o.key(4, "reference");
      o.kv(6, "command", q(r.command));
      o.kv(6, "metric", q(r.metric));
      o.kv(6, "tolerance", number(r.tolerance));
      if (r.recorded_value) o.kv(6, "recorded_value", number(*r.recorded_value));
      if (!r.recorded_host.empty()) {
        o.key(6, "recorded_host");
        for (const auto& [k, v] : r.recorded_host) o.kv(8, q(k), q(v));
      }
    }
    if (env.platforms.empty()) {
      o.kv(4, "platforms", "{}");
      continue;
    }
    o.key(4, "platforms");
    for (const auto& [platform, lp] : env.platforms) {
      o.key(6, q(platform));
      std::vector<std::string> channels;
      for (const auto& c : lp.channels) channels.push_back(local.channel(redact_url(c)));
      o.list(8, "channels", channels);  // priority order: not sorted
      // The names the manifest gives mirrors, keyed by the channel as written above.
      if (std::any_of(lp.channel_names.begin(), lp.channel_names.end(), [](const std::string& n) { return !n.empty(); })) {
        o.key(8, "channel_names");
        for (std::size_t i = 0; i < channels.size() && i < lp.channel_names.size(); ++i)
          if (!lp.channel_names[i].empty()) o.kv(10, q(channels[i]), q(lp.channel_names[i]));
      }
      std::vector<std::string> vps;
      for (const auto* vp : sorted(lp.virtual_packages, [](const VirtualPackage& v) { return v.name; }))
        vps.push_back(vp->to_string());
      o.list(8, "virtual_packages", vps);
      auto pkgs = sorted(lp.packages, [](const LockedPackage& p) { return std::tie(p.name, p.subdir, p.build); });
      if (pkgs.empty()) {
        o.kv(8, "packages", "[]");
      } else {
        o.key(8, "packages");
        for (const auto* p : pkgs) emit_package(o, 10, *p, local);
      }
      if (!lp.pip.empty()) {
        o.key(8, "pip");
        for (const auto* p : sorted(lp.pip, [](const PipPackage& x) { return std::tie(x.name, x.requirement); }))
          emit_pip(o, 10, *p, local);
      }
    }
  }
  return o.take();
}

Status Lockfile::write(const std::filesystem::path& path) const {
  std::error_code ec;
  return write_file_atomic(path, to_yaml(std::filesystem::absolute(path, ec).parent_path()));
}

const LockedPlatform* Lockfile::find(std::string_view environment, std::string_view platform) const {
  auto e = environments.find(std::string(environment));
  if (e == environments.end()) return nullptr;
  auto p = e->second.platforms.find(std::string(platform));
  return p == e->second.platforms.end() ? nullptr : &p->second;
}

}  // namespace envlock
