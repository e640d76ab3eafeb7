#pragma once
// tests/support/lockfile_fixtures.hpp — small lockfiles built in memory for tests that need one
// without solving. Header-only; usable by every suite that links the lockfile module.
#include <optional>
#include <string>
#include <vector>

#include "envlock/lockfile.hpp"

namespace envlock::testing {

/// A lockfile with one environment "default" for linux-64 holding one package, tool 1.2 h0_0
/// (tool-1.2-h0_0.conda, sha256 "aa…a"), from `channel` (a channel URL, e.g. "file:///x/channel";
/// the package URL is `channel/linux-64/tool-1.2-h0_0.conda`). The platform's channel list is
/// `channel` followed by `more_channels`.
inline Lockfile one_package_lockfile(const std::string& channel, const std::vector<std::string>& more_channels = {}) {
  LockedPackage p;
  p.name = "tool";
  p.version = Version::parse("1.2").value();
  p.build = "h0_0";
  p.subdir = "linux-64";
  p.channel = channel;
  p.file_name = "tool-1.2-h0_0.conda";
  p.url = channel + "/linux-64/" + p.file_name;
  p.sha256 = std::string(64, 'a');
  p.layer = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.channels = {channel};
  lp.channels.insert(lp.channels.end(), more_channels.begin(), more_channels.end());
  lp.packages = {p};
  Lockfile lf;
  lf.environments["default"] = LockedEnvironment{"default", "", {"tool"}, {{"linux-64", lp}}, std::nullopt};
  return lf;
}

}  // namespace envlock::testing
