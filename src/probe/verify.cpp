// Verification: the probe and the reference run on an existing prefix or a throwaway one, and
// recording a reference value into a lockfile.
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <system_error>

#include "envlock/platform.hpp"
#include "envlock/reference.hpp"
#include "envlock/text.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

Error usage(const std::string& where, const std::string& message, const std::string& hint) {
  Error e;
  e.kind = ErrorKind::Usage;
  e.where = where;
  e.message = message;
  e.hint = hint;
  return e;
}

std::string env_names(const Lockfile& lf) {
  std::string names;
  for (const auto& [name, env] : lf.environments) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "(none)" : names;
}

// `text` line by line through printable(), each line ended by a newline.
std::string printable_lines(const std::string& text) {
  std::string out;
  for (const auto& line : output_lines(text)) out += line + "\n";
  return out;
}

}  // namespace

std::vector<std::string> output_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    lines.push_back(printable(text.substr(0, nl)));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

Result<std::string> pick_environment(const Lockfile& lockfile, const std::string& name, const std::string& source) {
  if (!name.empty()) {
    if (lockfile.environments.count(name)) return name;
    return Error{ErrorKind::Incompatible, source, "has no environment '" + name + "'",
                 "environments in it: " + env_names(lockfile), "pass one of them with -e"};
  }
  if (lockfile.environments.size() == 1) return lockfile.environments.begin()->first;
  if (lockfile.environments.count("default")) return std::string("default");
  return Error{ErrorKind::Usage, source, "has several environments and none is called 'default'",
               "environments in it: " + env_names(lockfile), "choose one with -e"};
}

Result<std::pair<PackageCudaFacts, std::string>> package_facts(const Lockfile* lockfile, const std::string& environment,
                                                               const std::optional<fs::path>& prefix,
                                                               const std::string& lockfile_name) {
  std::vector<RepoDataRecord> records;
  std::vector<std::string> requested;
  std::vector<VirtualPackage> solved_with;
  std::string source;
  if (lockfile != nullptr) {
    const LockedEnvironment& env = lockfile->environments.at(environment);
    requested = env.requested;
    const std::string platform = Platform::host().to_string();
    auto it = env.platforms.find(platform);
    if (it == env.platforms.end()) {
      if (!prefix) {
        std::string have;
        for (const auto& [p, lp] : env.platforms) have += (have.empty() ? "" : ", ") + p;
        Error e;
        e.kind = ErrorKind::Incompatible;
        e.where = lockfile_name;
        e.message = "environment '" + environment + "' is not locked for " + platform + " (locked: " + (have.empty() ? "none" : have) + ")";
        e.hint = "add " + platform + " to the manifest's platforms and run envlock lock";
        return e;
      }
    } else {
      solved_with = it->second.virtual_packages;
      for (const auto& p : it->second.packages) records.push_back(static_cast<const RepoDataRecord&>(p));
    }
    source = lockfile_name + " environment " + environment + " (" + platform + ")";
  }
  std::error_code ec;
  if (prefix && lockfile != nullptr && !fs::is_directory(*prefix / "conda-meta", ec)) {
    source += ", run in " + prefix->string() + " (no conda-meta: the lockfile's records are used)";
  } else if (prefix) {
    auto meta = read_conda_meta(*prefix);
    if (!meta) return meta.error();
    records.clear();
    for (const auto& r : *meta) {
      records.push_back(static_cast<const RepoDataRecord&>(r));
      if (lockfile == nullptr && !r.requested_spec.empty()) requested.push_back(r.requested_spec);
    }
    source = source.empty() ? "prefix " + prefix->string() : source + ", installed in " + prefix->string();
  }
  return std::make_pair(analyze_packages(records, requested, solved_with), source);
}

int ReferenceVerifyReport::exit_code() const {
  if (!create_error.empty()) return 1;
  if (probe && probe->exit_code() != 0) return probe->exit_code();
  if (reference && !reference->ok()) return 1;
  return 0;
}

nlohmann::json ReferenceVerifyReport::to_json() const {
  nlohmann::json j = {{"environment", environment}, {"exit_code", exit_code()}, {"prefix_kept", prefix_kept}};
  if (prefix_kept) j["prefix"] = prefix.string();
  if (!create_error.empty()) j["create_error"] = create_error;
  if (probe) j["probe"] = probe->to_json();
  if (reference) {
    const ReferenceOutcome& r = *reference;
    nlohmann::json rj = {{"status", to_string(r.status)}, {"command", r.command}, {"metric", r.metric},
                         {"tolerance", r.tolerance}, {"message", r.message}, {"output_tail", r.output_tail}};
    rj["value"] = r.value ? nlohmann::json(*r.value) : nlohmann::json(nullptr);
    rj["recorded"] = r.recorded ? nlohmann::json(*r.recorded) : nlohmann::json(nullptr);
    if (!r.hint.empty()) rj["hint"] = r.hint;
    if (r.exit_status >= 0) rj["exit_status"] = r.exit_status;
    j["reference"] = rj;
  }
  j["hosts"] = {{"recorded", recorded_host}, {"now", current_host}};
  return j;
}

std::string ReferenceVerifyReport::to_text(bool color) const {
  // Everything quoted here comes from the lockfile, the command's output or the host: each line
  // goes through printable(), so no control byte or newline of theirs reaches the terminal.
  std::string out;
  if (!create_error.empty()) out += "environment: could not be created: " + printable(create_error) + "\n";
  if (probe) out += probe->to_text(color);
  if (reference) {
    const ReferenceOutcome& r = *reference;
    const bool good = r.ok();
    const std::string word = good ? "pass" : "FAIL";
    out += (color ? (good ? "\033[32m" : "\033[31;1m") + word + "\033[0m" : word) + "  reference: " + printable(r.message) + "\n";
    out += "      command: " + printable(r.command) + "\n";
    if (!r.hint.empty()) out += "      hint: " + printable(r.hint) + "\n";
    if (!good && !r.output_tail.empty()) {
      out += "      output (last lines):\n";
      for (const auto& line : output_lines(r.output_tail)) out += "        " + line + "\n";
    }
    if (r.status == ReferenceStatus::Fail || r.status == ReferenceStatus::Pass) {
      out += "      hosts (recording host | this host):\n" + printable_lines(side_by_side(recorded_host, current_host));
    }
  }
  if (prefix_kept) out += "environment kept at " + printable(prefix.string()) + "\n";
  const int code = exit_code();
  out += code == 0 ? "verify: pass\n" : "verify: FAIL (exit " + std::to_string(code) + ")\n";
  return out;
}

Result<ReferenceVerifyReport> verify_environment(const VerifyRequest& request) {
  auto lockfile = Lockfile::read(request.lockfile);
  if (!lockfile) return lockfile.error();
  auto env_name = pick_environment(*lockfile, request.environment, request.lockfile.string());
  if (!env_name) return env_name.error();
  ReferenceVerifyReport report;
  report.environment = *env_name;
  const LockedEnvironment& env = lockfile->environments.at(*env_name);
  if (env.reference) report.recorded_host = env.reference->recorded_host;

  // The prefix: given, or a throwaway one.
  std::error_code ec;
  fs::path scratch;
  if (request.clean) {
    if (!request.create) return usage("", "verify --clean needs an installer", "this is a bug in envlock");
    std::string tmpl = (fs::temp_directory_path(ec) / "envlock-verify-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      Error e;
      e.kind = ErrorKind::Io;
      e.where = tmpl;
      e.message = "cannot create a temporary directory";
      e.hint = "set TMPDIR to a writable directory with space for the environment";
      return e;
    }
    scratch = tmpl;
    report.prefix = scratch / *env_name;
    if (auto st = request.create(report.prefix); !st) report.create_error = st.error().to_string();
  } else if (request.prefix) {
    report.prefix = *request.prefix;
  } else {
    return usage("", "verify needs a prefix (-p PREFIX) or --clean", "pass -p PREFIX, or --clean to build a throwaway environment");
  }

  if (report.create_error.empty()) {
    const std::string name = request.lockfile.filename().string();
    const Host& ph = request.probe_host;
    GpuHostFacts facts = gather_host_facts(ph);
    report.current_host = recorded_host_facts(facts);
    if (request.run_probe) {
      auto packages = package_facts(&*lockfile, *env_name, report.prefix, name);
      if (!packages) {
        report.create_error = packages.error().to_string();
      } else {
        report.probe = evaluate_probe(std::move(facts), packages->first, packages->second);
      }
    }
    if (request.run_reference && report.create_error.empty()) {
      ReferenceRunOptions options = request.reference_options;
      options.prefix = report.prefix;
      options.environment_name = *env_name;
      if (options.working_directory.empty()) options.working_directory = fs::absolute(request.lockfile, ec).parent_path();
      if (!env.reference) {
        ReferenceOutcome none;
        none.status = ReferenceStatus::NoReference;
        none.message = "environment '" + *env_name + "' has no reference command in " + name;
        none.hint = "add `reference: {command, metric, tolerance}` to the manifest, run envlock lock, then envlock reference record";
        report.reference = none;
      } else if (!env.reference->recorded_value) {
        ReferenceOutcome none = run_reference(*env.reference, options);
        if (none.ok()) {
          none.status = ReferenceStatus::NoRecordedValue;
          none.message = none.message + ", but " + name + " holds no recorded value to compare with";
          none.hint = "run envlock reference record -l " + name + " -e " + *env_name + " on a trusted host first";
        }
        report.reference = none;
      } else {
        report.reference = run_reference(*env.reference, options);
      }
    }
  }

  if (!scratch.empty()) {
    if (request.keep && InterruptScope::received() == 0) {  // an interrupted run leaves nothing behind
      report.prefix_kept = true;
    } else {
      fs::remove_all(scratch, ec);
    }
  }
  return report;
}

Result<ReferenceOutcome> record_reference(const fs::path& lockfile_path, const std::string& environment, const fs::path& prefix,
                                          const Host& probe_host, ReferenceRunOptions options) {
  auto lockfile = Lockfile::read(lockfile_path);
  if (!lockfile) return lockfile.error();
  auto env_name = pick_environment(*lockfile, environment, lockfile_path.string());
  if (!env_name) return env_name.error();
  LockedEnvironment& env = lockfile->environments.at(*env_name);
  if (!env.reference || env.reference->command.empty()) {
    Error e;
    e.kind = ErrorKind::Incompatible;  // the lockfile's content, not the command line: exit 1
    e.where = lockfile_path.string();
    e.message = "environment '" + *env_name + "' has no reference command";
    e.hint = "add `reference: {command: ..., metric: json:<key>, tolerance: ...}` to the manifest and run envlock lock";
    return e;
  }
  std::error_code ec;
  options.prefix = prefix;
  options.environment_name = *env_name;
  if (options.working_directory.empty()) options.working_directory = fs::absolute(lockfile_path, ec).parent_path();
  ReferenceRun run = *env.reference;
  run.recorded_value.reset();  // measure afresh
  ReferenceOutcome outcome = run_reference(run, options);
  if (outcome.status != ReferenceStatus::Measured) return outcome;
  env.reference->recorded_value = outcome.value;
  env.reference->recorded_host = recorded_host_facts(gather_host_facts(probe_host));
  if (auto st = lockfile->write(lockfile_path); !st) return st.error();
  return outcome;
}

}  // namespace envlock
