#pragma once
// The environment `envlock history`, `rollback` and `gc` work on (-p PREFIX, or -e ENV of the
// project beside -f MANIFEST: its `.envlock/envs/ENV`), and the lines they print about
// generations (envlock/generations.hpp; docs/environments.md "Generations").
#include <algorithm>
#include <filesystem>
#include <string>

#include "create_run.hpp"
#include "envlock/generations.hpp"
#include "envlock/manifest.hpp"
#include "envlock/text.hpp"
#include "install_run.hpp"
#include "registry.hpp"

namespace envlock::cli {

struct GenerationTarget {
  std::string prefix;       ///< -p
  std::string environment;  ///< -e (default: `default`)
  std::string manifest;     ///< -f (default: ./envlock.yaml): only its folder is used
};

inline void add_generation_target(CLI::App& sub, GenerationTarget& t) {
  sub.add_option("-p,--prefix", t.prefix, "the environment (default: the project's .envlock/envs/ENV)");
  sub.add_option("-e,--environment", t.environment, "the project's environment (default: default)");
  sub.add_option("-f,--file", t.manifest, "the manifest whose project holds the environment (default: envlock.yaml)");
}

/// A whole-number option of history, rollback and gc (`--to N`, `--pin N`, `--keep K`) from `min`
/// to `max`, or a usage error naming the option and the range: decimal digits only, as CLI11
/// reads integers with strtoull(.., 0) (`0x3` would be 3, `010` 8, `-1` a wrap, `''` 0: `gc
/// --keep "$UNSET"` removed every old generation) and saturates what is too large.
inline CLI::Option* add_whole_number_option(CLI::App& sub, const std::string& name, std::uint64_t& value,
                                            std::uint64_t min, std::uint64_t max, const std::string& help) {
  const CLI::Validator range(
      [min, max](std::string& v) -> std::string {
        const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
        if (digits && std::stoull(v, nullptr, 10) >= min && std::stoull(v, nullptr, 10) <= max) return "";
        return "'" + printable(v.substr(0, 40)) + (v.size() > 40 ? "..." : "") + "' is not a whole number from " +
               std::to_string(min) + " to " + std::to_string(max) + " (decimal digits)";
      },
      "");
  return sub
      .add_option_function<std::string>(
          name, [&value](const std::string& v) { value = std::stoull(v, nullptr, 10); }, help)
      ->type_name("N")
      ->check(range);
}

/// -p as given; else `.envlock/envs/<-e or default>` beside the manifest (refused, as create
/// refuses it, when the project's .envlock is a link). Errors: -p with -e or -f (ErrorKind::Usage).
inline Result<std::filesystem::path> generation_prefix(const GenerationTarget& t) {
  namespace fs = std::filesystem;
  if (!t.prefix.empty()) {
    if (!t.environment.empty() || !t.manifest.empty())
      return Error{ErrorKind::Usage, "-p", "names the environment itself; -e and -f are not read with it", "",
                   "pass either -p PREFIX or -e ENV [-f MANIFEST]"};
    return fs::absolute(t.prefix).lexically_normal();
  }
  const std::string& env = t.environment;
  const auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  };
  if (!env.empty() && (!std::all_of(env.begin(), env.end(), name_char) || !name_char(env[0]) || env[0] == '.' ||
                       env[0] == '_' || env[0] == '-'))
    return Error{ErrorKind::Usage, "-e " + env, "is not an environment name ([A-Za-z0-9][A-Za-z0-9._-]*)", "",
                 "pass the environment's name as the manifest spells it"};
  const fs::path manifest = fs::absolute(t.manifest.empty() ? "envlock.yaml" : t.manifest).lexically_normal();
  // No manifest, no project: said as run says it, not as "check the path given with -p" of a
  // folder the user never named (attack 30, F10 item 1).
  std::error_code ec;
  if (!fs::exists(manifest, ec))
    return t.manifest.empty()
               ? Error{ErrorKind::Io, "envlock.yaml", "no manifest in the current folder", "",
                       "run in the project's folder, or pass the manifest with -f or the environment with -p"}
               : Error{ErrorKind::Io, t.manifest, "no such manifest", "",
                       "pass the project's envlock.yaml with -f, or the environment with -p"};
  // An environment the manifest does not have is named as run names it (a manifest that cannot
  // be read is no reason to refuse: only its folder is used).
  if (!env.empty())
    if (auto m = load_manifest(manifest); m && m->environment(env) == nullptr) {
      std::string names;
      for (const auto& [name, e] : m->environments) names += (names.empty() ? "" : ", ") + name;
      return Error{ErrorKind::Incompatible, t.manifest.empty() ? std::string("envlock.yaml") : t.manifest,
                   "has no environment '" + env + "'", "environments in it: " + names, "pass one of them with -e"};
    }
  const fs::path project = manifest.parent_path();
  if (auto st = check_project_envs_folder(project); !st) return st.error();
  return project / ".envlock" / "envs" / (t.environment.empty() ? "default" : t.environment);
}

}  // namespace envlock::cli
