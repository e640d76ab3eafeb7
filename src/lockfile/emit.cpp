// Lockfile::to_yaml — fixed key order, sorted environments/platforms/packages, written by the
// one YAML emitter (src/yaml/emit.hpp: block style, 2-space indent, quoting that keeps every
// string a string under YAML 1.1 and 1.2 readers, so versions such as 1.10 or 2 are quoted).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "envlock/atomic_file.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/paths.hpp"
#include "envlock/url.hpp"
#include "emit.hpp"

namespace envlock {
namespace {

using yaml::BlockWriter;

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos && s.find("inf") == std::string::npos &&
      s.find("nan") == std::string::npos)
    s += ".0";  // keep it a float for YAML readers
  return s;
}

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
  /// As url(), for a URL whose rest is percent-encoded (a pip wheel's file_url_from_path URL):
  /// the relative spelling is a path, so the rest is decoded (`./wheels/torch-2.4.1+cpu-….whl`,
  /// never `%2B`), as the reader makes it a URL again with file_url_from_path.
  [[nodiscard]] std::string path_url(const std::string& u) const {
    for (const auto& [url, rel] : map_)
      if (u.size() > url.size() && u.starts_with(url) && u[url.size()] == '/')
        return rel + percent_decode(u.substr(url.size()));
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

void emit_package(BlockWriter& w, const LockedPackage& p, const LocalChannels& local) {
  // `- name:` opens the item; the other keys align under `name`.
  w.begin_item_map();
  w.kv("name", p.name);
  w.kv("version", p.version.to_string());
  w.kv("build", p.build);
  w.kv_raw("build_number", std::to_string(p.build_number));
  w.kv("subdir", p.subdir);
  if (p.noarch != NoArchKind::None) w.kv("noarch", p.noarch == NoArchKind::Python ? "python" : "generic");
  w.kv("channel", local.channel(redact_url(p.channel)));
  const std::string url = local.url(redact_url(p.url));
  w.kv("url", url);
  const std::string base = url.substr(url.find_last_of('/') + 1);
  if (!p.file_name.empty() && p.file_name != base) w.kv("file_name", p.file_name);
  w.kv_nonempty("sha256", p.sha256);
  w.kv_nonempty("md5", p.md5);
  if (p.size) w.kv_raw("size", std::to_string(*p.size));
  w.list("depends", p.depends);
  w.list("constrains", p.constrains);
  w.kv_nonempty("license", p.license);
  w.kv_nonempty("license_family", p.license_family);
  if (p.timestamp) w.kv_raw("timestamp", std::to_string(*p.timestamp));
  w.list("track_features", p.track_features);
  w.kv_nonempty("features", p.features);
  w.kv_nonempty("python_site_packages_path", p.python_site_packages_path);
  w.kv_nonempty("arch", p.arch);
  w.kv_nonempty("platform", p.platform);
  w.kv("layer", p.layer);
  w.end_item_map();
}

// A pip entry; a pip line that names no project (`-e .`, `--extra-index-url URL`) has no `name`
// key: it starts with its first key present. URLs, the requirement's included, credential-free.
void emit_pip(BlockWriter& w, const PipPackage& p, const LocalChannels& local) {
  w.begin_item_map();
  w.kv_nonempty("name", p.name);
  w.kv_nonempty("version", p.version);
  // An editable or path source under the home folder is written `~/…`, in its URL and in its
  // requirement (`mylib @ ~/src/mylib`), and read back against the reader's home folder.
  // A wheel of a find-links folder that travels with the project is written relative to the
  // lockfile, as a local channel's package is (docs/lockfile.md, "Local channels").
  if (!p.url.empty()) w.kv("url", local.path_url(redact_url(p.url)));
  // A pinned wheel's record (docs/lockfile.md, "Keys of a pip entry"), what uv.lock and pixi.lock
  // record of a PyPI package: file name, size, index, core metadata; and what required it.
  w.kv_nonempty("file_name", p.file_name);
  w.kv_nonempty("sha256", p.sha256);
  if (p.size) w.kv_raw("size", std::to_string(*p.size));
  if (!p.index.empty()) w.kv("index", local.channel(redact_url(p.index)));
  w.kv_nonempty("requires_python", p.requires_python);
  if (!p.requires_dist.empty()) {  // a `name @ URL` of METADATA, credential-free
    std::vector<std::string> dist;
    for (const auto& r : p.requires_dist) dist.push_back(redact_text(r));
    w.list("requires_dist", dist);
  }
  if (!p.required_by.empty()) w.list("required_by", p.required_by);
  if (!p.requirement.empty()) w.kv("requirement", respelled(redact_text(p.requirement), local));
  if (p.editable) w.kv_bool("editable", true);
  w.end_item_map();
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
  BlockWriter w;
  w.comment("envlock.lock — written by `envlock lock`; do not edit by hand. Format: docs/lockfile.md");
  w.kv_raw("version", std::to_string(version));
  w.kv("manifest_hash", manifest_hash);
  w.open("environments", environments.empty(), "{}");
  for (const auto& [env_name, env] : environments) {
    w.open(env_name);
    w.kv_nonempty("base", env.base);
    if (env.base_lockfile) {
      w.open("base-lockfile");
      w.kv("lockfile", env.base_lockfile->lockfile);
      w.kv("environment", env.base_lockfile->environment);
      w.kv("sha256", env.base_lockfile->sha256);
      w.close();
    }
    std::vector<std::string> requested = env.requested;
    std::sort(requested.begin(), requested.end());
    w.list("requested", requested);
    if (env.reference) {
      const ReferenceRun& r = *env.reference;
      w.open("reference");
      w.kv("command", r.command);
      w.kv("metric", r.metric);
      w.kv_raw("tolerance", number(r.tolerance));
      if (r.recorded_value) w.kv_raw("recorded_value", number(*r.recorded_value));
      if (!r.recorded_host.empty()) {
        w.open("recorded_host");
        for (const auto& [k, v] : r.recorded_host) w.kv(k, v);
        w.close();
      }
      w.close();
    }
    w.open("platforms", env.platforms.empty(), "{}");
    for (const auto& [platform, lp] : env.platforms) {
      w.open(platform);
      std::vector<std::string> channels;
      for (const auto& c : lp.channels) channels.push_back(local.channel(redact_url(c)));
      w.list("channels", channels);  // priority order: not sorted
      // The names the manifest gives mirrors, keyed by the channel as written above.
      if (std::any_of(lp.channel_names.begin(), lp.channel_names.end(), [](const std::string& n) { return !n.empty(); })) {
        w.open("channel_names");
        for (std::size_t i = 0; i < channels.size() && i < lp.channel_names.size(); ++i)
          if (!lp.channel_names[i].empty()) w.kv(channels[i], lp.channel_names[i]);
        w.close();
      }
      std::vector<std::string> vps;
      for (const auto* vp : sorted(lp.virtual_packages, [](const VirtualPackage& v) { return v.name; }))
        vps.push_back(vp->to_string());
      w.list("virtual_packages", vps);
      // The PyPI indexes the pins were resolved against, primary first (pixi.lock's environment
      // `indexes`), written only when there are some: a lockfile without them reads as before.
      if (!lp.pypi_indexes.empty()) {
        std::vector<std::string> indexes;
        for (const auto& u : lp.pypi_indexes) indexes.push_back(local.channel(redact_url(u)));
        w.list("pypi_indexes", indexes);  // priority order: not sorted
      }
      auto pkgs = sorted(lp.packages, [](const LockedPackage& p) { return std::tie(p.name, p.subdir, p.build); });
      w.open("packages", pkgs.empty(), "[]");
      for (const auto* p : pkgs) emit_package(w, *p, local);
      w.close();
      if (!lp.pip.empty()) {
        w.open("pip");
        for (const auto* p : sorted(lp.pip, [](const PipPackage& x) { return std::tie(x.name, x.requirement); }))
          emit_pip(w, *p, local);
        w.close();
      }
      w.close();
    }
    w.close();
    w.close();
  }
  w.close();
  return w.take();
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
