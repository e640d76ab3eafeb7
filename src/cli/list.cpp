// envlock list -p PREFIX | -l LOCKFILE [-e ENV] [--platform P]
// What an environment holds, or what a lockfile pins for one environment and platform, in one
// shape: {kind, name, version, build, build_number, channel, url, sha256, layer, requirement} per
// package, by name. kind is "conda" or "pypi": the pip side of a prefix (its *.dist-info) and a
// lockfile's pip entries are listed as conda list does, with channel "pypi".
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/platform.hpp"
#include "envlock/readers.hpp"
#include "envlock/reference.hpp"
#include "envlock/url.hpp"
#include "install_run.hpp"
#include "lock_input.hpp"

namespace envlock::cli {
namespace {

struct ListArgs {
  std::string prefix;
  std::string lockfile;
  std::string environment;
  std::string platform;
};

struct Row {
  std::string kind;  // "conda" | "pypi"
  std::string name, version, build;
  std::uint64_t build_number = 0;
  std::string channel, url, sha256, layer;
  std::string requirement;  // a pip requirement's text when no version is pinned
  bool pip_line = false;    // a pip line naming no project: `name` is its text
};

Row row_of(const RepoDataRecord& r, const std::string& layer) {
  return Row{"conda", r.name, r.version.to_string(), r.build, r.build_number, redact_url(r.channel),
             redact_url(r.url), r.sha256, layer, "", false};
}

// A pip line that names no project (`-e .`, `--extra-index-url URL`) is named by its text; its
// version column stays empty (the text is the name). Requirement texts are credential-free.
Row row_of(const PipPackage& p) {
  const std::string requirement = p.version.empty() ? redact_text(p.requirement) : "";
  return Row{"pypi", p.name.empty() ? requirement : p.name, p.version, "", 0, "pypi", redact_url(p.url), p.sha256, "",
             requirement, p.name.empty()};
}

void add_rows(std::vector<Row>& rows, const LockedPlatform& locked) {
  for (const auto& p : locked.packages) rows.push_back(row_of(p, p.layer));
  for (const auto& p : locked.pip) rows.push_back(row_of(p));
}

int print_rows(const Context& ctx, std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return std::tie(a.name, a.kind) < std::tie(b.name, b.kind); });
  if (ctx.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) {
      j.push_back({{"kind", r.kind},
                   {"name", r.name}, {"version", r.version}, {"build", r.build}, {"build_number", r.build_number},
                   {"channel", r.channel}, {"url", r.url}, {"sha256", r.sha256},
                   {"layer", r.layer.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.layer)},
                   {"requirement", r.requirement.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.requirement)}});
    }
    std::cout << json_text(j) << "\n";
    return 0;
  }
  // The table reaches a terminal: every field from the lockfile or prefix through terminal_text().
  for (auto& r : rows) {
    for (std::string* f : {&r.name, &r.version, &r.build, &r.channel, &r.layer, &r.requirement}) *f = terminal_text(*f);
  }
  std::size_t wn = 4, wv = 7, wb = 5;
  auto shown_version = [](const Row& r) { return r.version.empty() && !r.pip_line ? r.requirement : r.version; };
  for (const auto& r : rows) {
    wn = std::max(wn, r.name.size());
    wv = std::max(wv, shown_version(r).size());
    wb = std::max(wb, r.build.size());
  }
  std::cout << std::left << std::setw(static_cast<int>(wn + 2)) << "name" << std::setw(static_cast<int>(wv + 2))
            << "version" << std::setw(static_cast<int>(wb + 2)) << "build" << "channel\n";
  for (const auto& r : rows) {
    std::cout << std::left << std::setw(static_cast<int>(wn + 2)) << r.name << std::setw(static_cast<int>(wv + 2))
              << shown_version(r) << std::setw(static_cast<int>(wb + 2)) << r.build << r.channel
              << (r.layer.empty() ? "" : "  [" + r.layer + "]") << "\n";
  }
  return 0;
}

int run_list(const Context& ctx, const ListArgs& args) {
  if (args.prefix.empty() == args.lockfile.empty()) {
    return report_error(ctx, Error{ErrorKind::Usage, "", "give exactly one of -p PREFIX or -l LOCKFILE", "",
                                   "envlock list -p PREFIX  or  envlock list -l envlock.lock [-e ENV]"});
  }
  std::vector<Row> rows;
  if (!args.prefix.empty()) {
    auto pending = interrupted_install(args.prefix);
    if (!pending) return report_error(ctx, pending.error());
    if (*pending) {
      const std::string kept = (*pending)->empty() ? std::string("there was no previous environment")
                                                    : "the old environment is kept in " + (*pending)->string();
      return report_error(ctx, Error{ErrorKind::Io, args.prefix,
                                     "an install was interrupted (conda-meta/envlock-pending); " + kept, "",
                                     "run `envlock install` again (or `envlock remove`); either rolls the "
                                     "interrupted install back first"});
    }
    std::vector<std::string> warnings;
    auto prefix = read_prefix(args.prefix, &warnings);
    if (!prefix) return report_error(ctx, prefix.error());
    if (auto st = check_not_an_empty_conda_meta(args.prefix); !st) return report_error(ctx, st.error());
    for (const auto& w : warnings) warn(w);
    for (const auto& [name, env] : prefix->environments)
      for (const auto& [platform, locked] : env.platforms) add_rows(rows, locked);
    return print_rows(ctx, std::move(rows));
  }
  auto lockfile = read_envlock_lockfile(args.lockfile, "list");
  if (!lockfile) return report_error(ctx, lockfile.error());
  auto env = pick_environment(*lockfile, args.environment, args.lockfile);
  if (!env) return report_error(ctx, env.error());
  const std::string platform = args.platform.empty() ? Platform::host().to_string() : args.platform;
  const LockedPlatform* locked = lockfile->find(*env, platform);
  if (locked == nullptr) {
    std::string have;
    for (const auto& [p, lp] : lockfile->environments.at(*env).platforms) have += (have.empty() ? "" : ", ") + p;
    return report_error(ctx, Error{ErrorKind::Usage, args.lockfile,
                                   "environment '" + *env + "' is not locked for " + platform,
                                   "locked platforms: " + (have.empty() ? std::string("(none)") : have),
                                   "choose one with --platform"});
  }
  add_rows(rows, *locked);
  return print_rows(ctx, std::move(rows));
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<ListArgs>();
  sub.add_option("-p,--prefix", args->prefix, "an environment folder");
  sub.add_option("-l,--lockfile", args->lockfile, "a lockfile (envlock.lock)");
  sub.add_option("-e,--environment", args->environment, "environment in the lockfile");
  sub.add_option("--platform", args->platform, "platform in the lockfile (default: this host's)");
  sub.callback([&ctx, args] { ctx.exit_code = run_list(ctx, *args); });
}

const RegisterCommand reg{"list", "list the packages of an environment or of a lockfile", &setup};

}  // namespace
}  // namespace envlock::cli
