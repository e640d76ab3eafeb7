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
#include "envlock/input_file.hpp"
#include "envlock/hash.hpp"
#include "envlock/lock.hpp"
#include "envlock/paths.hpp"
#include "envlock/text.hpp"
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

/// Where a path resolves to, through links and `..`; a missing file by its absolute path.
fs::path resolved_path(const fs::path& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : c;
}

/// Which lockfile a base names, for telling a loop: the file a path (against `directory`) or a
/// file:// URL resolves to, or any other URL as written (credential-free); empty when a relative
/// path has no folder to resolve it in (inside an https:// base).
std::string chain_identity(const fs::path& directory, const std::string& lockfile) {
  if (lockfile.starts_with("file://")) {
    if (auto p = path_from_file_url(lockfile)) return "file " + resolved_path(*p).string();
    return "url " + redact_url(lockfile);
  }
  if (is_url(lockfile)) return "url " + redact_url(lockfile);
  if (directory.empty()) return "";
  return "file " + resolved_path(directory / lockfile).string();
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
    // Named by the URL without its credentials (not even their digest in a file name), so a
    // rotated token finds the same copy, as the lockfile records the URL (lock_manifest).
    file = cache / (hash_bytes(redact_url(b.lockfile), HashAlgorithm::Sha256) + ".lock");
    const bool remote = !b.lockfile.starts_with("file://");
    // A file:// base is a file of this machine: the same rules as a path before it is copied
    // into the cache (file:///proc/self/environ was copied there whole).
    if (local) {
      if (InputFile probe = read_input_file(*local, kMaxLockfileBytes); probe.problem == InputFile::Problem::Refused)
        return Error{ErrorKind::Io, where, "the base lockfile " + redact_url(b.lockfile) + " " + probe.message, "",
                     "a base lockfile is another project's envlock.lock: a regular file, a file:// or an https:// URL"};
    }
    if (!(remote && options.offline)) {
      FetchRequest req;
      req.url = b.lockfile;
      req.destination = file;
      req.label = redact_url(b.lockfile);
      FetchOptions fo = options.fetch;
      fo.max_retries = options.max_retries;
      if (!options.netrc_file.empty()) fo.netrc_file = options.netrc_file;
      // A lockfile, not a package: the lockfile readers' cap (kMaxLockfileBytes), not the 4 GiB of
      // downloads of unknown size (attack on issue 18, A2: a server's endless body filled the disk).
      fo.max_unknown_size = kMaxLockfileBytes;
      auto got = fetch_to_file(req, fo);
      if (!got && got.error().kind == ErrorKind::Integrity) {  // no size, no digest: only the cap
        return Error{ErrorKind::Io, where,
                     "the base lockfile " + redact_url(b.lockfile) + " is larger than " +
                         std::to_string(kMaxLockfileBytes >> 20) + " MiB, more than any lockfile; it is not read",
                     got.error().detail,
                     "nothing was kept; check the base's URL (its server sent more than a lockfile holds)"};
      }
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
  // A manifest (a pull request's) can name any path as its base: read_input_file takes regular
  // files only, outside /proc, /sys and /dev, up to kMaxLockfileBytes, and a file that is not a
  // YAML map is refused without quoting a byte of it (envlock/input_file.hpp).
  InputFile read = read_input_file(file, kMaxLockfileBytes);
  const std::string named = "the base lockfile " + redact_url(b.lockfile);
  switch (read.problem) {
    case InputFile::Problem::None: break;
    case InputFile::Problem::Open:
      return Error{ErrorKind::Io, where, "cannot read " + named + ": " + std::generic_category().message(read.error_number),
                   "", "check the `lockfile` of the base: a path is relative to the manifest's folder"};
    case InputFile::Problem::Refused:
      return Error{ErrorKind::Io, where, named + " " + read.message, "",
                   "a base lockfile is another project's envlock.lock: a regular file, a file:// or an https:// URL"};
    case InputFile::Problem::TooLarge:
      return Error{ErrorKind::Io, where,
                   named + " is larger than " + std::to_string(kMaxLockfileBytes >> 20) +
                       " MiB, more than any lockfile; it is not read",
                   "", "check the `lockfile` of the base"};
    case InputFile::Problem::Read:
      return Error{ErrorKind::Io, where, "cannot read " + named + ": " + std::generic_category().message(read.error_number),
                   "", ""};
  }
  if (!starts_like_yaml_map(read.text)) {
    Error e = input_not_yaml_map(where, "an envlock.lock");
    e.message = named + " " + e.message;
    return e;
  }
  std::string text = std::move(read.text);
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

/// Where `key` of the package `name` of `environment` / `platform` is written in base text laid
/// out as envlock's emitter writes it (docs/lockfile.md: environments at indent 2, platforms at
/// 6, `- name:` at 10, the package's keys at 12): "FILE:LINE:COL" of the value, or FILE alone
/// when the text is laid out otherwise (a hand-written base).
std::string place_in_base(const std::string& text, const std::string& file, const std::string& environment,
                          const std::string& platform, const std::string& name, const std::string& key) {
  auto unquoted = [](std::string_view v) {
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
    return v;
  };
  auto is_key = [&](std::string_view line, std::size_t indent, std::string_view want) {
    if (line.size() <= indent || line.substr(0, indent) != std::string(indent, ' ') || line[indent] == ' ') return false;
    std::string_view k = line.substr(indent);
    if (!k.ends_with(":")) return false;
    return unquoted(k.substr(0, k.size() - 1)) == want;
  };
  int depth = 0;  // 1: in the environment, 2: in the platform, 3: in the package
  std::size_t start = 0;
  for (int n = 1; start < text.size(); ++n) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos || line[indent] == '#') continue;
    if (indent <= 2) depth = 0;
    if (depth == 0) {
      if (is_key(line, 2, environment)) depth = 1;
      continue;
    }
    if (indent <= 6 && depth > 1) depth = 1;
    if (depth == 1) {
      if (is_key(line, 6, platform)) depth = 2;
      continue;
    }
    if (indent <= 10 && depth == 3) depth = 2;
    if (depth == 2) {
      const std::string_view item = "- name: ";
      if (indent == 10 && line.substr(10).starts_with(item) && unquoted(line.substr(10 + item.size())) == name) depth = 3;
      continue;
    }
    const std::string prefix = key + ": ";
    if (indent == 12 && line.substr(12).starts_with(prefix))
      return file + ":" + std::to_string(n) + ":" + std::to_string(12 + prefix.size() + 1);
  }
  return file;
}

/// A relative spelling kept as written (an https:// base: docs/manifest.md), `./…`, `../…`, `~/…`.
bool kept_relative(const std::string& url) {
  return url.starts_with("./") || url.starts_with("../") || url.starts_with("~/");
}

/// Why the base's pin `p` cannot be installed as it is, or nullopt; and the key it is about. The
/// checks `install` makes of a locked record (the package cache's file name rule, the fetch
/// module's schemes), made when the base is read so that they name the base, not "lock again"
/// (attack on issue 18, finding 4), plus: no control or invisible characters in what is printed
/// and fetched, no `.` or `..` path segment, and a pin of a channel the base names by a relative
/// directory stays under that channel's folder.
std::optional<std::pair<std::string, std::string>> unsafe_pin(const LockedPackage& p, const Lockfile& base,
                                                               const fs::path& directory) {
  // URLs as the base writes them (its relative channels relative to its folder), credential-free.
  auto spelled = [&](const std::string& u) { return base.written_locations(redact_url(u), directory); };
  for (const auto& [key, value] : {std::pair<std::string, const std::string*>{"url", &p.url}, {"channel", &p.channel},
                                   {"file_name", &p.file_name}, {"build", &p.build}, {"subdir", &p.subdir}})
    if (printable(*value) != *value)
      return std::pair{key, "its " + key + " holds control or invisible characters ('" + printable(spelled(*value)) + "')"};
  const std::string shown = "'" + spelled(p.url) + "'";
  const bool relative = kept_relative(p.url);
  if (!relative && !p.url.starts_with("https://") && !p.url.starts_with("http://") && !p.url.starts_with("file://"))
    return std::pair{std::string("url"), "its url " + shown + " is not an https://, http:// or file:// URL"};
  std::string path = p.url.substr(0, p.url.find_first_of("?#"));
  if (relative) {
    while (path.starts_with("./") || path.starts_with("../") || path.starts_with("~/")) path.erase(0, path.find('/') + 1);
  } else {
    const std::size_t authority = path.find("://") + 3;
    const std::size_t slash = path.find('/', authority);
    path = slash == std::string::npos ? std::string() : path.substr(slash);
  }
  if (("/" + path + "/").find("/../") != std::string::npos || ("/" + path + "/").find("/./") != std::string::npos)
    return std::pair{std::string("url"), "its url " + shown + " has a '.' or '..' path segment"};
  if (std::find(base.relative_channels.begin(), base.relative_channels.end(), p.channel) != base.relative_channels.end() &&
      !(p.url.size() > p.channel.size() && p.url.starts_with(p.channel) && p.url[p.channel.size()] == '/'))
    return std::pair{std::string("url"), "its url leaves the folder of its channel " + spelled(p.channel) +
                                             " (it names " + spelled(p.url) + ")"};
  const std::string identity = p.dist_name();
  if (p.file_name != identity + ".conda" && p.file_name != identity + ".tar.bz2")
    return std::pair{std::string(p.file_name == p.url.substr(p.url.find_last_of('/') + 1) ? "url" : "file_name"),
                     "its url names the file " + p.file_name + ", not the record's " + identity + ".conda or .tar.bz2"};
  return std::nullopt;
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
  const fs::path own = resolved_path(lockfile_path);
  for (const auto& [name, env] : manifest.environments) {
    if (!env.base_lockfile) continue;
    const ExternalBase& b = *env.base_lockfile;
    const std::optional<fs::path> local = local_base_file(manifest, b);
    if (!local) continue;
    const fs::path& file = *local;
    std::error_code ec;
    if (resolved_path(file) != own && !fs::equivalent(file, lockfile_path, ec)) continue;
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
    // The base is another team's file: its own hint ("re-create it with `envlock lock`") is for
    // them, so the error says what is wrong in it and whom to ask (attack on issue 18, finding 6).
    Error e = parsed.error();
    const bool credentials = e.message.ends_with(" carries credentials");
    e.hint.clear();
    const std::string named = redact_url(b.lockfile);
    return Error{e.kind, where, "the base lockfile " + named + " cannot be read", e.to_string(),
                 credentials ? "the base is its owners' file: ask them to take the credentials out of " + named +
                                   " and lock it again (`envlock lock` writes none: a token belongs in the "
                                   "credentials file or .netrc); locking this project again cannot fix it"
                             : "the base must be an envlock.lock written by `envlock lock`: ask its owners to fix " +
                                   named + " (locking this project again cannot)"};
  }
  out.lockfile = std::move(*parsed);
  out.directory = bytes->second;
  if (!out.lockfile.environments.count(b.environment)) {
    std::vector<std::string> names;
    for (const auto& [n, e] : out.lockfile.environments) names.push_back(n);
    return Error{ErrorKind::Usage, where,
                 "the base lockfile " + redact_url(b.lockfile) + " has no environment '" + b.environment + "'", "",
                 "its environments: " + join(names)};
  }
  // Every pin the project takes over must be installable as it is: the project cannot fix a
  // record of another team's file, so the error names the base's line and its owners.
  for (const auto& [platform, lp] : out.environment().platforms)
    for (const auto& p : lp.packages)
      if (auto unsafe = unsafe_pin(p, out.lockfile, bytes->second))
        return Error{ErrorKind::Parse,
                     place_in_base(bytes->first, redact_url(b.lockfile), b.environment, platform, p.name, unsafe->first),
                     "base pin " + pin(p) + " of environment " + b.environment + " (" + platform + "): " + unsafe->second,
                     "the base of environment '" + env.name + "' at " + where + "; nothing was written",
                     "the base is its owners' file: ask them to fix " + redact_url(b.lockfile) +
                         " and lock it again (locking this project again cannot fix it)"};
  return out;
}

Result<std::optional<std::string>> walk_base_chain(const Manifest& manifest, const std::string& environment,
                                                   const BaseLockfile& base, const fs::path& own_lockfile,
                                                   const RepodataOptions& options, std::string* unchecked) {
  if (unchecked != nullptr) unchecked->clear();
  // One entry per lockfile of the chain: how it is named (as the lockfile above wrote it; the
  // project's own as the command spelled it), the environment, and which file it is.
  struct Link {
    std::string named, environment, identity;
  };
  const fs::path own = own_lockfile.empty() ? manifest.path.parent_path() / "envlock.lock" : own_lockfile;
  std::vector<Link> chain{{own.string(), environment, "file " + resolved_path(own).string()},
                          {redact_url(base.base.lockfile), base.base.environment,
                           chain_identity(manifest.directory, base.base.lockfile)}};
  auto spelled = [&chain](std::size_t upto) {
    std::string out = chain[0].named + " (environment " + chain[0].environment + ")";
    for (std::size_t i = 1; i <= upto; ++i)
      out += (i == 1 ? " is built on " : ", which is built on ") + chain[i].named + " (environment " +
             chain[i].environment + ")";
    return out;
  };
  const std::string where = where_of(manifest, base.base);
  std::optional<std::string> changed;
  std::string above = chain[1].named;  // the lockfile that recorded the link
  std::string above_env = chain[1].environment;
  fs::path directory = base.directory;
  const Lockfile* lockfile = &base.lockfile;
  Lockfile next;
  for (;;) {
    auto env = lockfile->environments.find(above_env);
    if (env == lockfile->environments.end() || !env->second.base_lockfile) break;
    const LockedBase link = *env->second.base_lockfile;  // a copy: `next` is replaced below
    const std::string identity = chain_identity(directory, link.lockfile);
    const std::string named = redact_url(link.lockfile);
    auto cut_short = [&](const std::string& why) {
      if (unchecked != nullptr)
        *unchecked = "the base " + above + " (environment " + above_env + ") is built on " + named +
                     " (environment " + link.environment + "), which " + why + ": the chain below it was not checked";
    };
    if (identity.empty()) {  // a relative path in an https:// base: no folder to resolve it in
      cut_short("is a relative path inside a base read from a URL");
      break;
    }
    chain.push_back({named, link.environment, identity});
    const std::size_t last = chain.size() - 1;
    for (std::size_t i = 0; i < last; ++i) {
      if (chain[i].identity != identity) continue;
      // Each lock in a loop changes the file the next one was locked on: none could stay fresh.
      return Error{ErrorKind::Usage, where,
                   "the bases of environment '" + environment + "' form a loop: " + spelled(last) + ", which is " +
                       chain[i].named + (i == 0 ? ", this project's lockfile," : "") + " again",
                   "",
                   "a chain of bases must end in a lockfile built on no base lockfile (in a loop, each lock changes "
                   "the file the next was locked on, so none stays up to date): ask the owners of " + above +
                       " to lock environment " + above_env + " on a base outside the loop, or build '" + environment +
                       "' on another base"};
    }
    if (static_cast<int>(last) > kMaxBaseChain)
      return Error{ErrorKind::Usage, where,
                   "the base of environment '" + environment + "' is a chain of more than " +
                       std::to_string(kMaxBaseChain) + " base lockfiles: " + spelled(last),
                   "",
                   "envlock follows at most " + std::to_string(kMaxBaseChain) +
                       " base lockfiles below a project; build on a base nearer the end of the chain"};
    Manifest m;  // the lockfile naming the link stands where a manifest would
    m.directory = directory;
    m.path = above;
    ExternalBase b{link.lockfile, link.environment, "", {}};
    auto bytes = read_bytes(m, b, options);
    if (!bytes) {
      cut_short("cannot be read here (" + bytes.error().message + ")");
      break;
    }
    const std::string sha = hash_bytes(bytes->first, HashAlgorithm::Sha256);
    if (sha != link.sha256 && !changed)
      changed = "the base " + above + " (environment " + above_env + ") is built on " + named + " (environment " +
                link.environment + "), which changed since " + above + " was locked (sha256 " + link.sha256 +
                " then, " + sha + " now)";
    // Walked on past a change: the chain as it stands now may still close a loop.
    auto parsed = Lockfile::parse(bytes->first, named, bytes->second);
    if (!parsed) {
      cut_short("is not an envlock.lock");
      break;
    }
    next = std::move(*parsed);
    lockfile = &next;
    above = named;
    above_env = link.environment;
    directory = bytes->second;
  }
  return changed;
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
                            std::vector<StaleReason>& reasons, const fs::path& lockfile_path,
                            std::vector<std::string>* warnings) {
  using K = StaleReason::Kind;
  for (const auto& [name, env] : manifest.environments) {
    if (!env.base_lockfile) continue;
    auto le = lockfile.environments.find(name);
    if (le == lockfile.environments.end() || !le->second.base_lockfile) {
      // Stale (check_lockfile names it), but a loop of bases is refused as `lock` refuses it.
      if (auto base = load_base_lockfile(manifest, env, options))
        if (auto chain = walk_base_chain(manifest, name, *base, lockfile_path, options); !chain) return chain.error();
      continue;
    }
    const LockedBase& recorded = *le->second.base_lockfile;
    const ExternalBase& wanted = *env.base_lockfile;
    // The lockfile records the base credential-free (lock_manifest): compared so, a token in the
    // manifest's URL (or a new one) is no change of base.
    if (recorded.lockfile != redact_url(wanted.lockfile) || recorded.environment != wanted.environment) {
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
    RepodataOptions cached_links = options;  // a URL link from the cache only (walk_base_chain)
    cached_links.offline = true;
    std::string unchecked;
    auto chain = walk_base_chain(manifest, name, *base, lockfile_path, cached_links, &unchecked);
    if (!chain) return chain.error();
    if (warnings != nullptr && !unchecked.empty()) warnings->push_back("environment '" + name + "': " + unchecked);
    if (*chain)
      reasons.push_back({K::BaseChainChanged, name, "", "", "environment '" + name + "': " + **chain +
                                                                  ": the pins it passes on are stale until its owners "
                                                                  "lock it again"});
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
