// conda-lock.yml (unified format v0/v1) and pixi.lock 1-3, which share its shape:
//   metadata: {channels: [{url}], platforms: [...], content_hash, sources}
//   package:  [{name, version, manager: conda|pip, platform, dependencies, url,
//               hash: {md5, sha256}, category | categories, optional, [build, build_number,
//               subdir, size, license, license_family, constrains, timestamp, track_features]}]
// conda-lock writes `dependencies` as a map {name: spec}; pixi 1-3 as a list of MatchSpecs.
#include <algorithm>

#include "envlock/readers.hpp"
#include "envlock/url.hpp"
#include "reader_util.hpp"

namespace envlock {

using namespace readers;

namespace {

// `dependencies` / `constrains`: a map {name: spec} (conda-lock) or a list of MatchSpecs (pixi).
Result<std::vector<std::string>> read_specs(const std::string& source, const YamlNode& entry,
                                            const char* key) {
  std::vector<std::string> out;
  YamlNode deps = entry[key];
  if (!deps || deps.IsNull()) return out;
  if (deps.IsMap()) {
    out.reserve(deps.size());
    for (auto [name, spec_node] : deps.entries()) {
      std::string spec(name.Scalar());
      if (spec_node.IsScalar() && !spec_node.Scalar().empty()) {
        spec += ' ';
        spec += spec_node.Scalar();
      }
      out.push_back(std::move(spec));
    }
    return out;
  }
  return get_string_list(source, entry, key);
}

std::string sha256_from_fragment(const std::string& url) {
  auto pos = url.find("#sha256=");
  if (pos == std::string::npos) return {};
  std::string h = url.substr(pos + 8);
  return is_hex(h, 64) ? ascii_lower(h) : std::string();
}

}  // namespace

Result<Lockfile> read_conda_lock(const std::string& text, const std::string& source) {
  auto doc = load_yaml(text, source);
  if (!doc) return doc.error();
  const YamlNode root = doc->root();
  if (auto st = check_unique_keys(source, root, "the top level"); !st) return st.error();
  Lockfile lock;
  lock.version = Lockfile::kFormatVersion;

  std::vector<std::string> channels;
  YamlNode metadata = root["metadata"];
  if (metadata && metadata.IsMap()) {
    YamlNode ch = metadata["channels"];
    if (ch && ch.IsSequence()) {
      for (YamlNode c : ch.items()) {
        if (c.IsMap() && c["url"].IsScalar()) {
          channels.push_back(redact_url(std::string(c["url"].Scalar())));
        } else if (c.IsScalar()) {
          channels.push_back(redact_url(std::string(c.Scalar())));
        }
      }
    }
  }

  YamlNode packages = root["package"];
  if (!packages || (!packages.IsSequence() && !packages.IsNull())) {
    return error_at(source, packages ? packages : root,
                    "`package` must be a list of package entries",
                    "the file is damaged; regenerate it with conda-lock");
  }
  DuplicateIndex index;
  const std::string env = "default";
  if (packages.IsSequence()) {
    for (YamlNode entry : packages.items()) {
      const std::string place = where(source, entry);
      if (!entry.IsMap()) return error_at(source, entry, "a package entry must be a mapping");
      if (auto st = check_unique_keys(source, entry, "a package entry"); !st) return st.error();
      auto name = get_string(source, entry, "name");
      if (!name) return name.error();
      auto platform = get_string(source, entry, "platform");
      if (!platform) return platform.error();
      auto manager = get_string(source, entry, "manager");
      if (!manager) return manager.error();
      auto url = get_string(source, entry, "url");
      if (!url) return url.error();
      auto version = get_string(source, entry, "version");
      if (!version) return version.error();
      const std::string label = name->value_or("?");
      if (!*platform || (*platform)->empty()) {
        return error_at(source, entry, "package '" + label + "' has no `platform`",
                        "every conda-lock entry names its platform (linux-64, osx-arm64, ...)");
      }
      if (!*url || (*url)->empty()) {
        return error_at(source, entry, "package '" + label + "' has no `url`",
                        "a lockfile entry must say where the package is downloaded from; "
                        "regenerate the lockfile");
      }
      std::string md5, sha256;
      if (YamlNode hash = entry["hash"]; hash && hash.IsMap()) {
        auto m = get_string(source, hash, "md5");
        if (!m) return m.error();
        auto s = get_string(source, hash, "sha256");
        if (!s) return s.error();
        md5 = ascii_lower(m->value_or(""));
        sha256 = ascii_lower(s->value_or(""));
        // pip entries of git requirements carry the commit id here; only conda hashes are checked.
        const bool conda_entry = manager->value_or("conda") == "conda";
        if (conda_entry && !md5.empty() && !is_hex(md5, 32)) {
          return error_at(source, hash["md5"], "package '" + label + "': md5 '" + md5 +
                                                   "' is not 32 hexadecimal digits");
        }
        if (conda_entry && !sha256.empty() && !is_hex(sha256, 64)) {
          return error_at(source, hash["sha256"], "package '" + label + "': sha256 '" + sha256 +
                                                      "' is not 64 hexadecimal digits");
        }
      }
      // Categories: `category: main` (v1) or `categories: [main, dev]` (conda-lock 2+).
      std::vector<std::string> categories;
      if (entry["categories"]) {
        auto c = get_string_list(source, entry, "categories");
        if (!c) return c.error();
        categories = std::move(c).value();
      } else {
        auto c = get_string(source, entry, "category");
        if (!c) return c.error();
        if (*c) categories.push_back(**c);
      }
      std::sort(categories.begin(), categories.end());
      std::string layer;
      for (const auto& c : categories) layer += (layer.empty() ? "" : ",") + c;
      // conda-lock v1's `optional` (what `conda-lock install` leaves out unless its category is
      // asked for) is written as `category != main`; one that says otherwise is marked in the
      // layer (`main;optional`, `dev;required`), so a change of it is a change (docs/review.md).
      if (auto opt = get_string(source, entry, "optional"); !opt) {
        return opt.error();
      } else if (*opt) {
        const bool optional = **opt == "true" || **opt == "True";
        const bool main = std::find(categories.begin(), categories.end(), "main") != categories.end();
        if (optional && main) layer += ";optional";
        if (!optional && !main && !categories.empty()) layer += ";required";
      }

      const std::string mgr = manager->value_or("conda");
      if (mgr == "pip" || mgr == "pypi") {
        PipPackage pip;
        pip.name = ascii_lower(name->value_or(""));
        pip.version = version->value_or("");
        pip.url = redact_url(**url);
        pip.sha256 = sha256.empty() ? sha256_from_fragment(pip.url) : sha256;
        if (pip.name.empty()) return error_at(source, entry, "pip entry without a `name`");
        auto st = add_pip(lock, index, env, **platform, **platform, std::move(pip), place, layer);
        if (!st) return st.error();
        continue;
      }
      if (mgr != "conda") {
        return error_at(source, entry["manager"],
                        "package '" + label + "': unknown manager '" + mgr + "'",
                        "conda-lock entries use `manager: conda` or `manager: pip`");
      }
      if (label.starts_with("__")) {
        // A virtual package written as an entry (old conda-lock versions did, with an empty hash
        // and a file:// URL into a temporary folder): what the solve assumed of the host, not a
        // package to install.
        auto& e = lock.environments[env];
        e.name = env;
        auto& plat = e.platforms[**platform];
        if (plat.platform.empty()) plat.platform = **platform;
        VirtualPackage vp;
        vp.name = label;
        vp.version = version->value_or("0");
        vp.build = "0";
        plat.virtual_packages.push_back(vp);
        continue;
      }
      if (md5.empty() && sha256.empty()) {
        return error_at(source, entry, "package '" + label + "' has no hash (neither md5 nor sha256)",
                        "a locked package must carry its checksum; regenerate the lockfile");
      }
      LockedPackage pkg;
      pkg.name = name->value_or("");
      pkg.url = **url;
      pkg.md5 = md5;
      pkg.sha256 = sha256;
      pkg.layer = layer;
      if (auto st = read_version(source, entry, version->value_or(""), "package '" + label + "': ", pkg); !st)
        return st.error();
      if (auto st = read_record_fields(source, entry, pkg); !st) return st.error();
      auto deps = read_specs(source, entry, "dependencies");
      if (!deps) return deps.error();
      pkg.depends = std::move(deps).value();
      auto cons = read_specs(source, entry, "constrains");
      if (!cons) return cons.error();
      pkg.constrains = std::move(cons).value();
      auto tf = get_string_list(source, entry, "track_features");
      if (!tf) return tf.error();
      pkg.track_features = std::move(tf).value();
      if (auto st = complete_record_from_url(pkg, place); !st) return st.error();
      if (auto st = check_record_matches_url(source, entry, pkg); !st) return st.error();
      auto st = add_package(lock, index, env, **platform, **platform, std::move(pkg), place);
      if (!st) return st.error();
    }
  }
  // Every platform named in metadata exists, even when it has no packages.
  if (metadata && metadata.IsMap() && metadata["platforms"].IsSequence()) {
    for (YamlNode p : metadata["platforms"].items()) {
      if (!p.IsScalar()) continue;
      auto& e = lock.environments[env];
      e.name = env;
      auto& plat = e.platforms[std::string(p.Scalar())];
      if (plat.platform.empty()) plat.platform = p.Scalar();
    }
  }
  for (auto& [_, e] : lock.environments) {
    for (auto& [__, plat] : e.platforms) plat.channels = channels;
  }
  // Last, so that the checks above name their maps as before; any other map is checked here.
  if (auto st = check_unique_keys_everywhere(source, root); !st) return st.error();
  sort_lockfile(lock);
  return lock;
}

}  // namespace envlock
