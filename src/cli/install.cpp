// envlock install -l LOCKFILE [-e ENV] -p PREFIX [--copy] [--ignore-host] [--no-scripts]
// Installs exactly the lockfile's records for this host's platform; never solves.
#include <fstream>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/hash.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/platform.hpp"
#include "envlock/process.hpp"
#include "envlock/reference.hpp"
#include "envlock/url.hpp"
#include "envlock/virtual_packages.hpp"
#include "install_run.hpp"
#include "lock_input.hpp"
#include "network_options.hpp"
#include "envlock/provision.hpp"

namespace envlock::cli {

namespace {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

/// The text and JSON of a --dry-run: what would change, nothing changed.
int print_dry_run(const Context& ctx, TransactionPlan plan, const InstallPreview& preview, const std::string& prefix,
                  const std::string& env, const std::string& platform, const std::vector<std::string>& warnings,
                  std::ostream& cout) {
  const std::vector<std::string>& relinked = preview.relinked;
  // What the install links again is not unchanged (attack 20, I1: the clobber's loser was listed
  // unchanged, and the install relinked it); nor is a package whose record it rewrites.
  std::erase_if(plan.unchanged, [&](const std::string& d) {
    return std::find(relinked.begin(), relinked.end(), d) != relinked.end() ||
           std::find(preview.undecided.begin(), preview.undecided.end(), d) != preview.undecided.end() ||
           std::any_of(preview.rewritten.begin(), preview.rewritten.end(),
                       [&](const RecordRewrite& r) { return r.dist == d; });
  });
  auto joined = [](const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
  };
  for (const auto& w : warnings) warn(w);
  if (ctx.json) {
    nlohmann::json changed = nlohmann::json::array();
    for (const auto& [from, to] : plan.changed) changed.push_back({{"from", from}, {"to", to}});
    nlohmann::json record = nlohmann::json::array();
    for (const auto& r : preview.rewritten) record.push_back({{"dist", r.dist}, {"fields", r.fields}});
    cout << json_text({{"dry_run", true},
                            {"prefix", prefix},
                            {"environment", env},
                            {"platform", platform},
                            {"added", plan.added},
                            {"removed", plan.removed},
                            {"changed", changed},
                            {"unchanged", plan.unchanged},
                            {"relinked", relinked},
                            {"record", record},
                            {"undecided", preview.undecided},
                            {"warnings", warnings}})
              << "\n";
    return 0;
  }
  std::string out = "dry run: environment '" + env + "' (" + platform + ") in " + prefix +
                    " would change as follows; nothing was changed\n";
  for (const auto& d : plan.added) out += "  added      " + d + "\n";
  for (const auto& d : plan.removed) out += "  removed    " + d + "\n";
  for (const auto& [from, to] : plan.changed) out += "  changed    " + from + " -> " + to + "\n";
  for (const auto& d : relinked) out += "  relinked   " + d + "\n";
  for (const auto& r : preview.rewritten) out += "  record     " + r.dist + " (" + joined(r.fields) + ")\n";
  for (const auto& d : preview.undecided) out += "  undecided  " + d + "\n";
  for (const auto& d : plan.unchanged) out += "  unchanged  " + d + "\n";
  out += "  " + std::to_string(plan.added.size()) + " added, " + std::to_string(plan.removed.size()) + " removed, " +
         std::to_string(plan.changed.size()) + " changed, " +
         (relinked.empty() ? std::string() : std::to_string(relinked.size()) + " relinked, ") +
         (preview.rewritten.empty() ? std::string()
                                    : std::to_string(preview.rewritten.size()) +
                                          (preview.rewritten.size() == 1 ? " record" : " records") + " rewritten, ") +
         (preview.undecided.empty() ? std::string() : std::to_string(preview.undecided.size()) + " undecided, ") +
         std::to_string(plan.unchanged.size()) + " unchanged\n";
  cout << terminal_text(out);
  return 0;
}

/// The text and JSON of an install done: warnings on stderr, the summary on `cout`.
int print_installed(const Context& ctx, LockedInstallReport& r, std::ostream& cout) {
  InstallReport* report = &r.install;
  const PipInstallReport* pip_report = &r.pip;
  for (std::size_t i = 0; i < report->clobbered.size(); ++i)
    warn(report->clobbered[i] + " is installed by more than one package: " + report->clobbered_owners[i] +
         " (the later in the lockfile's order wins; only its record lists the path)");
  for (const auto& w : report->warnings) warn(w);
  report->warnings.insert(report->warnings.begin(), r.early_warnings.begin(), r.early_warnings.end());
  if (ctx.json) {
    nlohmann::json j;
    j["prefix"] = r.prefix;
    j["environment"] = r.environment;
    j["platform"] = r.platform;
    j["lockfile_hash"] = r.lockfile_hash;
    j["installed"] = report->installed;
    j["removed"] = report->removed;
    j["kept"] = report->kept;
    j["rewritten"] = report->rewritten;
    j["files"] = {{"linked", report->files_linked},
                  {"copied", report->files_copied},
                  {"relocated", report->files_relocated}};
    j["messages"] = report->messages;
    j["warnings"] = report->warnings;
    j["clobbered"] = report->clobbered;
    if (r.pip_step) {
      j["pip"] = {{"installed", pip_report->installed}, {"kept", pip_report->kept}, {"replaced", pip_report->replaced},
                  {"removed", pip_report->removed}};
    }
    j["host_mismatches_ignored"] = nlohmann::json::array();
    for (const auto& m : r.host_mismatches) j["host_mismatches_ignored"].push_back(m.to_string());
    cout << json_text(j) << "\n";
  } else {
    for (const auto& m : report->messages) cout << terminal_text(m) << (m.ends_with('\n') ? "" : "\n");
    cout << terminal_text("environment '" + r.environment + "' (" + r.platform + ") is ready in " + r.prefix) << "\n"
         << "  " << report->installed.size() << " installed, "
         << (report->rewritten.empty()
                 ? std::string()
                 : std::to_string(report->rewritten.size()) +
                       (report->rewritten.size() == 1 ? " record" : " records") + " rewritten, ")
         << report->kept.size() - report->rewritten.size() << " unchanged, " << report->removed.size()
         << " removed; files: " << report->files_linked << " linked, "
         << report->files_copied << " copied, " << report->files_relocated << " relocated\n";
    if (r.pip_step) {
      cout << "  pip: " << pip_report->installed.size() << " installed, " << pip_report->kept.size() << " unchanged"
           << (pip_report->replaced.empty() ? "" : ", " + std::to_string(pip_report->replaced.size()) + " replaced")
           << (pip_report->removed.empty() ? "" : ", " + std::to_string(pip_report->removed.size()) + " removed") << "\n";
    }
  }
  return 0;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> parse_channel_urls(const Lockfile& lockfile,
                                                                           const std::vector<std::string>& values) {
  std::set<std::string> channels;
  std::map<std::string, std::set<std::string>> named;  // a mirror's recorded name -> its URLs
  for (const auto& [en, env] : lockfile.environments)
    for (const auto& [pn, plat] : env.platforms)
      for (std::size_t i = 0; i < plat.channels.size(); ++i) {
        channels.insert(redact_url(plat.channels[i]));
        if (i < plat.channel_names.size() && !plat.channel_names[i].empty())
          named[plat.channel_names[i]].insert(redact_url(plat.channels[i]));
      }
  std::string known;
  for (const auto& c : channels) known += (known.empty() ? "" : ", ") + c;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& v : values) {
    auto eq = v.find('=');
    const std::string key = eq == std::string::npos ? v : v.substr(0, eq);
    const std::string url = eq == std::string::npos ? "" : v.substr(eq + 1);
    if (eq == std::string::npos || key.empty() || url.empty())
      return Error{ErrorKind::Usage, "--channel-url", "'" + redact_text(v) + "' is not CHANNEL=URL", "",
                   "e.g. --channel-url conda-forge=https://mirror.example.com/conda-forge"};
    if (!url.starts_with("http://") && !url.starts_with("https://") && !url.starts_with("file://"))
      return Error{ErrorKind::Usage, "--channel-url", "the mirror of '" + key + "' is not an http(s):// or file:// URL",
                   "", "write the mirror's full URL"};
    std::vector<std::string> hits;
    for (const auto& c : channels)
      if (c == key || (c.size() > key.size() && c.ends_with("/" + key)) || (named.count(key) && named[key].count(c)))
        hits.push_back(c);
    if (hits.size() != 1)
      return Error{ErrorKind::Usage, "--channel-url",
                   hits.empty() ? "'" + key + "' names no channel of the lockfile"
                                : "'" + key + "' names more than one channel of the lockfile",
                   "", "the lockfile's channels: " + (known.empty() ? std::string("(none)") : known)};
    out.emplace_back(hits.front(), url);
  }
  return out;
}


int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request, std::ostream& out) {
  const bool progress = ctx.stderr_tty && !ctx.json;
  LockedInstallHooks hooks;
  hooks.checked = [](const std::vector<std::string>& warnings) {
    for (const auto& w : warnings) warn(w);
  };
  if (progress) {
    hooks.fetch_progress = [](const FetchProgress& p) {
      std::fprintf(stderr, "\r\033[Kfetch %zu/%zu packages  %s / %s  %s/s", p.files_done, p.files_total,
                   human_bytes(static_cast<double>(p.bytes_done)).c_str(),
                   human_bytes(static_cast<double>(p.bytes_total)).c_str(),
                   human_bytes(p.bytes_per_second).c_str());
      std::fflush(stderr);
    };
    hooks.fetched = [] { std::fprintf(stderr, "\r\033[K"); };
    hooks.link_progress = [](std::size_t i, std::size_t n, const RepoDataRecord& r) {
      std::fprintf(stderr, "\r\033[Klink %zu/%zu %s", i + 1, n, r.dist_name().c_str());
      std::fflush(stderr);
    };
    hooks.linked = [] { std::fprintf(stderr, "\r\033[K"); };
  }
  if (!progress && !ctx.json) {
    // Not a terminal (CI logs): one plain line every 10 s at most, so a stalled job shows where
    // it waits; nothing when the downloads finish sooner.
    auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    hooks.fetch_progress = [last](const FetchProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - *last < std::chrono::seconds(10) || p.files_done == p.files_total) return;
      *last = now;
      std::fprintf(stderr, "fetch %zu/%zu packages  %s / %s  %s/s  (waiting on %s)\n", p.files_done, p.files_total,
                   human_bytes(static_cast<double>(p.bytes_done)).c_str(),
                   human_bytes(static_cast<double>(p.bytes_total)).c_str(), human_bytes(p.bytes_per_second).c_str(),
                   redact_text(p.current).c_str());
      std::fflush(stderr);
    };
  }
  if (!ctx.json) {
    hooks.packages_ready = [](std::size_t packages, std::size_t downloaded, std::size_t cached) {
      std::cerr << "packages: " << packages << " (" << downloaded << " downloaded, " << cached << " from the package cache)\n";
    };
  }
  hooks.lock_wait = say_lock_wait;
  // Only the reference run holds an InterruptScope while it installs (envlock install itself
  // ends on the signal): what it noted stops the install at its next step, silently, as the
  // signal ended the child `envlock install` it ran before.
  hooks.stop = [] { return InterruptScope::received() != 0; };
  auto done = install_locked_environment(lockfile, request, hooks);
  if (!done && install_interrupted_by() == 0 && InterruptScope::received() != 0) return 128 + InterruptScope::received();
  if (!done) {
    const int code = report_error(ctx, done.error());
    const int sig = install_interrupted_by();
    return sig != 0 ? 128 + sig : code;  // the shell's convention for "stopped by a signal"
  }
  LockedInstallReport& r = *done;
  if (r.dry_run) return print_dry_run(ctx, r.dry_run->plan, r.dry_run->preview, r.prefix, r.environment, r.platform, r.early_warnings, out);
  return print_installed(ctx, r, out);
}

namespace {


/// `--base-only` (issue 18 point 4): the environment's records of its base layers only — the pins
/// of a base lockfile (layer `base:…`), or those of a same-file `base:` (every layer but the
/// environment's own) — so that the base can be installed, and shared, on its own.
Status keep_base_only(Lockfile& lockfile, const std::string& environment, const std::string& path) {
  auto env_name = pick_environment(lockfile, environment, path);
  if (!env_name) return env_name.error();
  LockedEnvironment& env = lockfile.environments.at(*env_name);
  if (!env.base_lockfile && env.base.empty())
    return Error{ErrorKind::Usage, path, "environment '" + *env_name + "' has no base layer, so --base-only has nothing to install",
                 "", "drop --base-only, or name an environment built on a base (`base:` in its manifest)"};
  for (auto& [platform, lp] : env.platforms) {
    const bool had_packages = !lp.packages.empty();
    std::erase_if(lp.packages, [&](const LockedPackage& p) {
      return env.base_lockfile ? !p.layer.starts_with("base:") : p.layer == env.name;
    });
    lp.pip.clear();
    // No record of the base layer left (a hand-edited `layer`, attack on issue 18, finding 3):
    // an install that installs nothing would report success for a base it never installed.
    if (had_packages && lp.packages.empty())
      return Error{ErrorKind::Parse, path,
                   "environment '" + *env_name + "' has no package of its base layer for " + platform +
                       " (no `layer: " + (env.base_lockfile ? std::string("base:…") : env.base) +
                       "`), so --base-only would install nothing",
                   "", "a base pin's layer is `base:` and its layer in the base lockfile (docs/lockfile.md): "
                       "`envlock lock --check` names what was edited, and `envlock lock` writes it again"};
  }
  return ok_status();
}

}  // namespace

int run_install_command(const Context& ctx, const InstallArgs& args, std::ostream& out) {
  // The prefix first: a bad -p is a usage error whatever the lockfile holds.
  if (auto st = check_install_prefix(args.prefix, args.force ? ForeignPrefix::Allow : ForeignPrefix::Refuse); !st)
    return report_error(ctx, st.error());
  auto lockfile = read_envlock_lockfile(args.lockfile, "install");
  if (!lockfile)
    return report_error(ctx, lockfile.error());
  if (args.base_only)
    if (auto st = keep_base_only(*lockfile, args.environment, args.lockfile); !st)
      return report_error(ctx, st.error());
  InstallRequest request;
  request.lockfile_path = args.lockfile;
  request.environment = args.environment;
  request.prefix = args.prefix;
  request.link_mode = args.copy ? LinkMode::Copy : LinkMode::Hardlink;
  request.scripts = args.no_scripts ? RunScripts::No : RunScripts::Yes;
  request.ignore_host = args.ignore_host;
  if (args.verify_cache) request.cache_validation = CacheValidation::Hashes;
  auto mirrors = parse_channel_urls(*lockfile, args.channel_urls);
  if (!mirrors)
    return report_error(ctx, mirrors.error());
  request.channel_urls = std::move(*mirrors);
  request.allow_unverified = args.allow_unverified;
  request.foreign = args.force ? ForeignPrefix::Allow : ForeignPrefix::Refuse;
  request.dry_run = args.dry_run ? DryRun::Yes : DryRun::No;
  return run_install(ctx, *lockfile, request, out);
}

namespace {

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<InstallArgs>();
  sub.add_option("-l,--lockfile", args->lockfile, "the lockfile (envlock.lock)")->required();
  sub.add_option("-e,--environment", args->environment, "environment in the lockfile (default: the only one, or 'default')");
  sub.add_option("-p,--prefix", args->prefix, "the environment folder to create or update")->required();
  sub.add_flag("--copy", args->copy, "copy files instead of hard-linking them from the package cache");
  sub.add_flag("--ignore-host", args->ignore_host, "install even when this host does not meet the lockfile's requirements");
  sub.add_flag("--no-scripts", args->no_scripts, "do not run packages' pre-link, post-link and pre-unlink scripts");
  sub.add_flag("--extra-safety-checks,--verify-cache", args->verify_cache,
               "check the sha256 of every cached package file before linking it (mamba's name; default: sizes only)");
  sub.add_option("--channel-url", args->channel_urls,
                 "CHANNEL=URL: download CHANNEL's packages from URL, a mirror of it (repeatable; CHANNEL is a "
                 "channel URL of the lockfile or its name, e.g. conda-forge)");
  add_install_safety_flags(sub, args->allow_unverified, args->force, args->dry_run);
  sub.add_flag("--base-only", args->base_only,
               "install only the environment's base layer (the pins of its base lockfile, or of its `base:`)");
  add_network_options(sub);
  sub.callback([&ctx, args] { ctx.exit_code = run_install_command(ctx, *args); });
}

const RegisterCommand reg{"install", "install exactly what a lockfile pins for this platform into a prefix (never solves)",
                          &setup};

}  // namespace

void add_install_safety_flags(CLI::App& sub, bool& allow_unverified, bool& force, bool& dry_run) {
  sub.add_flag("--allow-unverified", allow_unverified,
               "install records that have neither a sha256 nor an md5 (their archives cannot be verified)");
  sub.add_flag("--force", force, "install into a conda environment that envlock did not make");
  sub.add_flag("--dry-run", dry_run, "print what would be added, removed, changed and kept; change nothing");
}

}  // namespace envlock::cli
