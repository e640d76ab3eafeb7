// The conda part of a snapshot as a Lockfile (snapshot lock, and the first half of the file).
#include <algorithm>

#include "envlock/snapshot.hpp"

namespace envlock {

Lockfile to_lockfile(const Snapshot& snapshot, ShadowedRecords shadowed) {
  Lockfile lock;
  for (const auto& env : snapshot.environments) {
    LockedEnvironment le;
    le.name = env.name;
    LockedPlatform lp;
    lp.platform = env.platform;
    lp.virtual_packages = unsolved_virtual_packages(env.platform);  // never solved: no host facts
    std::vector<std::string> channels;
    for (const auto& p : env.packages) {
      if (!p.shadowed_by.empty() && shadowed == ShadowedRecords::LeftOut) continue;
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
