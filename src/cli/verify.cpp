// envlock verify -p PREFIX — every installed file against its conda-meta record (sha256, size);
// modified, missing and extra files; exit 1 on drift.
// The checks are gathered in VerifyArgs/run_verify so further checks (a reference run, a clean
// environment) can be added as options beside -p.
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/pip.hpp"
#include "envlock/platform.hpp"
#include "envlock/text.hpp"
#include "envlock/wheel.hpp"
#include "envlock/pip_step.hpp"
#include "reference_cli.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyArgs {
  std::string prefix;
  std::string lockfile;       // --reference / --clean (src/cli/reference.cpp)
  std::string environment;
  VerifyReferenceFlags reference;
};

const char* kind_name(FileDrift::Kind k) {
  switch (k) {
    case FileDrift::Kind::Modified: return "modified";
    case FileDrift::Kind::Missing: return "missing";
    case FileDrift::Kind::Extra: return "extra";
    case FileDrift::Kind::Cache: return "cache";
  }
  return "modified";
}

/// An install interrupted before its commit: reported (exit 1), never called clean.
Status check_not_interrupted(const std::string& prefix) {
  auto pending = interrupted_install(prefix);
  if (!pending) return pending.error();
  if (!*pending) return ok_status();
  const std::string kept = (*pending)->empty() ? std::string("there was no previous environment")
                                                : "the old environment is kept in " + (*pending)->string();
  return Error{ErrorKind::Io, prefix, "an install was interrupted (conda-meta/envlock-pending); " + kept, "",
               "run `envlock install` again (or `envlock remove`); either rolls the interrupted install back first"};
}

/// Two sha256 shown as far as it takes to read differently: 12 digits, or four past the first
/// that differs when they share those (as `envlock diff` shows lookalike hashes, attack 24 A5).
std::pair<std::string, std::string> shown_hashes(const std::string& a, const std::string& b) {
  std::size_t n = 12, same = 0;
  while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
  if (same >= n) n = same + 4;
  auto cut = [n](const std::string& h) { return h.size() > n ? h.substr(0, n) + "…" : h; };
  return {cut(a), cut(b)};
}

std::string names_of(const Lockfile& lockfile) {
  std::string out;
  for (const auto& e : lockfile.environments) out += (out.empty() ? "" : ", ") + e.first;
  return out;
}

/// With -l (issue 20): each pip distribution of the prefix that records the sha256 of the wheel
/// it was installed from (installed_wheel_sha256(): envlock's ENVLOCK_SHA256, PEP 610
/// direct_url.json) is compared with the sha256 the lockfile pins for its name and PEP 440
/// version, as install compares them before it keeps a distribution (same_build): another one is
/// drift of that record (Modified, package "pip:<dist-info folder>"), a build of the locked version
/// that is not the locked wheel. The environment is -e, else the one conda-meta/envlock names,
/// else the lockfile's only one or `default`; the platform the one conda-meta/envlock names, else
/// the host's.
Result<std::vector<FileDrift>> locked_wheel_drift(const fs::path& prefix, const std::string& lockfile_path, const std::string& environment) {
  auto lock = Lockfile::read(lockfile_path);
  if (!lock) return lock.error();
  auto origin = read_prefix_origin(prefix);
  const PrefixOrigin* recorded = origin && *origin ? &**origin : nullptr;
  std::string env_name = environment;
  if (env_name.empty() && recorded != nullptr && lock->environments.count(recorded->environment)) env_name = recorded->environment;
  if (env_name.empty() && lock->environments.size() == 1) env_name = lock->environments.begin()->first;
  if (env_name.empty() && lock->environments.count("default")) env_name = "default";
  if (env_name.empty()) {
    return Error{ErrorKind::Usage, lockfile_path, "has several environments and none is called 'default'",
                 "environments in it: " + names_of(*lock), "choose one with -e"};
  }
  auto env = lock->environments.find(env_name);
  if (env == lock->environments.end()) {
    return Error{ErrorKind::Incompatible, lockfile_path, "has no environment '" + env_name + "'",
                 "environments in it: " + names_of(*lock), "pass one of them with -e"};
  }
  std::string platform = recorded != nullptr && !recorded->platform.empty() ? recorded->platform : Platform::host().to_string();
  auto plat = env->second.platforms.find(platform);
  if (plat == env->second.platforms.end()) {
    return Error{ErrorKind::Incompatible, lockfile_path, "environment '" + env_name + "' is not locked for " + platform + ", the prefix's platform",
                 "", "lock the environment for " + platform + ", or pass the lockfile the prefix was installed from"};
  }
  std::map<std::string, const PipPackage*> pins;  // PEP 503 name -> the locked wheel
  const PipPlan plan = plan_pip(plat->second.pip);
  for (const PipPackage& p : plan.wheels)
    if (!p.name.empty()) pins[pep503_normalize(p.name)] = &p;
  std::vector<FileDrift> out;
  for (const std::string& site : site_packages_dirs(prefix)) {
    for (const fs::path& dir : dist_info_dirs(prefix / site)) {
      const std::string rel = site + "/" + dir.filename().string();
      auto dist = read_dist_info(dir, rel, DistInfoParts::WithoutRecord);
      if (!dist) continue;  // its files are verify_prefix()'s to report
      auto pin = pins.find(pep503_normalize(dist->name));
      if (pin == pins.end() || !same_pep440_version(dist->version, pin->second->version)) continue;  // `envlock diff` tells versions
      const std::string have = installed_wheel_sha256(dir);
      const std::string want = ascii_lower(pin->second->sha256);
      if (have.empty() || have == want) continue;  // a pip index install records none: compared by version, as install does
      std::error_code ec;
      const bool ours = fs::exists(fs::symlink_status(dir / "ENVLOCK_SHA256", ec));
      const auto [h, w] = shown_hashes(have, want);
      const std::string stem = dir.filename().string();
      out.push_back(FileDrift{FileDrift::Kind::Modified, rel + (ours ? "/ENVLOCK_SHA256" : "/direct_url.json"),
                              "pip:" + stem.substr(0, stem.size() - std::string_view(".dist-info").size()),
                              "installed from the wheel of sha256 " + h + ", the lockfile pins " + w + " (" +
                                  fs::path(lockfile_path).filename().string() + ")"});
    }
  }
  return out;
}

int run_verify(const Context& ctx, const VerifyArgs& args) {
  // The lockfile and its environment are read first: an -e it lacks is refused as every command
  // with -e refuses it, whatever the prefix holds.
  std::vector<FileDrift> locked;
  if (!args.lockfile.empty()) {
    auto drift = locked_wheel_drift(args.prefix, args.lockfile, args.environment);
    if (!drift) return report_error(ctx, drift.error());
    locked = std::move(*drift);
  }
  if (auto st = check_not_interrupted(args.prefix); !st) return report_error(ctx, st.error());
  auto report = verify_prefix(args.prefix);
  if (!report) return report_error(ctx, report.error());
  if (!locked.empty()) {
    report->drift.insert(report->drift.end(), locked.begin(), locked.end());
    std::stable_sort(report->drift.begin(), report->drift.end(), [](const FileDrift& a, const FileDrift& b) { return a.path < b.path; });
  }
  if (ctx.json) {
    nlohmann::json j;
    j["prefix"] = args.prefix;
    j["packages"] = report->packages;
    j["files_checked"] = report->files_checked;
    j["pip_files"] = report->pip_files;
    j["clean"] = report->clean();
    j["modified"] = nlohmann::json::array();
    j["missing"] = nlohmann::json::array();
    j["extra"] = nlohmann::json::array();
    j["cache"] = nlohmann::json::array();
    for (const auto& d : report->drift) {
      nlohmann::json e{{"path", d.path}, {"reason", d.reason}};
      if (!d.package.empty()) e["package"] = d.package;
      j[kind_name(d.kind)].push_back(std::move(e));
    }
    std::cout << json_text(j) << "\n";
  } else {
    for (const auto& d : report->drift) {
      // A file name may hold any byte but '/' and NUL: a newline in one must not print as two findings.
      std::cout << kind_name(d.kind) << "  " << printable(d.path);
      if (!d.package.empty()) std::cout << "  (" << printable(d.package) << ": " << printable(d.reason) << ")";
      else std::cout << "  (" << printable(d.reason) << ")";
      std::cout << "\n";
    }
    std::cout << args.prefix << ": " << report->packages << " packages, " << report->files_checked
              << " files checked"
              << (report->pip_files > 0 ? " (" + std::to_string(report->pip_files) + " of them pip-installed)" : std::string())
              << ": " << (report->clean() ? "no drift" : std::to_string(report->drift.size()) + " drifted")
              << "\n";
  }
  return report->clean() ? 0 : 1;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<VerifyArgs>();
  sub.add_option("-p,--prefix", args->prefix, "the environment to check");
  sub.add_option("-l,--lockfile", args->lockfile,
                 "also check each pip package's wheel sha256 against this lockfile's; with --reference/--clean: the lockfile "
                 "(default envlock.lock)");
  sub.add_option("-e,--environment", args->environment, "with -l, --reference or --clean: the lockfile environment");
  add_verify_reference_flags(sub, args->reference);
  sub.callback([&ctx, args] {
    if (verify_reference_requested(args->reference)) {
      ctx.exit_code = run_verify_reference(args->reference, args->lockfile, args->environment, args->prefix, ctx);
    } else if (!args->environment.empty() && args->lockfile.empty()) {
      // -e names an environment of -l's lockfile: a plain check of PREFIX's files ignored it, so
      // `verify -e nosuchenv -p PREFIX` said "no drift", exit 0, where every other command with
      // -e refuses an environment the lockfile lacks (as resolve_activation() refuses -e
      // without a manifest).
      ctx.exit_code = report_error(
          ctx, {ErrorKind::Usage, "verify", "-e is read only with -l, --reference or --clean", "",
                "drop it to check the files of -p PREFIX against its records, or add -l LOCKFILE, --reference or --clean"});
    } else if (args->prefix.empty()) {
      ctx.exit_code = report_error(ctx, {ErrorKind::Usage, "verify", "-p/--prefix is required", "",
                                         "pass -p PREFIX, or --clean -l LOCKFILE for a throwaway environment"});
    } else {
      ctx.exit_code = run_verify(ctx, *args);
    }
  });
}

const RegisterCommand reg{"verify", "check every file of an environment against its recorded sha256 and size", &setup};

}  // namespace
}  // namespace envlock::cli
