// The conda part of a snapshot as a Lockfile (snapshot lock, and the first half of the file).
#include <algorithm>

#include "envlock/snapshot.hpp"

namespace envlock {

namespace {

// The capture host's virtual packages, as conda would have detected them there.
std::vector<VirtualPackage> host_virtual_packages(const HostFacts& h) {
  std::vector<VirtualPackage> v;
  if (h.platform.starts_with("linux-")) {
    v.push_back({"__unix", "0", "0"});
    if (!h.kernel.empty()) {
      std::size_t end = 0;
      while (end < h.kernel.size() && (std::isdigit(static_cast<unsigned char>(h.kernel[end])) || h.kernel[end] == '.')) ++end;
      std::string k = h.kernel.substr(0, end);
      while (!k.empty() && k.back() == '.') k.pop_back();
      if (!k.empty()) v.push_back({"__linux", k, "0"});
    }
    if (!h.glibc.empty()) v.push_back({"__glibc", h.glibc, "0"});
  }
  if (!h.cpu_level.empty()) v.push_back({"__archspec", "1", h.cpu_level});
  if (h.nvidia && !h.nvidia->cuda_version.empty()) v.push_back({"__cuda", h.nvidia->cuda_version, "0"});
  std::sort(v.begin(), v.end(), [](const VirtualPackage& a, const VirtualPackage& b) { return a.name < b.name; });
  return v;
}

}  // namespace

Lockfile to_lockfile(const Snapshot& snapshot) {
  Lockfile lock;
  const auto virtuals = host_virtual_packages(snapshot.host);
  for (const auto& env : snapshot.environments) {
    LockedEnvironment le;
    le.name = env.name;
    LockedPlatform lp;
    lp.platform = env.platform;
    lp.virtual_packages = virtuals;
    std::vector<std::string> channels;
    for (const auto& p : env.packages) {
      if (!p.shadowed_by.empty()) continue;  // pip's install is what ran there
      LockedPackage lpkg;
      static_cast<RepoDataRecord&>(lpkg) = p.record;
      lpkg.layer = env.name;
      lp.packages.push_back(std::move(lpkg));
      if (!p.record.channel.empty() && std::find(channels.begin(), channels.end(), p.record.channel) == channels.end()) {
        channels.push_back(p.record.channel);
      }
    }
    std::sort(channels.begin(), channels.end());
    lp.channels = channels;
    for (const auto& d : env.pip) {
      PipPackage pp = to_pip_package(d);
      pp.name = d.normalized_name();
      lp.pip.push_back(std::move(pp));
    }
    std::sort(lp.packages.begin(), lp.packages.end(), [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
    std::sort(lp.pip.begin(), lp.pip.end(), [](const PipPackage& a, const PipPackage& b) { return a.name < b.name; });
    le.platforms[env.platform] = std::move(lp);
    lock.environments[env.name] = std::move(le);
  }
  return lock;
}

}  // namespace envlock
