// The lock report shared by `lock`, `add` and `rm` (lock_report.hpp).
#include "lock_report.hpp"

#include <iostream>
#include <map>
#include <set>

#include "envlock/url.hpp"

namespace envlock::cli {

LockChange compare_locked(const LockedPlatform* before, const LockedPlatform& after) {
  LockChange c;
  std::map<std::string, const LockedPackage*> old;
  if (before != nullptr)
    for (const auto& p : before->packages) old[p.name] = &p;
  std::set<std::string> seen;
  for (const auto& p : after.packages) {
    seen.insert(p.name);
    auto it = old.find(p.name);
    if (it == old.end()) {
      c.added.push_back(p.name + " " + p.version.to_string() + " " + p.build);
    } else if (it->second->file_name != p.file_name || it->second->channel != p.channel) {
      c.changed.push_back(p.name + " " + it->second->version.to_string() + " " + it->second->build + " -> " +
                          p.version.to_string() + " " + p.build);
    }
  }
  for (const auto& [name, p] : old)
    if (seen.count(name) == 0) c.removed.push_back(name + " " + p->version.to_string() + " " + p->build);
  return c;
}

const LockedPlatform* find_locked(const std::optional<Lockfile>& lock, const std::string& environment,
                                  const std::string& platform) {
  if (!lock) return nullptr;
  auto e = lock->environments.find(environment);
  if (e == lock->environments.end()) return nullptr;
  auto it = e->second.platforms.find(platform);
  return it == e->second.platforms.end() ? nullptr : &it->second;
}

LockSummary summarize_lock(const Lockfile& lock, const std::optional<Lockfile>& previous) {
  LockSummary s;
  for (const auto& [env_name, env] : lock.environments) {
    for (const auto& [platform, lp] : env.platforms) {
      LockChange c = compare_locked(find_locked(previous, env_name, platform), lp);
      s.environments[env_name][platform] = {
          {"packages", lp.packages.size()}, {"added", c.added}, {"removed", c.removed}, {"changed", c.changed}};
      s.text += "  " + env_name + " / " + platform + ": " + std::to_string(lp.packages.size()) + " packages";
      if (previous) {
        s.text += " (" + std::to_string(c.added.size()) + " added, " + std::to_string(c.removed.size()) +
                  " removed, " + std::to_string(c.changed.size()) + " changed)";
      }
      s.text += "\n";
      for (const auto& line : c.changed) s.text += "      ~ " + line + "\n";
      for (const auto& line : c.added)
        if (previous) s.text += "      + " + line + "\n";
      for (const auto& line : c.removed) s.text += "      - " + line + "\n";
    }
  }
  return s;
}

int report_conflict(const Context& ctx, const Error& error, const LockDiagnostics::Conflict& conflict) {
  if (ctx.json) {
    nlohmann::json j;
    conflict.explanation.to_json(j);
    j["environment"] = conflict.environment;
    j["platform"] = conflict.platform;
    nlohmann::json out = {{"error",
                           {{"kind", "unsatisfiable"},
                            {"where", error.where},
                            {"message", error.message},
                            {"detail", error.detail},
                            {"hint", error.hint}}},
                          {"conflict", j}};
    std::cout << redact_text(json_text(out)) << "\n";
  }
  // The tree names records of the channels: a build string may hold control bytes.
  std::cerr << "error: " << terminal_text(redact_text(error.to_string())) << "\n";
  return 1;
}

}  // namespace envlock::cli
