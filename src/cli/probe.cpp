// `envlock probe [-l LOCKFILE [-e ENV]] [-p PREFIX] [--root DIR] [--driver-timeout S] [--json]`:
// is the GPU usable here, and does the driver fit the packages? Exit codes: 0 pass, 1 a failure,
// 2 usage, 3 the packages need a GPU and this host has none usable (docs/probe.md).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "envlock/probe.hpp"
#include "envlock/reference.hpp"
#include "registry.hpp"
#include "lock_input.hpp"

namespace envlock::cli {
namespace {

// --driver-timeout's bound: one day (its milliseconds fit an int).
constexpr int kMaxDriverTimeout = 86400;

struct ProbeOptions {
  std::string lockfile;
  std::string environment;
  std::string prefix;
  std::string root = "/";
  int timeout_s = 10;
};

int run_probe(const ProbeOptions& o, const Context& ctx) {
  if (!o.environment.empty() && o.lockfile.empty()) {
    return report_error(ctx, {ErrorKind::Usage, "-e", "-e/--environment needs -l/--lockfile", "", "pass -l envlock.lock -e " + o.environment});
  }
  if (o.timeout_s < 1 || o.timeout_s > kMaxDriverTimeout) {
    return report_error(ctx, {ErrorKind::Usage, "--driver-timeout",
                              "the timeout must be from 1 to " + std::to_string(kMaxDriverTimeout) + " seconds (one day), not " +
                                  std::to_string(o.timeout_s),
                              "", "the default, 10 s, is enough for a healthy driver"});
  }
  // The root is where every file and library is looked for: a typo would probe nothing and pass.
  {
    struct stat st {};
    if (stat(o.root.c_str(), &st) != 0) {
      const int err = errno;
      return report_error(ctx, {ErrorKind::Io, "--root " + o.root,
                                err == ENOENT ? std::string("does not exist")
                                : err == ELOOP ? std::string("is a symbolic link that loops (") + std::strerror(err) + ")"
                                               : std::string("cannot be read: ") + std::strerror(err),
                                "", "give the folder that stands for / (a chroot or a mounted image)"});
    }
    if (!S_ISDIR(st.st_mode)) {
      return report_error(ctx, {ErrorKind::Io, "--root " + o.root, "is not a folder", "",
                                "give the folder that stands for / (a chroot or a mounted image)"});
    }
  }
  std::optional<PackageCudaFacts> packages;
  std::string source;
  if (!o.lockfile.empty() || !o.prefix.empty()) {
    std::optional<Lockfile> lockfile;
    std::string env_name;
    if (!o.lockfile.empty()) {
      auto lf = read_envlock_lockfile(o.lockfile, "probe");
      if (!lf) return report_error(ctx, lf.error());
      auto name = pick_environment(*lf, o.environment, o.lockfile);
      if (!name) return report_error(ctx, name.error());
      env_name = *name;
      lockfile = std::move(*lf);
    }
    std::optional<std::filesystem::path> prefix;
    if (!o.prefix.empty()) prefix = o.prefix;
    auto facts = package_facts(lockfile ? &*lockfile : nullptr, env_name, prefix,
                               std::filesystem::path(o.lockfile).filename().string());
    if (!facts) return report_error(ctx, facts.error());
    packages = std::move(facts->first);
    source = std::move(facts->second);
  }
  Host host = Host::system();
  host.root = o.root;
  host.timeout_ms = o.timeout_s * 1000;
  const ProbeReport report = evaluate_probe(gather_host_facts(host), std::move(packages), source);
  if (ctx.json) {
    std::cout << json_text(report.to_json()) << "\n";
  } else {
    std::cout << report.to_text(ctx.color);
  }
  return report.exit_code();
}

void setup(CLI::App& sub, Context& ctx) {
  auto o = std::make_shared<ProbeOptions>();
  sub.add_option("-l,--lockfile", o->lockfile, "check the packages of this lockfile against the driver and GPUs");
  sub.add_option("-e,--environment", o->environment, "the lockfile environment (default: the only one, or `default`)");
  sub.add_option("-p,--prefix", o->prefix, "check the packages installed in this prefix (conda-meta)");
  sub.add_option("--root", o->root, "read /proc and /dev under this folder instead of / (chroots, tests)");
  sub.add_option("--driver-timeout", o->timeout_s, "seconds (1 to 86400) to wait for each NVIDIA library before killing the query")
      ->default_val(10);
  sub.footer(
      "--json (before or after `probe`) prints the report as one JSON object on stdout.\n"
      "Exit codes: 0 every check passed (warnings allowed), 1 a check failed, 2 usage error,\n"
      "3 the packages need a GPU and this host has no usable one. See docs/probe.md.");
  sub.callback([o, &ctx] { ctx.exit_code = run_probe(*o, ctx); });
}

RegisterCommand reg{"probe", "check the NVIDIA driver, GPUs and container against a lockfile's CUDA needs", &setup};

}  // namespace
}  // namespace envlock::cli
