// lock_manifest: channels -> repodata -> one solve per environment x platform -> Lockfile.
#include "envlock/lock.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "envlock/host.hpp"
#include "envlock/paths.hpp"
#include "envlock/settings.hpp"
#include "pypi_step.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace {

using Getenv = std::function<std::optional<std::string>(const std::string&)>;

/// The __archspec build of a subdir's CPU family.
std::string archspec_of(const std::string& platform) {
  auto dash = platform.find('-');
  std::string arch = dash == std::string::npos ? "" : platform.substr(dash + 1);
  if (arch == "64") return "x86_64";
  if (arch == "32") return "x86";
  return arch;  // aarch64, arm64, ppc64le, s390x, armv7l, riscv64, ...
}

void set_vp(std::vector<VirtualPackage>& vps, VirtualPackage vp) {
  for (auto& v : vps)
    if (v.name == vp.name) {
      v = std::move(vp);
      return;
    }
  vps.push_back(std::move(vp));
}

void remove_vp(std::vector<VirtualPackage>& vps, const std::string& name) {
  vps.erase(std::remove_if(vps.begin(), vps.end(), [&](const VirtualPackage& v) { return v.name == name; }),
            vps.end());
}

/// Version-less key for caching loaded repodata: the channel URLs (with credentials, as they
/// are fetched) and the platform.
std::string repo_key(const std::vector<Channel>& channels, const std::string& platform) {
  std::string key = platform;
  for (const auto& c : channels) key += "\n" + c.url;
  return key;
}

/// `NAME::pkg` for a channel the manifest names NAME (`{url, name}`, or a name under a mirror
/// channel-alias) asks for that channel's URL: the URL its records carry.
MatchSpec spec_for_channels(MatchSpec spec, const std::vector<Channel>& channels) {
  if (!spec.channel || spec.channel->find("://") != std::string::npos) return spec;
  for (const auto& c : channels)
    if (!c.spec_name().empty() && c.spec_name() == *spec.channel) {
      spec.channel = c.public_url();
      break;
    }
  return spec;
}

const LockedPlatform* find_locked(const Lockfile& lock, const std::string& env, const std::string& platform) {
  auto e = lock.environments.find(env);
  if (e == lock.environments.end()) return nullptr;
  auto p = e->second.platforms.find(platform);
  return p == e->second.platforms.end() ? nullptr : &p->second;
}

std::string describe_location(const Manifest& m, const ManifestEnvironment& env) {
  if (env.location.line > 0) return env.location.to_string();
  return m.path.empty() ? std::string() : m.path.string();
}

// ---- Silent variant switches (docs/solving.md, rule 6) ----

/// The frameworks whose CPU and CUDA builds share a name (conda-forge, pytorch and nvidia channels).
bool is_framework(const std::string& name) {
  static const std::set<std::string> kNames{"pytorch", "torch", "libtorch", "tensorflow", "tensorflow-base",
                                            "jax", "jaxlib"};
  return kNames.count(name) > 0;
}

bool names_variant(const RepoDataRecord& r, std::string_view word) {
  if (ascii_lower(r.build).find(word) != std::string::npos) return true;
  for (const auto& f : r.track_features)
    if (ascii_lower(f).find(word) != std::string::npos) return true;
  for (const auto& f : split_features(r.features))
    if (ascii_lower(f).find(word) != std::string::npos) return true;
  return false;
}

bool is_cpu_build(const RepoDataRecord& r) { return names_variant(r, "cpu"); }

bool is_cuda_build(const RepoDataRecord& r) {
  if (names_variant(r, "cuda") || names_variant(r, "gpu")) return true;
  return std::any_of(r.depends.begin(), r.depends.end(), [](const std::string& d) { return d.starts_with("__cuda"); });
}

std::string dist(const RepoDataRecord& r) { return r.name + " " + r.version.to_string() + " " + r.build; }

/// The first reason of an explanation: its first Missing or Conflict node, depth first.
std::string first_reason(const std::vector<ProblemNode>& nodes) {
  for (const auto& n : nodes) {
    if (n.kind == ProblemNode::Kind::Missing || n.kind == ProblemNode::Kind::Conflict)
      return n.text + (n.detail.empty() ? "" : " (" + n.detail + ")");
    if (auto r = first_reason(n.children); !r.empty()) return r;
  }
  return "";
}

/// The ordering rule (docs/solving.md, "The ordering") that puts `chosen` before `other` of the
/// same name, when both fit.
std::string ranking_rule(const RepoDataRecord& chosen, const RepoDataRecord& other) {
  if (chosen.track_features.size() != other.track_features.size()) return "fewer track_features";
  if (chosen.version != other.version) return "a higher version";
  if (chosen.build_number != other.build_number) return "a higher build number";
  if ((chosen.subdir == "noarch") != (other.subdir == "noarch")) return "an arch build over a noarch one";
  return "same version and build number: the versions its dependencies select, then the newer upload timestamp";
}

/// Why `wanted` is not in the answer: the solve again, with `wanted` requested exactly.
std::string why_not(const SolveTask& task, const RepoDataRecord& wanted, const RepoDataRecord& chosen) {
  SolveTask t = task;
  t.preferred.clear();
  std::string text = wanted.name + " ==" + wanted.version.to_string() + " " + wanted.build;
  auto ms = MatchSpec::parse(text);
  if (!ms) return "its build string cannot be requested";
  ms->file_name = wanted.file_name;
  t.specs.push_back({*ms, text, ""});
  auto out = solve(t);
  if (!out) return out.error().message;
  if (out->solved) return "both fit; the solver ranked the chosen build higher (" + ranking_rule(chosen, wanted) + ")";
  std::string r = first_reason(out->explanation.roots);
  return r.empty() ? "it conflicts with the other requests" : r;
}

/// The best CUDA build of `name` among the task's repos (version, build number, timestamp).
std::optional<RepoDataRecord> best_cuda_build(const SolveTask& task, const std::string& name) {
  std::optional<RepoDataRecord> best;
  auto key = [](const RepoDataRecord& r) { return std::make_tuple(r.version, r.build_number, r.timestamp.value_or(0)); };
  for (const auto& repo : task.repos) {
    std::vector<const RepoDataRecord*> recs;
    if (repo.index != nullptr) {
      for (const auto& r : repo.index->records(name)) recs.push_back(&r);
    } else if (repo.records != nullptr) {
      for (const auto& r : *repo.records)
        if (r.name == name) recs.push_back(&r);
    }
    for (const auto* r : recs)
      if (is_cuda_build(*r) && !is_cpu_build(*r) && (!best || key(*r) > key(*best))) best = *r;
  }
  return best;
}

/// Warnings for CPU builds of frameworks where a GPU is declared, and for CUDA -> CPU switches
/// against the previous lock of the same environment and platform.
void variant_warnings(const SolveTask& task, const Solution& solution, const LockedPlatform* previous,
                      const std::string& where, std::vector<std::string>& warnings) {
  auto cuda = std::find_if(task.virtual_packages.begin(), task.virtual_packages.end(),
                           [](const VirtualPackage& v) { return v.name == "__cuda"; });
  for (const auto& sp : solution.packages) {
    const RepoDataRecord& r = *sp.record;
    if (sp.from_pin || !is_cpu_build(r)) continue;
    const LockedPackage* old = nullptr;
    if (previous != nullptr)
      for (const auto& p : previous->packages)
        if (p.name == r.name) old = &p;
    if (old != nullptr && is_cuda_build(*old) && !is_cpu_build(*old)) {
      warnings.push_back(where + ": " + r.name + " switched from the CUDA build " + dist(*old) + " to the CPU build " +
                         dist(r) + "; the CUDA build no longer fits: " + why_not(task, *old, r));
      continue;
    }
    if (cuda == task.virtual_packages.end() || !is_framework(r.name)) continue;
    auto alt = best_cuda_build(task, r.name);
    std::string msg = where + ": " + r.name + " is the CPU-only build " + dist(r) + " although " + cuda->to_string() +
                      " is assumed";
    if (auto o = task.virtual_origins.find("__cuda"); o != task.virtual_origins.end()) msg += " (" + o->second + ")";
    if (alt)
      msg += "; the CUDA build " + dist(*alt) + " was not chosen: " + why_not(task, *alt, r);
    else
      msg += "; the channels offer no CUDA build of " + r.name + " for this platform";
    warnings.push_back(std::move(msg));
  }
}

}  // namespace

std::vector<VirtualPackage> default_virtual_packages(const std::string& platform) {
  std::vector<VirtualPackage> out;
  if (platform.starts_with("linux-")) {
    out = {{"__archspec", "1", archspec_of(platform)}, {"__glibc", "2.28", "0"}, {"__linux", "4.18", "0"},
           {"__unix", "0", "0"}};
  } else if (platform.starts_with("osx-")) {
    out = {{"__archspec", "1", archspec_of(platform)}, {"__osx", "13.0", "0"}, {"__unix", "0", "0"}};
  } else if (platform.starts_with("win-")) {
    out = {{"__archspec", "1", archspec_of(platform)}, {"__win", "0", "0"}};
  } else if (platform.starts_with("freebsd-")) {
    out = {{"__archspec", "1", archspec_of(platform)}, {"__unix", "0", "0"}};
  }
  return out;
}

Result<std::vector<VirtualPackage>> lock_virtual_packages(const Manifest& manifest, const std::string& platform,
                                                          const Getenv& getenv_in,
                                                          std::map<std::string, std::string>* origins_out) {
  const Getenv& getenv = getenv_in ? getenv_in : Getenv(process_getenv);
  std::map<std::string, std::string> origins;
  std::vector<VirtualPackage> vps = default_virtual_packages(platform);
  for (const auto& vp : vps) origins[vp.name] = "assumed for " + platform;
  for (const auto& vp : manifest.virtual_packages_for(platform)) {
    set_vp(vps, vp);
    origins[vp.name] = "declared in the manifest for " + platform;
  }

  struct Override {
    const char* variable;
    const char* package;
    bool applies;
  };
  bool linux = platform.starts_with("linux-"), osx = platform.starts_with("osx-"), win = platform.starts_with("win-");
  const Override overrides[] = {
      {"CONDA_OVERRIDE_CUDA", "__cuda", linux || win},  {"CONDA_OVERRIDE_GLIBC", "__glibc", linux},
      {"CONDA_OVERRIDE_LINUX", "__linux", linux},       {"CONDA_OVERRIDE_OSX", "__osx", osx},
      {"CONDA_OVERRIDE_WIN", "__win", win},
  };
  for (const auto& o : overrides) {
    if (!o.applies) continue;
    auto value = getenv(o.variable);
    if (!value) continue;
    if (value->empty()) {
      remove_vp(vps, o.package);
      continue;
    }
    // Checked as the manifest's entries are (VirtualPackage::parse): " 12" or "12.4=x" would
    // otherwise be recorded as the version.
    if (auto vp = VirtualPackage::parse(std::string(o.package) + "=" + *value); !vp || vp->build != "0")
      return Error{ErrorKind::Parse, o.variable, "'" + *value + "' is not a version", "",
                   std::string("set ") + o.variable + " to a version such as 12.4, or to an empty value to drop " +
                       o.package};
    set_vp(vps, {o.package, *value, "0"});
    origins[o.package] = std::string(o.variable) + "=" + *value;
  }
  if (auto arch = getenv("CONDA_OVERRIDE_ARCHSPEC"); arch && platform != "noarch") {
    if (arch->empty()) {
      remove_vp(vps, "__archspec");
    } else {
      if (!VirtualPackage::parse("__archspec=1=" + *arch))
        return Error{ErrorKind::Parse, "CONDA_OVERRIDE_ARCHSPEC", "'" + *arch + "' is not a microarchitecture", "",
                     "set CONDA_OVERRIDE_ARCHSPEC to a name such as x86_64_v3 (no spaces, '=', ',' or '|')"};
      set_vp(vps, {"__archspec", "1", *arch});
    }
    origins["__archspec"] = "CONDA_OVERRIDE_ARCHSPEC=" + *arch;
  }
  std::sort(vps.begin(), vps.end(), [](const VirtualPackage& a, const VirtualPackage& b) { return a.name < b.name; });
  if (origins_out != nullptr) {
    origins_out->clear();
    for (const auto& vp : vps) (*origins_out)[vp.name] = origins[vp.name];
  }
  return vps;
}

Status check_assumed_virtual_packages(const Manifest& manifest, const Lockfile& lockfile, const Getenv& getenv,
                                      std::vector<StaleReason>& reasons) {
  auto named = [&](const std::string& env, const std::string& platform) {
    return std::any_of(reasons.begin(), reasons.end(), [&](const StaleReason& r) {
      return r.kind == StaleReason::Kind::VirtualPackagesChanged && r.environment == env && r.platform == platform;
    });
  };
  auto listed = [](const std::vector<VirtualPackage>& vps, const std::map<std::string, std::string>* origins) {
    std::string out;
    for (const auto& vp : vps) {
      if (!out.empty()) out += ", ";
      out += vp.to_string();
      if (origins == nullptr) continue;
      auto o = origins->find(vp.name);
      if (o != origins->end() && !o->second.starts_with("assumed for ")) out += " (" + o->second + ")";
    }
    return "[" + out + "]";
  };
  for (const auto& [env_name, env] : lockfile.environments) {
    const ManifestEnvironment* menv = manifest.environment(env_name);
    if (menv == nullptr) continue;  // ExtraEnvironment, reported by check_lockfile
    if (menv->base_lockfile) continue;  // the base's virtual packages: check_base_lockfiles
    for (const auto& [platform, lp] : env.platforms) {
      if (named(env_name, platform)) continue;
      std::map<std::string, std::string> origins;
      auto now = lock_virtual_packages(manifest, platform, getenv, &origins);
      if (!now) return now.error();
      std::vector<VirtualPackage> recorded = lp.virtual_packages;
      std::sort(recorded.begin(), recorded.end(),
                [](const VirtualPackage& a, const VirtualPackage& b) { return a.name < b.name; });
      if (listed(recorded, nullptr) == listed(*now, nullptr)) continue;
      reasons.push_back({StaleReason::Kind::VirtualPackagesChanged, env_name, platform, "",
                         env_name + "/" + platform + ": virtual packages changed: a lock now assumes " +
                             listed(*now, &origins) + ", the lockfile assumed " + listed(recorded, nullptr)});
    }
  }
  return ok_status();
}

Result<Lockfile> lock_manifest(const Manifest& manifest, const LockOptions& options) {
  LockDiagnostics scratch;
  LockDiagnostics& diag = options.diagnostics != nullptr ? *options.diagnostics : scratch;
  std::optional<Host> system_host;
  const Host& host = options.host != nullptr ? *options.host : system_host.emplace(Host::system());
  const Getenv host_env = [&host](const std::string& name) { return host.env(name); };

  const Lockfile* previous = (options.previous && !options.update_all) ? &*options.previous : nullptr;
  std::set<std::string> update(options.update.begin(), options.update.end());

  // Every --update name must mean something: locked before, or requested now.
  for (const auto& name : update) {
    bool known = false;
    if (options.previous)
      for (const auto& [en, env] : options.previous->environments)
        for (const auto& [pn, plat] : env.platforms)
          for (const auto& p : plat.packages) known = known || p.name == name;
    for (const auto& [en, env] : manifest.environments)
      for (const auto& d : env.dependencies) known = known || d.spec.exact_name() == name;
    known = known || pypi_name_known(manifest, options.previous ? &*options.previous : nullptr, name);  // issue 20
    if (!known)
      return Error{ErrorKind::Usage, name, "--update names a package that is neither locked nor requested", "",
                   "check the spelling against `envlock list`"};
  }

  // The GPU hint: only when some platform of the host's kind lacks a declared __cuda.
  bool cuda_declared_everywhere = true;
  for (const auto& [en, env] : manifest.environments)
    for (const auto& p : env.base_lockfile ? std::vector<std::string>{} : manifest.platforms_for(env)) {
      // (an environment on a base lockfile assumes the base's virtual packages: no hint for it)
      if (!(p.starts_with("linux-") || p.starts_with("win-"))) continue;
      bool has = false;
      for (const auto& vp : manifest.virtual_packages_for(p)) has = has || vp.name == "__cuda";
      cuda_declared_everywhere = cuda_declared_everywhere && has;
    }
  if (!cuda_declared_everywhere) {
    auto driver = host.cuda_driver_version ? host.cuda_driver_version() : std::nullopt;
    if (driver)
      diag.hints.push_back("this host has an NVIDIA driver supporting CUDA " + *driver +
                           ", but the manifest declares no __cuda: the lock assumes no GPU; add "
                           "`virtual-packages: {linux-64: [__cuda=" + *driver +
                           "]}` to lock GPU builds");
  }

  std::map<std::string, std::vector<SubdirRepodata>> loaded;  // repo_key -> repodata
  Lockfile lock;
  lock.manifest_hash = manifest_hash(manifest);
  // Local channels that travel with the checkout: the manifest's and its bases' (issue 18).
  std::set<std::string> relative_channels;
  for (auto& c : relative_channel_urls(manifest)) relative_channels.insert(std::move(c));
  for (auto& c : relative_find_links_urls(manifest)) relative_channels.insert(std::move(c));  // wheels (issue 20)

  for (const auto& env_name : manifest.layer_order()) {
    const ManifestEnvironment& env = *manifest.environment(env_name);
    const auto& channels = manifest.channels_for(env);
    LockedEnvironment le;
    le.name = env.name;
    le.base = env.base;
    for (const auto& d : env.dependencies) le.requested.push_back(d.text);
    if (env.name == "default" || manifest.environments.size() == 1) le.reference = manifest.reference;

    // A base from another project's lockfile (issue 18): its platforms, virtual packages, pins.
    std::optional<BaseLockfile> external;
    std::vector<std::string> platforms = manifest.platforms_for(env);
    if (env.base_lockfile) {
      auto b = load_base_lockfile(manifest, env, options.repodata);
      if (!b) return b.error();
      external = std::move(*b);
      std::string unchecked;
      auto chain = walk_base_chain(manifest, env.name, *external, options.lockfile, options.repodata, &unchecked);
      if (!chain) return chain.error();
      if (*chain)  // its owners', not ours, to fix
        diag.warnings.push_back(**chain + ": this lock keeps the pins it passes on as they are; ask its owners to lock it again");
      if (!unchecked.empty()) diag.warnings.push_back(printable(unchecked));
      auto p = base_platforms_for(manifest, env, *external);
      if (!p) return p.error();
      platforms = std::move(*p);
      // Credential-free, as every URL of a lockfile (conda-lock and pixi strip a URL's user:token@
      // too): the manifest's spelling keeps them for fetching only (attack on issue 18, A11).
      le.base_lockfile = LockedBase{redact_url(env.base_lockfile->lockfile), env.base_lockfile->environment, external->sha256};
      for (auto& c : external->relative_channels()) relative_channels.insert(std::move(c));
    }

    for (const auto& platform : platforms) {
      std::map<std::string, std::string> vp_origins;
      auto vps = lock_virtual_packages(manifest, platform, host_env, &vp_origins);
      if (!vps) return vps.error();
      const LockedPlatform* external_platform =
          external ? &external->environment().platforms.at(platform) : nullptr;
      if (external_platform != nullptr) {
        *vps = external_platform->virtual_packages;
        vp_origins.clear();
        for (const auto& vp : *vps) vp_origins[vp.name] = "locked in " + external->describe() + " for " + platform;
      }
      // An override in the caller's environment is part of this lock only: say so, once.
      for (const auto& vp : *vps) {
        const std::string& origin = vp_origins[vp.name];
        if (!origin.starts_with("CONDA_OVERRIDE_")) continue;
        std::string hint = origin + " decides " + vp.name + " for " + platform +
                           ": the lockfile records it, and a check or lock without it assumes otherwise "
                           "(`envlock lock --check` calls the lockfile stale); declare `virtual-packages: {" +
                           platform + ": [" + vp.name + "=" + vp.version + "]}` in the manifest to make it the project's";
        if (std::find(diag.hints.begin(), diag.hints.end(), hint) == diag.hints.end()) diag.hints.push_back(hint);
      }

      std::string key = repo_key(channels, platform);
      auto it = loaded.find(key);
      if (it == loaded.end()) {
        RepodataOptions ro = options.repodata;
        ro.lazy = true;  // records are parsed per name, only for the names a solve reaches
        auto repodata = load_repodata(channels, {platform}, ro);
        if (!repodata) return repodata.error();
        it = loaded.emplace(key, std::move(*repodata)).first;
      }

      SolveTask task;
      task.channel_priority = manifest.channel_priority;
      task.virtual_packages = *vps;
      task.virtual_origins = vp_origins;
      std::map<std::string, int> rank;
      for (const auto& c : channels) rank.emplace(c.public_url(), static_cast<int>(rank.size()));
      for (const auto& sd : it->second) {
        if (!sd.present) continue;
        task.repos.push_back({sd.channel, sd.subdir, rank[sd.channel], nullptr, sd.index.get()});
      }
      for (const auto& d : env.dependencies)
        if (d.applies_to(platform)) task.specs.push_back({spec_for_channels(d.spec, channels), d.text, d.location.to_string()});

      if (!env.base.empty()) {
        const LockedPlatform* base = find_locked(lock, env.base, platform);
        if (base == nullptr)
          return Error{ErrorKind::Usage, describe_location(manifest, env),
                       "environment '" + env.name + "' builds on '" + env.base + "', which is not locked for " +
                           platform,
                       "", "list " + platform + " in the platforms of '" + env.base + "' too"};
        for (const auto& p : base->packages) task.pinned.push_back({static_cast<const RepoDataRecord&>(p), p.layer});
      }
      if (external_platform != nullptr)
        for (const auto& p : external_platform->packages)
          task.pinned.push_back({static_cast<const RepoDataRecord&>(p), "base:" + p.layer});
      if (previous != nullptr)
        if (const LockedPlatform* prev = find_locked(*previous, env.name, platform))
          for (const auto& p : prev->packages)
            if (update.count(p.name) == 0) task.preferred.push_back(p);

      // Sharded channels (CEP-16): fetch the shards the solve can reach, in parallel batches,
      // before the solver walks the same names one by one.
      {
        std::vector<std::string> roots;
        for (const auto& s : task.specs) roots.push_back(s.spec.exact_name());
        for (const auto& p : task.pinned) roots.push_back(p.record.name);
        if (auto fetched = prefetch_shards(it->second, roots); !fetched) return fetched.error();
      }
      auto outcome = solve(task);
      if (!outcome) return outcome.error();
      for (const auto& sd : it->second)  // a shard the solver reached that could not be fetched
        if (sd.index && sd.index->sharded())
          if (auto err = sd.index->first_error(); err && err->kind != ErrorKind::Parse) return *err;
      // Records skipped among the names this solve parsed (each reported once).
      for (const auto& sd : it->second)
        if (sd.index)
          for (auto& w : sd.index->warnings())
            if (std::find(diag.warnings.begin(), diag.warnings.end(), w) == diag.warnings.end())
              diag.warnings.push_back(std::move(w));
      if (!outcome->solved) {
        std::string text = outcome->explanation.to_text("  ");
        if (!text.empty() && text.back() == '\n') text.pop_back();
        diag.conflict = LockDiagnostics::Conflict{env.name, platform, outcome->explanation};
        // A requested name no channel has is not a conflict (solve() reports it as a Missing
        // node, "no package named 'X' ..."): name it, the channels and platforms searched, and
        // where it was written.
        // Likewise a request no version matches ("no package matches 'X >=9'", with the versions
        // that exist): nothing conflicts, the spec asks for what the channels do not have.
        std::string where_channels;
        for (const auto& c : channels) where_channels += (where_channels.empty() ? "" : ", ") + c.public_url();
        const std::string searched = where_channels + " (" + platform + " and noarch)";
        for (const auto& root : outcome->explanation.roots) {
          if (root.kind != ProblemNode::Kind::Requested) continue;
          const std::string where = root.detail.empty() ? describe_location(manifest, env) : root.detail;
          for (const auto& child : root.children) {
            if (child.kind != ProblemNode::Kind::Missing) continue;
            static constexpr std::string_view kNoPackage = "no package named '";
            if (child.detail.starts_with(kNoPackage)) {
              const std::size_t close = child.detail.find('\'', kNoPackage.size());
              if (close == std::string::npos) continue;
              const std::string name = child.detail.substr(kNoPackage.size(), close - kNoPackage.size());
              // `lo::a` where no channel answers to `lo`: the name may be fine and the channel
              // part the cause (a directory channel has no name but its file:// URL, as in conda).
              if (auto spec = MatchSpec::parse(root.text); spec && spec->channel)
                return Error{ErrorKind::Unsatisfiable, where,
                             "no package named '" + name + "' in a channel named '" + redact_url(*spec->channel) +
                                 "' (the channel part of '" + redact_text(root.text) + "'); searched " + searched,
                             text,
                             "name a channel of the manifest: a named channel (conda-forge), a channel's URL "
                             "(file:///... for a directory), or the NAME of a `{url: ..., name: NAME}` entry"};
              return Error{ErrorKind::Unsatisfiable, where, "no package named '" + name + "' in " + searched, text,
                           "check the name's spelling; `envlock search '" + name +
                               "*' -c CHANNEL` lists what a channel has"};
            }
            static constexpr std::string_view kNoMatch = "no package matches '";
            static constexpr std::string_view kExisting = "versions that exist: ";
            if (child.text.starts_with(kNoMatch) && child.detail.starts_with(kExisting)) {
              return Error{ErrorKind::Unsatisfiable, where,
                           "no package matches '" + root.text + "' in " + searched + "; " + child.detail, text,
                           "relax the version or build in the spec, or add a channel that has the version you need"};
            }
          }
        }
        if (external) {
          // A conflict with a pin of the base lockfile: name the base, the pin and the spec.
          const ProblemNode* pinned = nullptr;
          const ProblemNode* requested = nullptr;
          // The spec whose tree runs into a base pin, else the first one.
          std::function<bool(const ProblemNode&)> meets_pin = [&](const ProblemNode& n) {
            if (n.kind == ProblemNode::Kind::Conflict && n.text.find("(pinned by the base layer 'base:") != std::string::npos)
              return true;
            return std::any_of(n.children.begin(), n.children.end(), meets_pin);
          };
          for (const auto& root : outcome->explanation.roots) {
            if (root.kind == ProblemNode::Kind::Pinned && root.detail.starts_with("base:") && pinned == nullptr)
              pinned = &root;
            if (root.kind == ProblemNode::Kind::Requested && (requested == nullptr || (!meets_pin(*requested) && meets_pin(root))))
              requested = &root;
          }
          if (pinned != nullptr || requested != nullptr) {
            std::string spec = requested != nullptr ? "'" + requested->text + "'" : "the project's specs";
            std::string where = requested != nullptr && !requested->detail.empty() ? requested->detail
                                                                                    : describe_location(manifest, env);
            std::string record = pinned != nullptr ? pinned->text : "its pins";
            return Error{ErrorKind::Unsatisfiable, where,
                         "cannot solve environment '" + env.name + "' for " + platform + ": the project spec " + spec +
                             " conflicts with " + record + ", pinned by " + external->describe(),
                         text,
                         "change the spec " + spec + " so that " + record + " fits it, or ask the owners of " +
                             redact_url(external->base.lockfile) + " for a new base (environment " +
                             external->base.environment + ") that fits " + spec};
          }
        }
        return Error{ErrorKind::Unsatisfiable, describe_location(manifest, env),
                     "cannot solve environment '" + env.name + "' for " + platform +
                         ": the requested packages conflict",
                     text,
                     env.base.empty() ? "relax one of the specs named above"
                                      : "relax one of the specs named above, or change the base layer '" + env.base +
                                            "' and lock again"};
      }

      variant_warnings(task, outcome->solution,
                       options.previous ? find_locked(*options.previous, env.name, platform) : nullptr,
                       env.name + "/" + platform, diag.warnings);

      LockedPlatform lp;
      lp.platform = platform;
      for (const auto& c : channels) lp.channels.push_back(c.public_url());
      for (const auto& c : channels) lp.channel_names.push_back(c.name);  // a mirror's NAME, or ""
      if (std::all_of(lp.channel_names.begin(), lp.channel_names.end(), [](const std::string& n) { return n.empty(); }))
        lp.channel_names.clear();
      lp.virtual_packages = *vps;
      for (const auto& sp : outcome->solution.packages) {
        LockedPackage pkg;
        static_cast<RepoDataRecord&>(pkg) = *sp.record;
        pkg.url = redact_url(pkg.url);
        pkg.channel = redact_url(pkg.channel);
        pkg.layer = sp.from_pin ? task.pinned[sp.index].layer : env.name;
        lp.packages.push_back(std::move(pkg));
      }
      std::sort(lp.packages.begin(), lp.packages.end(),
                [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
      lp.pip = env.pip;
      std::sort(lp.pip.begin(), lp.pip.end(), [](const PipPackage& a, const PipPackage& b) { return a.name < b.name; });
      {  // PyPI requirements, for this solution's python (issue 20; src/lock/pypi.cpp)
        std::vector<const RepoDataRecord*> solved;
        for (const auto& sp : outcome->solution.packages) solved.push_back(sp.record);
        if (auto st = lock_pypi(manifest, env, platform, *vps, solved, previous ? find_locked(*previous, env.name, platform) : nullptr,
                                update, options.repodata, lp);
            !st)
          return st.error();
      }
      le.platforms.emplace(platform, std::move(lp));
    }
    lock.environments.emplace(env.name, std::move(le));
  }
  lock.relative_channels.assign(relative_channels.begin(), relative_channels.end());
  return lock;
}

}  // namespace envlock
