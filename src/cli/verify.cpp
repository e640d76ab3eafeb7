// envlock verify -p PREFIX — every installed file against its conda-meta record (sha256, size);
// modified, missing and extra files; exit 1 on drift.
// The checks are gathered in VerifyArgs/run_verify so further checks (a reference run, a clean
// environment) can be added as options beside -p.
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/install.hpp"
#include "envlock/text.hpp"
#include "reference_cli.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

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

int run_verify(const Context& ctx, const VerifyArgs& args) {
  if (auto st = check_not_interrupted(args.prefix); !st) return report_error(ctx, st.error());
  auto report = verify_prefix(args.prefix);
  if (!report) return report_error(ctx, report.error());
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
  sub.add_option("-l,--lockfile", args->lockfile, "with --reference/--clean: the lockfile (default envlock.lock)");
  sub.add_option("-e,--environment", args->environment, "with --reference/--clean: the lockfile environment");
  add_verify_reference_flags(sub, args->reference);
  sub.callback([&ctx, args] {
    if (verify_reference_requested(args->reference)) {
      ctx.exit_code = run_verify_reference(args->reference, args->lockfile, args->environment, args->prefix, ctx);
    } else if (!args->environment.empty() || !args->lockfile.empty()) {
      // Read only by --reference/--clean: a plain check of PREFIX's files ignored them, so
      // `verify -e nosuchenv -p PREFIX` said "no drift", exit 0, where every other command with
      // -e refuses an environment the lockfile lacks (as resolve_activation() refuses -e
      // without a manifest).
      ctx.exit_code = report_error(
          ctx, {ErrorKind::Usage, "verify", "-e and -l are read only with --reference or --clean", "",
                "drop them to check the files of -p PREFIX against its records, or add --reference or --clean"});
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
