// `envlock reference record -l LOCKFILE [-e ENV] [-p PREFIX] [--timeout S] [--keep-env VAR]`:
// runs the lockfile environment's reference command and records its metric, with this host's
// probe facts, in the lockfile. Without -p the command runs in a throwaway environment made as
// `envlock install` makes one (in this process). Also implements the --reference/--clean flags
// of `envlock verify`.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "envlock/process.hpp"
#include "envlock/reference.hpp"
#include "envlock/text.hpp"
#include "install_run.hpp"
#include "reference_cli.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

// The installer: `envlock install -l LOCKFILE [-e ENV] -p PREFIX`, run in this process through the
// install pipeline (run_install_command(), install_locked_environment()), as a command line without
// --json would run it: its summary on stderr, so that --json keeps stdout for the report, its
// warnings, progress and errors on stderr. Before, this executable ran itself (/proc/self/exe) as
// a child with its stdout sent to stderr; the text is the same, and a failed install still ends
// with the child's words ("envlock install exited with status N").
CreateEnvironment installer(const std::string& lockfile, const std::string& environment) {
  return [lockfile, environment](const fs::path& prefix) -> Status {
    InstallArgs args;
    args.lockfile = lockfile;
    args.environment = environment;
    args.prefix = prefix.string();
    // The child's context: no --json; its stdout was this process's stderr.
    Context child;
    const char* no_color = std::getenv("NO_COLOR");
    child.color = isatty(STDERR_FILENO) && (no_color == nullptr || *no_color == '\0');
    child.stderr_tty = isatty(STDERR_FILENO);
    const int code = run_install_command(child, args, std::cerr);
    std::cerr.flush();
    if (code == 0) return ok_status();
    return Error{ErrorKind::Io, lockfile, "envlock install exited with status " + std::to_string(code), "",
                 "run `envlock install -l " + lockfile + " -p <prefix>` by hand to see why"};
  };
}

void print_outcome(const ReferenceOutcome& o, const std::string& lockfile, const std::string& environment, const Context& ctx) {
  if (ctx.json) {
    nlohmann::json j = {{"status", to_string(o.status)}, {"lockfile", lockfile}, {"environment", environment},
                        {"command", o.command}, {"metric", o.metric}, {"message", o.message}};
    j["value"] = o.value ? nlohmann::json(*o.value) : nlohmann::json(nullptr);
    if (!o.hint.empty()) j["hint"] = o.hint;
    if (!o.ok()) j["output_tail"] = o.output_tail;
    std::cout << json_text(j) << "\n";
    return;
  }
  // The command, the metric and the output come from the lockfile and the command: each line
  // through printable(), so none of their control bytes or newlines reaches the terminal.
  if (o.ok()) {
    std::cout << printable("recorded " + o.message + " for environment " + environment + " in " + lockfile) << "\n";
    return;
  }
  std::cerr << "error: reference run: " << printable(o.message) << "\n  command: " << printable(o.command) << "\n";
  if (!o.output_tail.empty()) {
    std::cerr << "  output (last lines):\n";
    for (const auto& line : output_lines(o.output_tail)) std::cerr << line << "\n";
  }
  if (!o.hint.empty()) std::cerr << "hint: " << printable(o.hint) << "\n";
}

struct RecordOptions {
  std::string lockfile = "envlock.lock";
  std::string environment;
  std::string prefix;
  int timeout_s = 600;
  std::vector<std::string> keep_env;
};

// After SIGINT/SIGTERM/SIGHUP (InterruptScope): what was stopped and cleaned, exit 128 + the signal.
int report_interrupt(const Context& ctx, int sig, const std::string& what) {
  report_error(ctx, {ErrorKind::Io, signal_name(sig), "interrupted: " + what, "", ""});
  return 128 + sig;
}

int run_record(const RecordOptions& o, const Context& ctx) {
  if (o.timeout_s < 1) return report_error(ctx, {ErrorKind::Usage, "--timeout", "the timeout must be at least 1 second", "", ""});
  // The lockfile, its environment and its reference are checked before anything is built or run.
  std::string env_name;
  {
    auto lf = Lockfile::read(o.lockfile);
    if (!lf) return report_error(ctx, lf.error());
    auto name = pick_environment(*lf, o.environment, o.lockfile);
    if (!name) return report_error(ctx, name.error());
    env_name = *name;
    const auto& reference = lf->environments.at(env_name).reference;
    if (!reference || reference->command.empty()) {
      return report_error(ctx, {ErrorKind::Incompatible, o.lockfile, "environment '" + env_name + "' has no reference command", "",
                                "add `reference: {command: ..., metric: json:<key>, tolerance: ...}` to the manifest and run "
                                "envlock lock"});
    }
  }
  const InterruptScope interrupts;
  ReferenceRunOptions options;
  options.timeout_s = o.timeout_s;
  options.keep_env = o.keep_env;
  const Host host = Host::system();

  fs::path prefix = o.prefix;
  fs::path scratch;
  if (prefix.empty()) {
    // A throwaway environment, as verify --clean makes.
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "envlock-reference-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return report_error(ctx, {ErrorKind::Io, tmpl, "cannot create a temporary directory", "", "set TMPDIR to a writable directory"});
    }
    scratch = tmpl;
    prefix = scratch / "env";
    const Status st = installer(o.lockfile, env_name)(prefix);
    if (!st || InterruptScope::received() != 0) {
      fs::remove_all(scratch, ec);
      if (const int sig = InterruptScope::received(); sig != 0) {
        return report_interrupt(ctx, sig, "the throwaway environment was being built; it was removed and nothing was recorded");
      }
      return report_error(ctx, st.error());
    }
  }
  auto outcome = record_reference(o.lockfile, env_name, prefix, host, options);
  if (!scratch.empty()) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
  }
  if (const int sig = InterruptScope::received(); sig != 0 && (!outcome || !outcome->ok())) {
    return report_interrupt(ctx, sig, std::string("the reference command was stopped") +
                                          (scratch.empty() ? "" : ", the throwaway environment removed") + "; nothing was recorded");
  }
  if (!outcome) return report_error(ctx, outcome.error());
  print_outcome(*outcome, o.lockfile, env_name, ctx);
  return outcome->ok() ? 0 : 1;
}

void setup(CLI::App& sub, Context& ctx) {
  sub.require_subcommand(1);
  CLI::App* record = sub.add_subcommand("record", "run the reference command and record its metric in the lockfile");
  record->fallthrough();
  auto o = std::make_shared<RecordOptions>();
  record->add_option("-l,--lockfile", o->lockfile, "the lockfile to record into")->default_val("envlock.lock");
  record->add_option("-e,--environment", o->environment, "the lockfile environment (default: the only one, or `default`)");
  record->add_option("-p,--prefix", o->prefix, "run in this installed environment (default: a throwaway one)");
  record->add_option("--timeout", o->timeout_s, "seconds before the reference command is killed")->default_val(600);
  record->add_option("--keep-env", o->keep_env, "pass this caller variable through to the command (repeatable)");
  record->callback([o, &ctx] { ctx.exit_code = run_record(*o, ctx); });
}

RegisterCommand reg{"reference", "record the reference run's metric in the lockfile", &setup};

}  // namespace

void add_verify_reference_flags(CLI::App& sub, VerifyReferenceFlags& flags) {
  sub.add_flag("--reference", flags.reference, "run the lockfile's reference command and compare with the recorded metric");
  sub.add_flag("--clean", flags.clean, "build a throwaway environment from the lockfile, probe it and run the reference there");
  sub.add_flag("--keep", flags.keep, "with --clean: keep the throwaway environment and print its path");
  sub.add_option("--timeout", flags.timeout_s, "seconds before the reference command is killed")->default_val(600);
  sub.add_option("--keep-env", flags.keep_env, "pass this caller variable through to the reference command (repeatable)");
}

bool verify_reference_requested(const VerifyReferenceFlags& flags) { return flags.reference || flags.clean; }

int run_verify_reference(const VerifyReferenceFlags& flags, const std::string& lockfile, const std::string& environment,
                         const std::string& prefix, const Context& ctx) {
  if (flags.keep && !flags.clean) return report_error(ctx, {ErrorKind::Usage, "--keep", "--keep only applies to --clean", "", ""});
  if (flags.clean && !prefix.empty()) {
    return report_error(ctx, {ErrorKind::Usage, "-p", "--clean builds its own environment; -p does not apply", "",
                              "drop -p, or use --reference -p PREFIX to verify an existing environment"});
  }
  if (!flags.clean && prefix.empty()) {
    return report_error(ctx, {ErrorKind::Usage, "--reference", "--reference needs the environment to run in", "", "pass -p PREFIX, or --clean"});
  }
  if (flags.timeout_s < 1) return report_error(ctx, {ErrorKind::Usage, "--timeout", "the timeout must be at least 1 second", "", ""});
  VerifyRequest request;
  request.lockfile = lockfile.empty() ? "envlock.lock" : lockfile;
  request.environment = environment;
  if (!prefix.empty()) request.prefix = fs::path(prefix);
  request.clean = flags.clean;
  request.keep = flags.keep;
  request.create = installer(request.lockfile.string(), environment);
  request.probe_host = Host::system();
  request.reference_options.timeout_s = flags.timeout_s;
  request.reference_options.keep_env = flags.keep_env;
  const InterruptScope interrupts;
  auto report = verify_environment(request);
  if (const int sig = InterruptScope::received(); sig != 0) {
    return report_interrupt(ctx, sig, flags.clean ? "verification stopped; the throwaway environment was removed"
                                                  : "verification stopped; the reference command was stopped");
  }
  if (!report) return report_error(ctx, report.error());
  if (ctx.json) {
    std::cout << json_text(report->to_json()) << "\n";
  } else {
    std::cout << report->to_text(ctx.color);
  }
  return report->exit_code();
}

}  // namespace envlock::cli
