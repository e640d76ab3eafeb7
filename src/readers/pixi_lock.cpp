// pixi.lock format versions 4-7 (rattler_lock):
//   version: N
//   platforms: [{name, subdir?, virtual-packages?}]                     (7 only)
//   environments: {env: {channels: [{url}], indexes?: [url], options?,
//                        packages: {platform: [{conda: url} | {pypi: url} | {conda_source: id}]}}}
//   packages: [ {kind: conda|pypi, url, ...}                             (4-5)
//             | {conda: url, ...} | {pypi: url, ...} | {conda_source: id, ...} ]  (6-7)
// Environment entries point at package entries by their key; conda entries from 5 on may leave
// out name/version/build, which then come from the URL's file name.
#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "envlock/platform.hpp"
#include "envlock/readers.hpp"
#include "envlock/url.hpp"
#include "reader_util.hpp"

namespace envlock {

using namespace readers;

namespace {

bool is_archive_url(std::string_view url) {
  std::string_view path = url.substr(0, url.find_first_of("?#"));
  return path.ends_with(".conda") || path.ends_with(".tar.bz2");
}

// The key an environment entry or a package entry is known by: "conda:<url>", "pypi:<url>",
// "conda_source:<id>"; empty when the node has none.
std::string entry_key(const YamlNode& node) {
  if (!node.IsMap()) return {};
  for (const char* k : {"conda", "pypi", "conda_source"}) {
    if (YamlNode v = node[k]; v.IsScalar()) return std::string(k) + ":" + std::string(v.Scalar());
  }
  if (YamlNode kind = node["kind"]; kind.IsScalar()) {
    for (const char* k : {"url", "path"}) {
      if (YamlNode loc = node[k]; loc.IsScalar()) return std::string(kind.Scalar()) + ":" + std::string(loc.Scalar());
    }
  }
  return {};
}

VirtualPackage parse_virtual(const std::string& text) {
  // "__glibc=2.28", "__archspec=0=x86_64", "__libc >= 32"
  VirtualPackage vp;
  std::string t = text;
  auto eq = t.find('=');
  auto sp = t.find_first_of(" <>!~");
  if (eq != std::string::npos && (sp == std::string::npos || eq < sp)) {
    vp.name = t.substr(0, eq);
    std::string rest = t.substr(eq + 1);
    auto eq2 = rest.find('=');
    vp.version = eq2 == std::string::npos ? rest : rest.substr(0, eq2);
    vp.build = eq2 == std::string::npos ? "0" : rest.substr(eq2 + 1);
  } else {
    vp.name = t.substr(0, sp);
    std::string rest = sp == std::string::npos ? std::string() : t.substr(sp);
    rest.erase(std::remove_if(rest.begin(), rest.end(),
                              [](unsigned char c) { return std::isspace(c) || c == '>' || c == '<' || c == '='; }),
               rest.end());
    vp.version = rest;
    vp.build = "0";
  }
  return vp;
}

bool valid_platform_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

Result<LockedPackage> read_conda_entry(const std::string& source, const YamlNode& entry,
                                       const std::string& key) {
  LockedPackage pkg;
  const std::string label_url = key.substr(key.find(':') + 1);
  const bool source_pkg = key.starts_with("conda_source:") || !is_archive_url(label_url);
  pkg.url = entry["url"].IsScalar() ? std::string(entry["url"].Scalar()) : label_url;
  if (key.starts_with("conda_source:")) {
    // "minimal-project[ac2e8eb3] @ ../minimal-project"
    std::string id = label_url;
    pkg.name = id.substr(0, id.find_first_of("[ @"));
  }
  auto name = get_string(source, entry, "name");
  if (!name) return name.error();
  if (*name) pkg.name = **name;
  auto version = get_string(source, entry, "version");
  if (!version) return version.error();
  if (auto st = read_version(source, entry, version->value_or(""), "", pkg); !st) return st.error();
  if (auto st = read_record_fields(source, entry, pkg); !st) return st.error();
  auto channel = get_string(source, entry, "channel");
  if (!channel) return channel.error();
  pkg.channel = channel->value_or("");
  for (const auto& [field, len, out] :
       {std::tuple{"sha256", std::size_t{64}, &pkg.sha256}, std::tuple{"md5", std::size_t{32}, &pkg.md5}}) {
    auto h = get_string(source, entry, field);
    if (!h) return h.error();
    *out = ascii_lower(h->value_or(""));
    if (!out->empty() && !is_hex(*out, len)) {
      return error_at(source, entry[field], std::string(field) + " '" + *out + "' is not " +
                                                std::to_string(len) + " hexadecimal digits");
    }
  }
  if (!source_pkg && pkg.sha256.empty() && pkg.md5.empty()) {
    return error_at(source, entry, "package '" + label_url + "' has no hash (neither sha256 nor md5)",
                    "a locked package must carry its checksum; regenerate the lockfile");
  }
  auto family = get_string(source, entry, "license_family");
  if (!family) return family.error();
  pkg.license_family = family->value_or("");
  auto deps = get_string_list(source, entry, "depends");
  if (!deps) return deps.error();
  pkg.depends = std::move(deps).value();
  auto cons = get_string_list(source, entry, "constrains");
  if (!cons) return cons.error();
  pkg.constrains = std::move(cons).value();
  auto tf = get_string_list(source, entry, "track_features");
  if (!tf) return tf.error();
  for (const auto& t : *tf) {
    // "a b" and "a,b" strings split into features, as conda does.
    std::string cur;
    for (char c : t + " ") {
      if (c == ' ' || c == ',') {
        if (!cur.empty()) pkg.track_features.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
  }
  if (YamlNode na = entry["noarch"]; na.IsScalar()) {
    pkg.noarch = na.Scalar() == "python" ? NoArchKind::Python : NoArchKind::Generic;
  }
  if (auto st = complete_record_from_url(pkg, where(source, entry)); !st) return st.error();
  if (auto st = check_record_matches_url(source, entry, pkg); !st) return st.error();
  return pkg;
}

Result<PipPackage> read_pypi_entry(const std::string& source, const YamlNode& entry,
                                   const std::string& key) {
  PipPackage pip;
  auto name = get_string(source, entry, "name");
  if (!name) return name.error();
  if (!*name || (*name)->empty()) return error_at(source, entry, "pypi package without a `name`");
  pip.name = ascii_lower(**name);
  auto version = get_string(source, entry, "version");
  if (!version) return version.error();
  pip.version = version->value_or("");
  pip.url = redact_url(entry["url"].IsScalar() ? std::string(entry["url"].Scalar()) : key.substr(key.find(':') + 1));
  auto sha = get_string(source, entry, "sha256");
  if (!sha) return sha.error();
  pip.sha256 = ascii_lower(sha->value_or(""));
  if (pip.sha256.empty()) {
    auto pos = pip.url.find("#sha256=");
    if (pos != std::string::npos) pip.sha256 = ascii_lower(pip.url.substr(pos + 8));
  }
  auto requires_dist = get_string_list(source, entry, "requires_dist");
  if (!requires_dist) return requires_dist.error();
  pip.requires_dist = std::move(requires_dist).value();
  auto requires_python = get_string(source, entry, "requires_python");
  if (!requires_python) return requires_python.error();
  pip.requires_python = requires_python->value_or("");
  if (YamlNode ed = entry["editable"]; ed.IsScalar()) pip.editable = ed.Scalar() == "true";
  return pip;
}

}  // namespace

Result<Lockfile> read_pixi_lock(const std::string& text, const std::string& source) {
  auto doc = load_yaml(text, source);
  if (!doc) return doc.error();
  const YamlNode root = doc->root();
  if (auto st = check_unique_keys(source, root, "the top level"); !st) return st.error();
  YamlNode vnode = root["version"];
  int version = 0;
  if (vnode) {
    const auto v = as_integer(vnode);
    if (!v) return error_at(source, vnode, "pixi.lock `version` must be an integer");
    version = static_cast<int>(std::clamp<long long>(*v, -1, 1000));
  }
  if (version < 4 || version > 7) {
    return error_at(source, vnode ? vnode : root,
                    "pixi.lock format version " + std::to_string(version) +
                        (version > 7 ? " is newer than this envlock reads (1-7)"
                                     : " is not read by the pixi.lock 4-7 reader"),
                    "upgrade envlock, or regenerate the lockfile with a pixi version that writes "
                    "format 7 or older");
  }

  // Platforms (7): name -> subdir, virtual packages.
  struct PlatformDef {
    std::string subdir;
    std::vector<VirtualPackage> virtual_packages;
  };
  std::map<std::string, PlatformDef> platforms;
  const bool named_platforms = version >= 7;
  if (named_platforms) {
    YamlNode plist = root["platforms"];
    if (plist && !plist.IsSequence() && !plist.IsNull()) {
      return error_at(source, plist, "`platforms` must be a list");
    }
    if (plist && plist.IsSequence()) {
      std::map<std::string, YamlNode> seen;
      for (YamlNode p : plist.items()) {
        auto name = get_string(source, p, "name");
        if (!name) return name.error();
        if (!*name) return error_at(source, p, "platform entry without a `name`");
        if (!valid_platform_name(**name)) {
          return error_at(source, p["name"], "invalid platform name '" + **name + "'",
                          "platform names use letters, digits, '-', '_' and '.'");
        }
        if (auto [it, inserted] = seen.emplace(**name, p); !inserted) {
          return error_at(source, p, "platform '" + **name + "' is defined twice (first at " +
                                         where(source, it->second) + ")");
        }
        auto subdir = get_string(source, p, "subdir");
        if (!subdir) return subdir.error();
        PlatformDef def;
        def.subdir = subdir->value_or(**name);
        if (auto pp = Platform::parse(def.subdir); !pp) {
          return error_at(source, p["subdir"] ? p["subdir"] : p["name"],
                          "unknown platform subdir '" + def.subdir + "'",
                          "use a conda subdir such as linux-64, osx-arm64 or win-64");
        }
        auto vps = get_string_list(source, p, "virtual-packages");
        if (!vps) return vps.error();
        for (const auto& v : *vps) def.virtual_packages.push_back(parse_virtual(v));
        platforms[**name] = std::move(def);
      }
    }
  }

  // Package entries by key.
  std::unordered_map<std::string, std::vector<YamlNode>> entries;
  YamlNode plist = root["packages"];
  if (!plist) {
    // pixi writes the list last, `packages: []` when empty: a file without it was cut short.
    return error_at(source, root, "pixi.lock without a top-level `packages` list: the file is incomplete (truncated?)",
                    "restore it from version control or regenerate it with `pixi lock`");
  }
  if (!plist.IsSequence() && !plist.IsNull()) {
    return error_at(source, plist, "`packages` must be a list of package entries");
  }
  if (plist && plist.IsSequence()) {
    entries.reserve(plist.size());
    for (YamlNode e : plist.items()) {
      std::string key = entry_key(e);
      if (key.empty()) {
        return error_at(source, e,
                        "package entry without `conda:`, `pypi:` or `kind:` + `url:`",
                        "every package entry names its URL; regenerate the lockfile");
      }
      entries[key].push_back(e);
    }
  }

  YamlNode envs = root["environments"];
  if (!envs || !envs.IsMap()) {
    return error_at(source, envs ? envs : root, "`environments` must be a map of environments");
  }
  if (auto st = check_unique_keys(source, envs, "`environments`"); !st) return st.error();
  Lockfile lock;
  DuplicateIndex index;
  for (auto [env_key, env] : envs.entries()) {
    const std::string env_name(env_key.Scalar());
    auto& out_env = lock.environments[env_name];
    out_env.name = env_name;
    std::vector<std::string> channels;
    if (YamlNode ch = env["channels"]; ch.IsSequence()) {
      for (YamlNode c : ch.items()) {
        if (c.IsMap() && c["url"].IsScalar()) channels.push_back(redact_url(std::string(c["url"].Scalar())));
        else if (c.IsScalar()) channels.push_back(redact_url(std::string(c.Scalar())));
      }
    }
    // `indexes: [URL, ...]` (rattler_lock's PypiIndexes, written when the environment has pypi
    // packages): compared by diff, as channels are.
    std::vector<std::string> indexes;
    if (YamlNode ix = env["indexes"]; ix.IsSequence()) {
      for (YamlNode i : ix.items())
        if (i.IsScalar()) indexes.push_back(redact_url(std::string(i.Scalar())));
    }
    YamlNode pkgs = env["packages"];
    if (pkgs && !pkgs.IsMap() && !pkgs.IsNull()) {
      return error_at(source, pkgs, "environment '" + env_name + "': `packages` must be a map of platforms");
    }
    if (auto st = check_unique_keys(source, pkgs, "environment '" + env_name + "' packages"); !st) {
      return st.error();
    }
    if (!pkgs || pkgs.IsNull()) continue;
    for (auto [plat_key, plat_list] : pkgs.entries()) {
      const std::string plat_name(plat_key.Scalar());
      std::string subdir = plat_name;
      std::vector<VirtualPackage> vps;
      if (named_platforms) {
        auto it = platforms.find(plat_name);
        if (it == platforms.end()) {
          return error_at(source, plat_key,
                          "environment '" + env_name + "' uses platform '" + plat_name +
                              "', which the `platforms` list does not define",
                          "add it to `platforms` or regenerate the lockfile");
        }
        subdir = it->second.subdir;
        vps = it->second.virtual_packages;
      }
      auto& plat = out_env.platforms[plat_name];
      plat.platform = subdir;
      plat.channels = channels;
      plat.pypi_indexes = indexes;
      plat.virtual_packages = vps;
      if (!plat_list.IsSequence()) {
        if (plat_list.IsNull()) continue;
        return error_at(source, plat_list, "the package list of '" + plat_name + "' must be a list");
      }
      for (YamlNode ref : plat_list.items()) {
        const std::string key = entry_key(ref);
        const std::string place = where(source, ref);
        if (key.empty()) {
          return error_at(source, ref, "environment entry without `conda:` or `pypi:`");
        }
        auto it = entries.find(key);
        if (it == entries.end()) {
          return error_at(source, ref,
                          "environment '" + env_name + "' refers to '" + key.substr(key.find(':') + 1) +
                              "', which has no entry in `packages`",
                          "the lockfile is incomplete; regenerate it");
        }
        // A key shared by several entries (rare) is disambiguated by name or subdir.
        const YamlNode* chosen = &it->second.front();
        if (it->second.size() > 1) {
          const std::string_view want_name = ref["name"].Scalar();
          for (const auto& cand : it->second) {
            if (!want_name.empty() && cand["name"].Scalar() == want_name) chosen = &cand;
            else if (want_name.empty() && cand["subdir"].Scalar() == subdir) chosen = &cand;
          }
        }
        if (key.starts_with("pypi:")) {
          auto pip = read_pypi_entry(source, *chosen, key);
          if (!pip) return pip.error();
          if (auto st = add_pip(lock, index, env_name, plat_name, subdir, std::move(pip).value(), place); !st) {
            return st.error();
          }
        } else {
          auto pkg = read_conda_entry(source, *chosen, key);
          if (!pkg) return pkg.error();
          pkg->layer = env_name;
          // Source packages (built from a path or git) may share a name across variants.
          const bool source_pkg = key.starts_with("conda_source:") || !is_archive_url(key.substr(6));
          // A path may hold several packages (rattler's v6 test data): the name is part of it.
          const std::string identity = source_pkg ? key + '\0' + pkg->name : std::string();
          if (auto st = add_package(lock, index, env_name, plat_name, subdir, std::move(pkg).value(), place,
                                    identity);
              !st) {
            return st.error();
          }
        }
      }
    }
  }
  // Last, so that the checks above name their maps as before; any other map is checked here.
  if (auto st = check_unique_keys_everywhere(source, root); !st) return st.error();
  sort_lockfile(lock);
  return lock;
}

}  // namespace envlock
