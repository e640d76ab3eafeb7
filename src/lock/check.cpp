// check_lockfile: does a lockfile still satisfy its manifest? No network, no solve (envlock/lock.hpp).
#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/paths.hpp"
#include "envlock/url.hpp"
#include "pypi_step.hpp"

namespace envlock {

std::string_view to_string(StaleReason::Kind kind) {
  using K = StaleReason::Kind;
  switch (kind) {
    case K::ManifestHash: return "manifest-hash";
    case K::MissingEnvironment: return "missing-environment";
    case K::ExtraEnvironment: return "extra-environment";
    case K::MissingPlatform: return "missing-platform";
    case K::ExtraPlatform: return "extra-platform";
    case K::SpecNotSatisfied: return "spec-not-satisfied";
    case K::DependencyMissing: return "dependency-missing";
    case K::DependencyNotSatisfied: return "dependency-not-satisfied";
    case K::ConstraintViolated: return "constraint-violated";
    case K::BaseChanged: return "base-changed";
    case K::BasePinMoved: return "base-pin-moved";
    case K::BaseLockfileChanged: return "base-lockfile-changed";
    case K::BaseChainChanged: return "base-chain-changed";
    case K::ChannelsChanged: return "channels-changed";
    case K::VirtualPackagesChanged: return "virtual-packages-changed";
  }
  return "unknown";
}

namespace {

/// A lockfile's channel as the manifest's resolves: a file:// URL in its encoded spelling (a
/// lockfile from before envlock encoded them holds `file:///srv/my chan`), credential-free.
std::string comparable_channel(const std::string& c) {
  if (c.size() > 7 && (c[0] == 'f' || c[0] == 'F'))
    if (auto path = path_from_file_url(c)) return file_url_from_path(*path);
  return redact_url(c);
}

using K = StaleReason::Kind;

std::string pin(const LockedPackage& p) {
  return p.name + " " + p.version.to_string() + " " + p.build;
}

std::string where_requested(const RequestedSpec& rs) {
  std::string file = std::filesystem::path(rs.location.file).filename().string();
  if (file.empty()) file = "manifest";
  if (rs.location.line > 0) return file + " line " + std::to_string(rs.location.line);
  return file;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

/// Parsed `depends` / `constrains` strings, parsed once per distinct text.
class SpecCache {
 public:
  const Result<MatchSpec>& get(const std::string& text) {
    auto it = cache_.find(text);
    if (it == cache_.end()) it = cache_.emplace(text, MatchSpec::parse(text)).first;
    return it->second;
  }

 private:
  std::map<std::string, Result<MatchSpec>> cache_;
};

class Checker {
 public:
  Checker(const Manifest& m, const Lockfile& l) : m_(m), l_(l) {}

  std::vector<StaleReason> run() {
    const std::string want = manifest_hash(m_);
    if (l_.manifest_hash != want)
      add(K::ManifestHash, "", "", "",
          "the manifest changed since the lock (lockfile has " + (l_.manifest_hash.empty() ? "no hash" : l_.manifest_hash) +
              ", the manifest now hashes to " + want + ")");
    for (const auto& [name, env] : m_.environments) {
      auto it = l_.environments.find(name);
      if (it == l_.environments.end()) {
        add(K::MissingEnvironment, name, "", "", "environment '" + name + "' of the manifest is not in the lockfile");
        continue;
      }
      environment(env, it->second);
    }
    for (const auto& [name, env] : l_.environments)
      if (!m_.environments.count(name))
        add(K::ExtraEnvironment, name, "", "", "environment '" + name + "' is locked but no longer in the manifest");
    // The hash alone says nothing a person can act on: when no other reason names what changed,
    // say which inputs are the same, so what is left is an input the lockfile does not record.
    // A base lockfile named anew is check_base_lockfiles()' reason (it reads the base): the hash
    // reason must not call the base unchanged next to it (attack on issue 18, L6).
    const bool base_renamed = std::any_of(m_.environments.begin(), m_.environments.end(), [&](const auto& e) {
      const auto it = l_.environments.find(e.first);
      if (it == l_.environments.end() || !e.second.base_lockfile || !it->second.base_lockfile) return false;
      return redact_url(e.second.base_lockfile->lockfile) != it->second.base_lockfile->lockfile ||
             e.second.base_lockfile->environment != it->second.base_lockfile->environment;
    });
    if (out_.size() == 1 && out_[0].kind == K::ManifestHash && out_[0].environment.empty() && !base_renamed)
      out_[0].message += "; every spec, channel, platform, virtual package and base the lockfile records is unchanged, so "
                         "the change is in the channel priority, a selector or a pip entry";
    return std::move(out_);
  }

 private:
  void add(K kind, const std::string& env, const std::string& platform, const std::string& package, std::string message) {
    out_.push_back(StaleReason{kind, env, platform, package, std::move(message)});
  }

  void environment(const ManifestEnvironment& env, const LockedEnvironment& locked) {
    if (env.base != locked.base)
      add(K::BaseChanged, env.name, "", "",
          "environment '" + env.name + "' is built on " + (env.base.empty() ? "no base" : "'" + env.base + "'") +
              " in the manifest but on " + (locked.base.empty() ? "no base" : "'" + locked.base + "'") + " in the lockfile");
    // The specs as written (the lockfile records the manifest's text of each).
    if (!locked.requested.empty()) {
      std::vector<std::string> want;
      for (const auto& rs : env.dependencies) want.push_back(rs.text);
      std::vector<std::string> have = locked.requested;
      std::sort(want.begin(), want.end());
      std::sort(have.begin(), have.end());
      // Compared in MatchSpec's canonical form, as the manifest hash is: `lib >=1` and `lib>=1`
      // are one spec (a new-user attack, session 9: a re-spaced spec failed `--check` in CI).
      std::map<std::string, std::string> want_by_form, have_by_form;  // canonical -> as written
      auto canonical = [](const std::string& text) {
        auto ms = MatchSpec::parse(text);
        return ms ? ms->to_string() : text;
      };
      for (const auto& w : want) want_by_form.emplace(canonical(w), w);
      for (const auto& h : have) have_by_form.emplace(canonical(h), h);
      std::vector<std::string> added, removed;
      for (const auto& [form, text] : want_by_form)
        if (!have_by_form.count(form)) added.push_back(text);
      for (const auto& [form, text] : have_by_form)
        if (!want_by_form.count(form)) removed.push_back(text);
      if (!added.empty() || !removed.empty()) {
        std::string what;
        for (const auto& a : added) what += (what.empty() ? "" : ", ") + std::string("'") + a + "' added";
        for (const auto& r : removed) what += (what.empty() ? "" : ", ") + std::string("'") + r + "' removed";
        // A manifest-hash reason of its own: which part of the hashed inputs changed.
        add(K::ManifestHash, env.name, "", "", "environment '" + env.name + "': specs changed since the lock: " + what);
      }
    }
    if (env.base_lockfile.has_value() != locked.base_lockfile.has_value()) {
      auto named = [](const std::optional<ExternalBase>& m, const std::optional<LockedBase>& l) {
        if (m) return "the base lockfile " + redact_url(m->lockfile) + " (environment " + m->environment + ")";
        if (l) return "the base lockfile " + redact_url(l->lockfile) + " (environment " + l->environment + ")";
        return std::string("no base lockfile");
      };
      add(K::BaseChanged, env.name, "", "",
          "environment '" + env.name + "' is built on " + named(env.base_lockfile, std::nullopt) +
              " in the manifest but on " + named(std::nullopt, locked.base_lockfile) + " in the lockfile");
    }
    // On a base lockfile, unless the manifest names them, the platforms are the base's (and the
    // virtual packages too): check_base_lockfiles() compares those with the base itself.
    std::vector<std::string> platforms = m_.platforms_for(env);
    if (env.base_lockfile && !env.platforms && m_.platforms_from_host) {
      platforms.clear();
      for (const auto& [p, lp] : locked.platforms) platforms.push_back(p);
    }
    for (const auto& platform : platforms) {
      auto it = locked.platforms.find(platform);
      if (it == locked.platforms.end()) {
        add(K::MissingPlatform, env.name, platform, "",
            "environment '" + env.name + "' is not locked for " + platform);
        continue;
      }
      this->platform(env, locked, platform, it->second);
    }
    for (const auto& [platform, lp] : locked.platforms)
      if (std::find(platforms.begin(), platforms.end(), platform) == platforms.end())
        add(K::ExtraPlatform, env.name, platform, "",
            "environment '" + env.name + "' is locked for " + platform + ", which the manifest no longer lists");
  }

  void platform(const ManifestEnvironment& env, const LockedEnvironment& locked, const std::string& platform,
                const LockedPlatform& lp) {
    const std::string ctx = env.name + "/" + platform;
    // Channels, in priority order.
    std::vector<std::string> want;
    for (const auto& ch : m_.channels_for(env)) want.push_back(ch.public_url());
    std::vector<std::string> have;
    for (const auto& c : lp.channels) have.push_back(comparable_channel(c));
    if (want != have)
      add(K::ChannelsChanged, env.name, platform, "",
          ctx + ": channels changed: the manifest has [" + join(want) + "], the lockfile [" + join(have) + "]");
    // Virtual packages: each one the manifest declares for this platform was assumed as declared.
    // (The lock adds per-platform defaults for the undeclared ones; those are not compared.)
    {
      std::vector<std::string> w, h, differ;
      for (const auto& vp : lp.virtual_packages) h.push_back(vp.to_string());
      for (const auto& vp : env.base_lockfile ? std::vector<VirtualPackage>{} : m_.virtual_packages_for(platform)) {
        w.push_back(vp.to_string());
        if (std::find(h.begin(), h.end(), vp.to_string()) == h.end()) differ.push_back(vp.to_string());
      }
      std::sort(h.begin(), h.end());
      if (!differ.empty())
        add(K::VirtualPackagesChanged, env.name, platform, "",
            ctx + ": virtual packages changed: the manifest declares [" + join(w) + "], the lockfile assumed [" + join(h) + "]");
    }

    std::map<std::string, const LockedPackage*> by_name;
    for (const auto& p : lp.packages) by_name.emplace(p.name, &p);

    // Requested specs.
    for (const auto& rs : env.dependencies) {
      if (!rs.applies_to(platform)) continue;
      const std::string name = rs.spec.exact_name();
      if (!name.empty()) {
        auto it = by_name.find(name);
        if (it == by_name.end()) {
          add(K::SpecNotSatisfied, env.name, platform, name,
              rs.text + " (" + where_requested(rs) + ") is not satisfied: no " + name + " is locked for " + ctx);
        } else if (!rs.spec.matches(static_cast<const RepoDataRecord&>(*it->second))) {
          add(K::SpecNotSatisfied, env.name, platform, name,
              rs.text + " (" + where_requested(rs) + ") is not satisfied by locked " + name + " " +
                  it->second->version.to_string() + " " + it->second->build + " (" + ctx + ")");
        }
        continue;
      }
      const bool any = std::any_of(lp.packages.begin(), lp.packages.end(), [&](const LockedPackage& p) {
        return rs.spec.matches(static_cast<const RepoDataRecord&>(p));
      });
      if (!any)
        add(K::SpecNotSatisfied, env.name, platform, "",
            rs.text + " (" + where_requested(rs) + ") is not satisfied by any locked package of " + ctx);
    }

    // depends and constrains of every locked record, inside the set.
    for (const auto& p : lp.packages) {
      for (const auto& dep : p.depends) {
        const auto& spec = specs_.get(dep);
        if (!spec) {
          add(K::DependencyNotSatisfied, env.name, platform, p.name,
              ctx + ": " + pin(p) + " depends on '" + dep + "', which cannot be read: " + spec.error().message);
          continue;
        }
        const std::string name = spec->exact_name();
        if (name.empty()) continue;  // a glob dependency: not checkable by name
        if (name.starts_with("__")) {
          virtual_dependency(env.name, platform, ctx, p, dep, *spec, lp);
          continue;
        }
        auto it = by_name.find(name);
        if (it == by_name.end()) {
          add(K::DependencyMissing, env.name, platform, p.name,
              ctx + ": " + pin(p) + " depends on '" + dep + "' but no " + name + " is locked");
        } else if (!spec->matches(static_cast<const RepoDataRecord&>(*it->second))) {
          add(K::DependencyNotSatisfied, env.name, platform, p.name,
              ctx + ": " + pin(p) + " depends on '" + dep + "', not satisfied by locked " + pin(*it->second));
        }
      }
      for (const auto& con : p.constrains) {
        const auto& spec = specs_.get(con);
        if (!spec) continue;  // conda ignores unreadable constraints too; the lock step reports them
        const std::string name = spec->exact_name();
        if (name.starts_with("__")) {
          // A constraint on a virtual package binds the one the lock assumed (absent: nothing to bind).
          auto vp = std::find_if(lp.virtual_packages.begin(), lp.virtual_packages.end(),
                                 [&](const VirtualPackage& v) { return v.name == name; });
          if (vp == lp.virtual_packages.end()) continue;
          PackageRecord r;
          r.name = vp->name;
          auto v = Version::parse(vp->version);
          if (v) r.version = std::move(*v);
          r.build = vp->build;
          r.subdir = platform;
          if (!v || !spec->matches(r))
            add(K::ConstraintViolated, env.name, platform, p.name,
                ctx + ": " + pin(p) + " constrains '" + con + "', violated by the assumed virtual package " +
                    vp->to_string());
          continue;
        }
        auto it = by_name.find(name);
        if (name.empty() || it == by_name.end()) continue;  // constrains only bind what is present
        if (!spec->matches(static_cast<const RepoDataRecord&>(*it->second)))
          add(K::ConstraintViolated, env.name, platform, p.name,
              ctx + ": " + pin(p) + " constrains '" + con + "', violated by locked " + pin(*it->second));
      }
    }

    // Base pins: every package of the base's lock for this platform, unchanged.
    if (!env.base.empty() && env.base == locked.base) {
      const LockedPlatform* base = l_.find(env.base, platform);
      if (base != nullptr) {
        for (const auto& bp : base->packages) {
          auto it = by_name.find(bp.name);
          if (it == by_name.end()) {
            add(K::BasePinMoved, env.name, platform, bp.name,
                ctx + ": base pin " + pin(bp) + " (layer " + bp.layer + ") is missing from the project layer");
          } else {
            const LockedPackage& q = *it->second;
            if (q.version.to_string() != bp.version.to_string() || q.build != bp.build || q.subdir != bp.subdir ||
                redact_url(q.url) != redact_url(bp.url) || q.sha256 != bp.sha256)
              add(K::BasePinMoved, env.name, platform, bp.name,
                  ctx + ": base pin " + pin(bp) + " (layer " + bp.layer + ") is " + pin(q) + " in the project layer");
          }
        }
      }
    }
  }

  void virtual_dependency(const std::string& env, const std::string& platform, const std::string& ctx,
                          const LockedPackage& p, const std::string& dep, const MatchSpec& spec,
                          const LockedPlatform& lp) {
    const std::string name = spec.exact_name();
    auto vp = std::find_if(lp.virtual_packages.begin(), lp.virtual_packages.end(),
                           [&](const VirtualPackage& v) { return v.name == name; });
    if (vp == lp.virtual_packages.end()) {
      add(K::DependencyMissing, env, platform, p.name,
          ctx + ": " + pin(p) + " depends on '" + dep + "' but the lock assumes no " + name + " virtual package");
      return;
    }
    PackageRecord r;
    r.name = vp->name;
    auto v = Version::parse(vp->version);
    if (!v) {
      add(K::DependencyNotSatisfied, env, platform, p.name,
          ctx + ": virtual package " + vp->to_string() + " has an unreadable version");
      return;
    }
    r.version = std::move(*v);
    r.build = vp->build;
    r.subdir = platform;
    if (!spec.matches(r))
      add(K::DependencyNotSatisfied, env, platform, p.name,
          ctx + ": " + pin(p) + " depends on '" + dep + "', not satisfied by the assumed " + vp->to_string());
  }

  const Manifest& m_;
  const Lockfile& l_;
  SpecCache specs_;
  std::vector<StaleReason> out_;
};

}  // namespace

std::vector<StaleReason> check_lockfile(const Manifest& manifest, const Lockfile& lockfile) {
  std::vector<StaleReason> out = Checker(manifest, lockfile).run();
  check_pypi_requirements(manifest, lockfile, out);  // per PyPI requirement (src/lock/pypi.cpp, issue 20)
  return out;
}

std::vector<std::string> relative_channel_urls(const Manifest& manifest) {
  std::vector<std::string> out;
  for (const auto& [name, env] : manifest.environments)
    for (const auto& ch : manifest.channels_for(env))
      if (ch.relative_directory()) out.push_back(ch.public_url());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> home_channel_warnings(const Manifest& manifest) {
  const std::filesystem::path home = home_folder();
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& [name, env] : manifest.environments)
    for (const auto& ch : manifest.channels_for(env)) {
      if (ch.kind != Channel::Kind::LocalDirectory || ch.relative_directory()) continue;
      const std::filesystem::path path = ch.local_path().lexically_normal();
      const std::string kept = tilde_path(path, home);
      if (!is_under(path, home) || !seen.insert(kept).second) continue;
      out.push_back("channel " + kept + " is in the home folder, outside the project: the lockfile records it as " + kept +
                    ", which install looks up in the home folder of whoever runs it; to make the lockfile portable, "
                    "move the channel into the project and name it by a relative path (./channel)");
    }
  return out;
}

}  // namespace envlock
