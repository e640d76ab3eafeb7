// The PyPI step of a lock (issue 20 point 2; docs/pypi.md): after an environment x platform's
// conda solve, its PyPI requirements are resolved for the solution's python (envlock/pypi_resolve.hpp)
// and pinned as pip entries that `envlock install` installs (a wheel url and its sha256).
#include "pypi_step.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "envlock/pypi_index.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/pypi_resolve.hpp"
#include "envlock/pypi_version.hpp"
#include "envlock/url.hpp"

namespace envlock {

Status lock_pypi(const Manifest& manifest, const ManifestEnvironment& env, const std::string& platform,
                 const std::vector<VirtualPackage>& vps, const std::vector<const RepoDataRecord*>& solution,
                 const LockedPlatform* previous, const std::set<std::string>& update, const RepodataOptions& repodata,
                 LockedPlatform& out) {
  if (env.pypi_dependencies.empty()) return ok_status();
  const RepoDataRecord* python = nullptr;
  for (const auto* r : solution)
    if (r->name == "python") python = r;
  const std::string where = env.pypi_dependencies.front().location.to_string();
  if (python == nullptr)
    return Error{ErrorKind::Usage, where, "environment '" + env.name + "' has pypi-dependencies but its conda packages for " + platform +
                                             " hold no python", "", "add python to its dependencies"};
  auto target = PypiTarget::for_conda(python->version.to_string(), python->build, platform, vps);
  if (!target) return target.error();
  PypiResolveInput in;
  in.target = *target;
  for (const auto& r : env.pypi_dependencies) {
    auto req = Pep508Requirement::parse(r.text);
    if (!req) return Error{ErrorKind::Parse, r.location.to_string(), req.error().message, req.error().detail,
                           "write a PEP 508 requirement, e.g. requests>=2.31"};
    in.requests.push_back({*req, r.text, r.location.to_string()});
  }
  for (const auto* r : solution)
    if (auto c = conda_pypi_provides(*r)) in.conda.push_back(*c);
  std::set<std::string> freed;  // --update names, as PEP 503 compares them (`Helper` is `helper`)
  for (const auto& u : update) freed.insert(pep503_normalize(u));
  if (previous != nullptr)
    for (const auto& p : previous->pip)
      if (!p.version.empty() && !p.sha256.empty() && freed.count(pep503_normalize(p.name)) == 0)
        in.preferred[pep503_normalize(p.name)] = p.version;
  PypiSources sources;
  for (const auto& l : manifest.pypi_indexes_for(env)) sources.indexes.push_back(l.url);
  for (const auto& l : manifest.find_links_for(env)) sources.find_links.push_back(l.url);
  PypiIndexOptions options;
  options.offline = repodata.offline;
  options.fetch = repodata.fetch;
  if (!repodata.cache_dir.empty()) options.cache_dir = repodata.cache_dir / "pypi";
  PypiIndex index(sources, options);
  auto res = resolve_pypi(in, index);
  if (!res) {
    Error e = res.error();
    e.message = env.name + "/" + platform + ": " + e.message;
    return e;
  }
  // What uv.lock (`wheels`: url, hash, size; `source.registry`) and pixi.lock (url, sha256,
  // requires_dist, requires_python) record of a PyPI package, and what required it.
  for (const auto& pin : res->pins) {
    PipPackage p;
    p.name = pin.name;
    p.version = pin.version;
    p.url = redact_url(pin.file.url);
    p.file_name = pin.file.filename;
    p.sha256 = pin.file.sha256;
    p.size = pin.file.size;
    p.index = redact_url(find_links_location_url(pin.file.index));
    p.requires_dist = pin.metadata.requires_dist;
    p.requires_python = pin.metadata.requires_python;
    p.required_by = pin.required_by;
    out.pip.push_back(std::move(p));
  }
  std::sort(out.pip.begin(), out.pip.end(), [](const PipPackage& a, const PipPackage& b) { return a.name < b.name; });
  // The indexes resolved against, primary first (pixi.lock writes them as `indexes`), so a relock
  // or a review sees where the pins came from: written only for a platform with PyPI pins.
  out.pypi_indexes.clear();
  if (!res->pins.empty())
    for (const auto& ix : sources.indexes) out.pypi_indexes.push_back(redact_url(ix));
  return ok_status();
}

bool pypi_name_known(const Manifest& manifest, const Lockfile* previous, const std::string& name) {
  const std::string n = pep503_normalize(name);
  if (previous != nullptr)
    for (const auto& [env_name, env] : previous->environments)
      for (const auto& [platform, lp] : env.platforms)
        for (const auto& p : lp.pip)
          if (!p.name.empty() && pep503_normalize(p.name) == n) return true;
  for (const auto& [env_name, env] : manifest.environments)
    for (const auto& r : env.pypi_dependencies)
      if (auto req = Pep508Requirement::parse(r.text); req && req->normalized_name() == n) return true;
  return false;
}

std::string find_links_location_url(const std::string& location) {
  if (location.empty() || location.find("://") != std::string::npos) return location;
  std::string path = std::filesystem::absolute(location).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return file_url_from_path(path);
}

std::vector<std::string> relative_find_links_urls(const Manifest& manifest) {
  std::vector<std::string> out;
  auto add = [&](const std::vector<PypiLocation>& locations) {
    for (const auto& l : locations) {
      const std::string& w = l.written;
      if (w.empty() || w.find("://") != std::string::npos || w.starts_with('/') || w.starts_with('~')) continue;
      out.push_back(find_links_location_url(l.url));
    }
  };
  add(manifest.find_links);
  for (const auto& [name, env] : manifest.environments)
    if (env.find_links) add(*env.find_links);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

std::string where_written(const SourceLocation& at) {
  std::string file = std::filesystem::path(at.file).filename().string();
  if (file.empty()) file = "manifest";
  return at.line > 0 ? file + " line " + std::to_string(at.line) : file;
}

/// What meets a requirement on one name: a pip pin or a conda record.
struct Provider {
  std::string version;
  std::string shown;  ///< "demo-app 1.2" or "conda package six 1.16.0"
};

}  // namespace

void check_pypi_requirements(const Manifest& manifest, const Lockfile& lockfile, std::vector<StaleReason>& out) {
  using K = StaleReason::Kind;
  for (const auto& [env_name, env] : manifest.environments) {
    const auto locked_env = lockfile.environments.find(env_name);
    if (locked_env == lockfile.environments.end()) continue;  // missing-environment says it
    std::set<std::string> wanted;
    std::vector<std::pair<const PypiRequested*, Pep508Requirement>> requests;
    for (const auto& r : env.pypi_dependencies) {
      auto req = Pep508Requirement::parse(r.text);
      if (!req) continue;  // `envlock lock` names it at its line
      wanted.insert(req->normalized_name());
      requests.emplace_back(&r, std::move(*req));
    }
    for (const auto& [platform, lp] : locked_env->second.platforms) {
      const std::vector<std::string> platforms = manifest.platforms_for(env);
      if (std::find(platforms.begin(), platforms.end(), platform) == platforms.end()) continue;
      const std::string ctx = env_name + "/" + platform;
      // Pins the lock made for a requirement the manifest no longer has.
      for (const auto& p : lp.pip) {
        if (p.version.empty() || std::find(p.required_by.begin(), p.required_by.end(), "(manifest)") == p.required_by.end()) continue;
        if (wanted.count(pep503_normalize(p.name))) continue;
        bool needed = false;  // still pulled in by another pin
        for (const auto& by : p.required_by) needed = needed || by != "(manifest)";
        out.push_back({K::ManifestHash, env_name, platform, "pypi:" + p.name,
                       ctx + ": PyPI package " + p.name + " " + p.version + " is locked for a requirement the manifest no longer has" +
                           (needed ? " (other pins still require it)" : "")});
      }
      if (requests.empty()) continue;
      const LockedPackage* python = nullptr;
      for (const auto& r : lp.packages)
        if (r.name == "python") python = &r;
      if (python == nullptr) continue;  // the lock names it (no python for pypi-dependencies)
      auto target = PypiTarget::for_conda(python->version.to_string(), python->build, platform, lp.virtual_packages);
      if (!target) continue;
      std::map<std::string, Provider> providers;
      std::map<std::string, const PipPackage*> pins;
      for (const auto& r : lp.packages)
        if (auto c = conda_pypi_provides(r)) providers[c->name] = {c->version, "conda package " + r.name + " " + c->version};
      for (const auto& p : lp.pip)
        if (!p.name.empty() && !p.version.empty()) {
          providers[pep503_normalize(p.name)] = {p.version, p.name + " " + p.version};
          pins[pep503_normalize(p.name)] = &p;
        }
      // Whether `req` is met; the reason's text when not ("" when met).
      auto unmet = [&](const Pep508Requirement& req) -> std::optional<std::string> {
        const auto it = providers.find(req.normalized_name());
        if (it == providers.end()) return std::string();
        auto v = Pep440Version::parse(it->second.version);
        if (!v || req.specifier.contains(*v, true)) return std::nullopt;
        return it->second.shown;
      };
      // The extras each name is asked for, by the manifest and by the pins' requirements.
      std::map<std::string, std::set<std::string>> extras;
      for (const auto& [r, req] : requests)
        if (req.applies(target->markers)) extras[req.normalized_name()].insert(req.extras.begin(), req.extras.end());
      for (const auto& [name, p] : pins)
        for (const auto& text : p->requires_dist)
          if (auto req = Pep508Requirement::parse(text); req && req->applies(target->markers))
            extras[req->normalized_name()].insert(req->extras.begin(), req->extras.end());
      for (const auto& [r, req] : requests) {
        if (!req.url.empty() || !req.applies(target->markers)) continue;
        const auto why = unmet(req);
        if (!why) continue;
        out.push_back({K::SpecNotSatisfied, env_name, platform, "pypi:" + req.normalized_name(),
                       why->empty() ? r->text + " (" + where_written(r->location) + ") is not satisfied: no PyPI package " +
                                          req.normalized_name() + " is locked for " + ctx
                                    : r->text + " (" + where_written(r->location) + ") is not satisfied by locked " + *why + " (" +
                                          ctx + ")"});
      }
      for (const auto& [name, p] : pins) {
        const std::set<std::string>& asked = extras[name];
        for (const auto& text : p->requires_dist) {
          auto req = Pep508Requirement::parse(text);
          if (!req) continue;
          bool applies = req->applies(target->markers);
          for (const auto& e : asked) applies = applies || req->applies(target->markers, e);
          if (!applies || !req->url.empty()) continue;
          const auto why = unmet(*req);
          if (!why) continue;
          const std::string pin = p->name + " " + p->version;
          if (why->empty())
            out.push_back({K::DependencyMissing, env_name, platform, "pypi:" + p->name,
                           ctx + ": PyPI package " + pin + " requires '" + text + "' but no " + req->normalized_name() + " is locked"});
          else
            out.push_back({K::DependencyNotSatisfied, env_name, platform, "pypi:" + p->name,
                           ctx + ": PyPI package " + pin + " requires '" + text + "', not satisfied by locked " + *why});
        }
      }
    }
  }
}

}  // namespace envlock
