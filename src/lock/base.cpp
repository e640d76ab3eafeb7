// Base lockfiles (issue 18): a project's environment built on an environment of another
// project's lockfile. Reading one (path, file:// or https:// through the fetch module), the
// platforms it allows, and the `lock --check` part that compares its content hash.
#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "envlock/fetch.hpp"
#include "envlock/hash.hpp"
#include "envlock/lock.hpp"
#include "envlock/paths.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

/// file://, https://, or http:// on this machine (the manifest refuses any other http:// URL).
bool is_url(const std::string& s) {
  return s.starts_with("file://") || s.starts_with("https://") || s.starts_with("http://");
}

std::string where_of(const Manifest& m, const ExternalBase& b) {
  if (b.location.line > 0) return b.location.to_string();
  return m.path.empty() ? std::string() : m.path.string();
}

std::string pin(const RepoDataRecord& p) { return p.name + " " + p.version.to_string() + " " + p.build; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

/// Where the base lockfile lives on this machine: the file a path names (relative to the
/// manifest's folder) or a `file://` URL decodes to; nullopt for an https:// or http:// base (or a
/// `file://` URL that names no path). The one answer check_base_is_not_the_lockfile() compares
/// with the lockfile written and read_bytes() resolves the base's relative channels against.
std::optional<fs::path> local_base_file(const Manifest& m, const ExternalBase& b) {
  if (b.lockfile.starts_with("file://")) {
    if (auto p = path_from_file_url(b.lockfile)) return fs::path(*p);
    return std::nullopt;
  }
  if (is_url(b.lockfile)) return std::nullopt;
  return m.directory / b.lockfile;
}

/// The bytes of the base lockfile, and the directory its relative channels resolve against
/// (empty for an https:// base: a relative channel in it has no folder).
Result<std::pair<std::string, fs::path>> read_bytes(const Manifest& m, const ExternalBase& b,
                                                    const RepodataOptions& options) {
  const std::string where = where_of(m, b);
  const std::optional<fs::path> local = local_base_file(m, b);
  fs::path file;
  fs::path directory;
  if (local) directory = fs::absolute(*local).lexically_normal().parent_path();
  if (is_url(b.lockfile)) {
    fs::path cache = options.cache_dir.empty() ? repodata_cache_dir() : options.cache_dir;
    cache /= "base-lockfiles";
    std::error_code ec;
    fs::create_directories(cache, ec);
    file = cache / (hash_bytes(b.lockfile, HashAlgorithm::Sha256) + ".lock");
    const bool remote = !b.lockfile.starts_with("file://");
    if (!(remote && options.offline)) {
      FetchRequest req;
      req.url = b.lockfile;
      req.destination = file;
      req.label = b.lockfile;
      FetchOptions fo = options.fetch;
      fo.max_retries = options.max_retries;
      if (!options.netrc_file.empty()) fo.netrc_file = options.netrc_file;
      auto got = fetch_to_file(req, fo);
      if (!got) {
        Error e = got.error();
        e.message = "cannot fetch the base lockfile " + redact_url(b.lockfile) + ": " + e.message;
        e.where = where;
        return e;
      }
    } else if (!fs::exists(file, ec)) {
      return Error{ErrorKind::Network, where,
                   "the base lockfile " + redact_url(b.lockfile) + " is not in the cache and --offline forbids fetching it",
                   "", "run once without --offline to fetch it"};
    }
  } else {
    file = *local;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return Error{ErrorKind::Io, where,
                 "cannot read the base lockfile " + redact_url(b.lockfile) + ": " + std::generic_category().message(errno),
                 "", "check the `lockfile` of the base: a path is relative to the manifest's folder"};
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    return Error{ErrorKind::Io, where, "cannot read the base lockfile " + b.lockfile, "", ""};
  return std::pair{std::move(text), directory};
}

/// What differs between a base record and the project lockfile's copy of it: the names of the
/// fields ("url", "sha256", "layer", ...), empty for the same pin. The layer must be
/// `base:<its layer in the base>` (docs/manifest.md). The URL is compared whole for a base on
/// this machine (both sides resolved to `file://` URLs, each against its own folder), by its file
/// name for one read from an https:// URL, which keeps its relative channels as written while the
/// project's lockfile resolves its own against its folder (docs/lockfile.md, "Local channels").
std::vector<std::string> pin_differences(const LockedPackage& locked, const LockedPackage& base, bool whole_url) {
  auto file = [](const std::string& url) { return url.substr(url.find_last_of('/') + 1); };
  std::vector<std::string> out;
  auto differs = [&](bool d, const char* field) {
    if (d) out.emplace_back(field);
  };
  differs(locked.build_number != base.build_number, "build_number");
  differs(locked.subdir != base.subdir, "subdir");
  // (the file name is the URL's last segment unless the lockfile writes `file_name`)
  differs(locked.file_name != base.file_name || (whole_url ? locked.url != base.url : file(locked.url) != file(base.url)),
          "url");
  differs(locked.sha256 != base.sha256, "sha256");
  differs(locked.md5 != base.md5, "md5");
  differs(locked.depends != base.depends, "depends");
  differs(locked.constrains != base.constrains, "constrains");
  differs(locked.layer != "base:" + base.layer, "layer");
  return out;
}

/// "name version build" of every package of `packages`, by name.
std::map<std::string, std::string> by_name(const std::vector<LockedPackage>& packages) {
  std::map<std::string, std::string> out;
  for (const auto& p : packages) out[p.name] = pin(p);
  return out;
}

}  // namespace

const LockedEnvironment& BaseLockfile::environment() const {
  return lockfile.environments.at(base.environment);
}

std::string BaseLockfile::describe() const {
  return "the base " + redact_url(base.lockfile) + " (environment " + base.environment + ")";
}

std::vector<std::string> BaseLockfile::relative_channels() const {
  if (is_url(base.lockfile)) return {};
  return lockfile.relative_channels;
}

Status check_base_is_not_the_lockfile(const Manifest& manifest, const fs::path& lockfile_path) {
  // Where a path resolves to, through links and `..`; a missing file by its absolute path.
  auto resolved = [](const fs::path& p) {
    std::error_code ec;
    auto c = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? fs::absolute(p, ec).lexically_normal() : c;
  };
  const fs::path own = resolved(lockfile_path);
  for (const auto& [name, env] : manifest.environments) {
    if (!env.base_lockfile) continue;
    const ExternalBase& b = *env.base_lockfile;
    const std::optional<fs::path> local = local_base_file(manifest, b);
    if (!local) continue;
    const fs::path& file = *local;
    std::error_code ec;
    if (resolved(file) != own && !fs::equivalent(file, lockfile_path, ec)) continue;
    return Error{ErrorKind::Usage, where_of(manifest, b),
                 "the base of environment '" + name + "' is this project's own lockfile " + lockfile_path.string(),
                 "", "a base is another project's lockfile (the platform team's): name that file, or write "
                     "`base: ENV` for a layer of this manifest"};
  }
  return ok_status();
}

Result<BaseLockfile> load_base_lockfile(const Manifest& manifest, const ManifestEnvironment& env,
                                        const RepodataOptions& options) {
  const ExternalBase& b = *env.base_lockfile;
  const std::string where = where_of(manifest, b);
  auto bytes = read_bytes(manifest, b, options);
  if (!bytes) return bytes.error();
  BaseLockfile out;
  out.base = b;
  out.sha256 = hash_bytes(bytes->first, HashAlgorithm::Sha256);
  if (!b.sha256.empty() && b.sha256 != out.sha256)
    return Error{ErrorKind::Integrity, where,
                 "the base lockfile " + redact_url(b.lockfile) + " has sha256 " + out.sha256 + ", the manifest pins " +
                     b.sha256,
                 "", "the base changed: check it, then write its new sha256 in the manifest (or drop the pin)"};
  auto parsed = Lockfile::parse(bytes->first, redact_url(b.lockfile), bytes->second);
  if (!parsed) {
    Error e = parsed.error();
    return Error{e.kind, where, "the base lockfile " + redact_url(b.lockfile) + " cannot be read", e.to_string(),
                 "the base must be an envlock.lock written by `envlock lock`"};
  }
  out.lockfile = std::move(*parsed);
  if (!out.lockfile.environments.count(b.environment)) {
    std::vector<std::string> names;
    for (const auto& [n, e] : out.lockfile.environments) names.push_back(n);
    return Error{ErrorKind::Usage, where,
                 "the base lockfile " + redact_url(b.lockfile) + " has no environment '" + b.environment + "'", "",
                 "its environments: " + join(names)};
  }
  return out;
}

Result<std::vector<std::string>> base_platforms_for(const Manifest& manifest, const ManifestEnvironment& env,
                                                    const BaseLockfile& base) {
  std::vector<std::string> locked;
  for (const auto& [p, lp] : base.environment().platforms) locked.push_back(p);
  if (!env.platforms && manifest.platforms_from_host) return locked;
  for (const auto& p : manifest.platforms_for(env))
    if (std::find(locked.begin(), locked.end(), p) == locked.end())
      return Error{ErrorKind::Usage, where_of(manifest, base.base),
                   "environment '" + env.name + "' asks for " + p + ", but " + base.describe() +
                       " is locked only for " + join(locked),
                   "", "drop " + p + " from the project's platforms, or ask the base's owners to lock it for " + p};
  return manifest.platforms_for(env);
}

Status check_base_lockfiles(const Manifest& manifest, const Lockfile& lockfile, const RepodataOptions& options,
                            std::vector<StaleReason>& reasons) {
  using K = StaleReason::Kind;
  for (const auto& [name, env] : manifest.environments) {
    if (!env.base_lockfile) continue;
    auto le = lockfile.environments.find(name);
    if (le == lockfile.environments.end() || !le->second.base_lockfile) continue;  // check_lockfile names it
    const LockedBase& recorded = *le->second.base_lockfile;
    const ExternalBase& wanted = *env.base_lockfile;
    if (recorded.lockfile != wanted.lockfile || recorded.environment != wanted.environment) {
      reasons.push_back({K::BaseChanged, name, "", "",
                         "environment '" + name + "' is built on the base " + redact_url(wanted.lockfile) +
                             " (environment " + wanted.environment + ") in the manifest but on " +
                             redact_url(recorded.lockfile) + " (environment " + recorded.environment +
                             ") in the lockfile"});
      continue;
    }
    auto base = load_base_lockfile(manifest, env, options);
    if (!base) return base.error();
    if (base->sha256 != recorded.sha256) {
      std::string what;
      const LockedEnvironment& be = base->environment();
      for (const auto& [platform, lp] : le->second.platforms) {
        std::vector<LockedPackage> was;
        for (const auto& p : lp.packages)
          if (p.layer.starts_with("base:")) was.push_back(p);
        auto bp = be.platforms.find(platform);
        auto before = by_name(was);
        auto after = bp == be.platforms.end() ? std::map<std::string, std::string>{} : by_name(bp->second.packages);
        std::vector<std::string> changes;
        for (const auto& [n, v] : after) {
          auto it = before.find(n);
          if (it == before.end())
            changes.push_back("+ " + v);
          else if (it->second != v)
            changes.push_back(it->second + " -> " + v.substr(n.size() + 1));
        }
        for (const auto& [n, v] : before)
          if (!after.count(n)) changes.push_back("- " + v);
        if (bp == be.platforms.end()) changes = {"no longer locked for " + platform};
        if (!changes.empty()) what += (what.empty() ? "" : "; ") + platform + ": " + join(changes);
      }
      if (what.empty()) what = "no base pin changed (the file's other content did)";
      reasons.push_back({K::BaseLockfileChanged, name, "", "",
                         "environment '" + name + "': " + base->describe() + " changed since the lock (sha256 " +
                             recorded.sha256 + " then, " + base->sha256 + " now): " + what});
    }
    if (base->sha256 == recorded.sha256) {
      // The same base: each of its records must be in the project's lock unchanged.
      for (const auto& [platform, lp] : le->second.platforms) {
        auto bp = base->environment().platforms.find(platform);
        if (bp == base->environment().platforms.end()) continue;  // ExtraPlatform, below
        const std::string ctx = name + "/" + platform;
        const bool whole_url = local_base_file(manifest, wanted).has_value();
        std::set<std::string> pinned;
        for (const auto& b : bp->second.packages) {
          pinned.insert(b.name);
          auto q = std::find_if(lp.packages.begin(), lp.packages.end(), [&](const LockedPackage& p) { return p.name == b.name; });
          if (q == lp.packages.end()) {
            reasons.push_back({K::BasePinMoved, name, platform, b.name,
                               ctx + ": base pin " + pin(b) + " of " + base->describe() + " is missing from the lockfile"});
            continue;
          }
          if (pin(*q) != pin(b)) {
            reasons.push_back({K::BasePinMoved, name, platform, b.name,
                               ctx + ": base pin " + pin(b) + " of " + base->describe() + " is " + pin(*q) + " in the lockfile"});
            continue;
          }
          auto differences = pin_differences(*q, b, whole_url);
          if (differences.empty()) continue;
          std::string what;
          for (const auto& d : differences)
            what += (what.empty() ? "" : ", ") + (d == "layer" ? "layer " + q->layer + " (not base:" + b.layer + ")" : d);
          reasons.push_back({K::BasePinMoved, name, platform, b.name,
                             ctx + ": base pin " + pin(b) + " of " + base->describe() + " has another " + what +
                                 " in the lockfile"});
        }
        // A package of the project's own solve that claims a base layer: `install --base-only`
        // would install it as the base's.
        for (const auto& p : lp.packages)
          if (p.layer.starts_with("base:") && !pinned.count(p.name))
            reasons.push_back({K::BasePinMoved, name, platform, p.name,
                               ctx + ": " + pin(p) + " has the layer " + p.layer + " in the lockfile, but " +
                                   base->describe() + " has no " + p.name});
      }
    }
    if (env.platforms || !manifest.platforms_from_host) continue;  // check_lockfile compares those
    auto platforms = base_platforms_for(manifest, env, *base);
    if (!platforms) return platforms.error();
    for (const auto& p : *platforms)
      if (!le->second.platforms.count(p))
        reasons.push_back({K::MissingPlatform, name, p, "",
                           "environment '" + name + "' is not locked for " + p + ", a platform of " + base->describe()});
    for (const auto& [p, lp] : le->second.platforms)
      if (std::find(platforms->begin(), platforms->end(), p) == platforms->end())
        reasons.push_back({K::ExtraPlatform, name, p, "",
                           "environment '" + name + "' is locked for " + p + ", which " + base->describe() +
                               " is no longer locked for"});
  }
  return ok_status();
}

}  // namespace envlock
