// The PyPI step of a lock (issue 20 point 2; docs/pypi.md): after an environment x platform's
// conda solve, its PyPI requirements are resolved for the solution's python (envlock/pypi_resolve.hpp)
// and pinned as pip entries that `envlock install` installs (a wheel url and its sha256).
#include "pypi_step.hpp"

#include <algorithm>
#include <filesystem>

#include "envlock/pypi_index.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/pypi_resolve.hpp"
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
  if (previous != nullptr)
    for (const auto& p : previous->pip)
      if (!p.version.empty() && !p.sha256.empty() && update.count(p.name) == 0) in.preferred[pep503_normalize(p.name)] = p.version;
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
  return ok_status();
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

}  // namespace envlock
