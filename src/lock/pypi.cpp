// The PyPI step of a lock (issue 20 point 2; docs/pypi.md): after an environment x platform's
// conda solve, its PyPI requirements are resolved for the solution's python (envlock/pypi_resolve.hpp)
// and pinned as pip entries that `envlock install` installs (a wheel url and its sha256).
#include "pypi_step.hpp"

#include <algorithm>

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
  for (const auto& pin : res->pins) {
    PipPackage p;
    p.name = pin.name;
    p.version = pin.version;
    p.url = redact_url(pin.file.url);
    p.sha256 = pin.file.sha256;
    p.requires_dist = pin.metadata.requires_dist;
    p.requires_python = pin.metadata.requires_python;
    out.pip.push_back(std::move(p));
  }
  std::sort(out.pip.begin(), out.pip.end(), [](const PipPackage& a, const PipPackage& b) { return a.name < b.name; });
  return ok_status();
}

}  // namespace envlock
