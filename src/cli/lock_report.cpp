// The lock report shared by `lock`, `add` and `rm` (lock_report.hpp).
#include "lock_report.hpp"

#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "envlock/url.hpp"

namespace envlock::cli {

namespace {

/// One package in two locks: "name old -> new" when its version or build moved; else, for the
/// same build, what of the record moved ("name 1.0 0 (url A -> B)", "(sha256, depends)");
/// nullopt when nothing did. URLs are compared as read (a relative channel resolved against the
/// lockfile's folder) and then as written, so a package the two files spell alike is never
/// reported.
std::optional<std::string> changed(const LockedPackage& was, const LockedPackage& now, const Spelling& spell_was,
                                   const Spelling& spell_now) {
  const std::string old_pin = was.version.to_string() + " " + was.build;
  const std::string new_pin = now.version.to_string() + " " + now.build;
  if (old_pin != new_pin || was.build_number != now.build_number) return now.name + " " + old_pin + " -> " + new_pin;
  std::vector<std::string> what;
  // (a pin of an https:// base keeps a relative spelling as written while the file read back
  // resolves it: compared as the two files write them, they are the same)
  if ((was.url != now.url && spell_was(was.url) != spell_now(now.url)) || was.file_name != now.file_name)
    what.push_back("url " + spell_was(was.url) + " -> " + spell_now(now.url));
  if (was.sha256 != now.sha256 || was.md5 != now.md5) what.emplace_back("sha256");
  if (was.depends != now.depends) what.emplace_back("depends");
  if (was.constrains != now.constrains) what.emplace_back("constrains");
  if (was.layer != now.layer) what.push_back("layer " + was.layer + " -> " + now.layer);
  if (what.empty()) return std::nullopt;
  std::string out = now.name + " " + new_pin + " (";
  for (std::size_t i = 0; i < what.size(); ++i) out += (i ? ", " : "") + what[i];
  return out + ")";
}

}  // namespace

LockChange compare_locked(const LockedPlatform* before, const LockedPlatform& after, const Spelling& spell_was,
                          const Spelling& spell_now) {
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
    } else if (auto what = changed(*it->second, p, spell_was, spell_now)) {
      c.changed.push_back(std::move(*what));
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

LockSummary summarize_lock(const Lockfile& lock, const std::optional<Lockfile>& previous,
                           const std::filesystem::path& directory) {
  LockSummary s;
  // A URL as the file holding it writes it (docs/lockfile.md, "Local channels"), credential-free.
  const Spelling spell_was = [&](const std::string& url) {
    return previous ? previous->written_locations(redact_url(url), directory) : redact_url(url);
  };
  const Spelling spell_now = [&](const std::string& url) { return lock.written_locations(redact_url(url), directory); };
  for (const auto& [env_name, env] : lock.environments) {
    for (const auto& [platform, lp] : env.platforms) {
      LockChange c = compare_locked(find_locked(previous, env_name, platform), lp, spell_was, spell_now);
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
