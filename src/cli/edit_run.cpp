// The flow of `envlock add` and `envlock rm` (edit_run.hpp).
#include "edit_run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "envlock/url.hpp"
#include "create_run.hpp"
#include "project_lock.hpp"
#include "envlock/lock.hpp"
#include "envlock/atomic_file.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/manifest_edit.hpp"
#include "envlock/match_spec.hpp"
#include "lock_report.hpp"
#include "network_options.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

/// The bytes of `path` (a manifest or lockfile just read), or nullopt when it cannot be read.
std::optional<std::string> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return buf.str();
}

/// `error` with a last detail line saying that nothing was written.
Error nothing_written(Error error, const fs::path& manifest, const fs::path& lockfile) {
  error.detail += std::string(error.detail.empty() ? "" : "\n") + "nothing was written: " + manifest.string() + " and " +
                  lockfile.string() + " are as they were";
  return error;
}

const char* action_name(DependencyEdit::Action a) {
  switch (a) {
    case DependencyEdit::Action::Added: return "added";
    case DependencyEdit::Action::Replaced: return "replaced";
    case DependencyEdit::Action::Removed: return "removed";
  }
  return "";
}

/// While alive, what the program writes on std::cout is collected instead (the install's JSON,
/// which --json prints inside add's one object).
class CaptureStdout {
 public:
  CaptureStdout() : saved_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(saved_); }
  CaptureStdout(const CaptureStdout&) = delete;
  CaptureStdout& operator=(const CaptureStdout&) = delete;
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* saved_;
};

/// pixi's implicit constraint for a spec added without a version (prefix-dev/pixi, add.rs,
/// determine_version_constraint with its default "semver" pinning): from the versions `lock`
/// pins for the package in `environment` (every platform), `>=LOWEST,<NEXT` where NEXT is the
/// highest's major + 1, or for a 0.x version its minor + 1 (`>=1.26.4,<2`, `>=0.4.1,<0.5`).
/// Empty when the spec names a version, build or anything else (`numpy *` stays as written),
/// when the package is not locked, or when the version does not start with plain numbers.
std::string implicit_constraint(const std::string& spec, const Lockfile& lock, const std::string& environment) {
  if (spec.find_first_of(" \t[]=<>!~*@,|") != std::string::npos) return "";
  auto parsed = MatchSpec::parse(spec);
  if (!parsed || parsed->version || parsed->build) return "";
  const std::string name = parsed->exact_name();
  auto env = lock.environments.find(environment);
  if (name.empty() || env == lock.environments.end()) return "";
  std::optional<Version> low, high;
  for (const auto& [platform, lp] : env->second.platforms)
    for (const auto& p : lp.packages)
      if (p.name == name) {
        if (!low || p.version < *low) low = p.version;
        if (!high || *high < p.version) high = p.version;
      }
  if (!low) return "";
  const std::string top = high->to_string();
  std::vector<std::string> segments;
  for (std::size_t at = 0; at <= top.size();) {
    const std::size_t dot = std::min(top.find('.', at), top.size());
    segments.push_back(top.substr(at, dot - at));
    at = dot + 1;
  }
  const auto number = [](const std::string& t) -> std::optional<unsigned long> {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoul(t);
  };
  const auto major = number(segments[0]);
  if (!major) return "";
  std::string upper;
  if (*major > 0) {
    upper = std::to_string(*major + 1);
  } else {
    const auto minor = segments.size() > 1 ? number(segments[1]) : std::nullopt;
    if (!minor) return "";
    upper = "0." + std::to_string(*minor + 1);
  }
  return ">=" + low->to_string() + ",<" + upper;
}

}  // namespace

void add_edit_options(CLI::App& sub, EditArgs& args) {
  sub.add_option("-f,--file", args.manifest, "the manifest (default: envlock.yaml in the current folder)");
  sub.add_option("-e,--environment", args.environment, "the manifest's environment (default: 'default', or the only one)");
  sub.add_flag("--pypi", args.pypi, "edit the environment's `pip:` list (pip requirements) instead of its conda dependencies");
  sub.add_flag("--no-install", args.no_install, "edit the manifest and lock it; do not install the environment");
  sub.add_flag("--offline", args.offline, "use cached repodata only");
  add_network_options(sub);
}

int run_edit(const Context& ctx, EditCommand command, const EditArgs& args) {
  const bool adding = command == EditCommand::Add;
  const fs::path manifest_path = args.manifest.empty() ? fs::path("envlock.yaml") : fs::path(args.manifest);
  std::error_code ec;
  if (args.manifest.empty() && !fs::exists(manifest_path, ec))  // as `envlock run` says it
    return report_error(ctx, Error{ErrorKind::Io, "envlock.yaml", "no manifest in the current folder", "",
                                   "run in the project's folder, or pass the manifest with -f"});
  const ProjectLock turn(manifest_path);
  // add and rm rewrite the manifest and the lockfile beside it: neither through a link.
  if (auto st = check_project_file_is_no_link(manifest_path, "manifest"); !st) {
    Error e = st.error();
    e.hint = "edit the file it names (pass it with -f), or replace the link with it";
    return report_error(ctx, e);
  }
  if (auto st = check_project_file_is_no_link(manifest_path.parent_path() / "envlock.lock", "lockfile"); !st)
    return report_error(ctx, st.error());
  auto loaded = load_manifest(manifest_path);
  if (!loaded) return report_error(ctx, loaded.error());
  // The install goes where `create` puts it: refused up front, before either file is edited.
  if (!args.no_install)
    if (auto st = check_project_envs_folder(fs::absolute(manifest_path, ec).parent_path()); !st)
      return report_error(ctx, st.error());
  // The text edited is the file's bytes; its parse (the same bytes) is what every check reads.
  const auto text = file_bytes(manifest_path);
  if (!text) return report_error(ctx, Error{ErrorKind::Io, manifest_path.string(), "cannot read the manifest", "", ""});
  auto manifest = parse_manifest(*text, manifest_path.string(), loaded->directory, loaded->format);
  if (!manifest) return report_error(ctx, manifest.error());
  manifest->path = manifest_path;
  for (const auto& w : manifest->warnings) warn(w);

  auto environment = environment_to_edit(*manifest, args.environment);
  if (!environment) return report_error(ctx, environment.error());
  const DependencyKind kind = args.pypi ? DependencyKind::Pypi : DependencyKind::Conda;
  auto edited = adding ? add_dependencies(*manifest, *text, *environment, args.values, kind)
                       : remove_dependencies(*manifest, *text, *environment, args.values, kind);
  if (!edited) return report_error(ctx, edited.error());

  // Spelled as the user spelled the manifest's folder, as `envlock lock` names it.
  const fs::path lock_path = manifest_path.parent_path() / "envlock.lock";
  if (auto st = check_base_is_not_the_lockfile(edited->manifest, lock_path); !st) return report_error(ctx, st.error());
  std::optional<Lockfile> previous;
  std::optional<std::string> previous_bytes;
  if (fs::exists(lock_path, ec)) {
    auto read = Lockfile::read(lock_path);
    if (!read) {
      Error e = read.error();
      e.hint = "fix the lockfile, or replace it with `envlock lock -f " + manifest_path.string() + " --update-all`";
      return report_error(ctx, nothing_written(e, manifest_path, lock_path));
    }
    previous = std::move(*read);
    previous_bytes = file_bytes(lock_path);
  }

  LockDiagnostics diag;
  LockOptions options;
  options.previous = previous;
  options.repodata.offline = args.offline;
  options.repodata.fetch.on_progress = repodata_progress_lines(ctx);
  options.diagnostics = &diag;
  auto lock = lock_manifest(edited->manifest, options);
  for (const auto& w : diag.warnings) warn(w);
  if (!ctx.json)
    for (const auto& h : diag.hints) std::cerr << "hint: " << terminal_text(h) << "\n";
  if (!lock) {
    const Error e = nothing_written(lock.error(), manifest_path, lock_path);
    if (diag.conflict) return report_conflict(ctx, e, *diag.conflict);
    return report_error(ctx, e);
  }
  // A spec added without a version gets pixi's implicit constraint from what was locked, and the
  // manifest is locked again with that lock as previous (every record still fits: nothing moves,
  // only the requested specs and the manifest hash).
  if (adding && kind == DependencyKind::Conda && !args.no_pin) {
    std::vector<std::string> pinned;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < edited->edits.size(); ++i) {
      const auto& e = edited->edits[i];
      if (e.action == DependencyEdit::Action::Removed) continue;  // (add never removes)
      if (const std::string c = implicit_constraint(e.spec, *lock, *environment); !c.empty()) {
        pinned.push_back(e.spec + " " + c);
        which.push_back(i);
      }
    }
    if (!pinned.empty()) {
      auto repinned = add_dependencies(edited->manifest, edited->text, *environment, pinned, kind);
      if (!repinned) return report_error(ctx, nothing_written(repinned.error(), manifest_path, lock_path));
      LockOptions again = options;
      again.previous = std::move(*lock);
      LockDiagnostics quiet;  // its hints and warnings are those of the lock above
      again.diagnostics = &quiet;
      auto relocked = lock_manifest(repinned->manifest, again);
      if (!relocked) {
        const Error e = nothing_written(relocked.error(), manifest_path, lock_path);
        if (quiet.conflict) return report_conflict(ctx, e, *quiet.conflict);
        return report_error(ctx, e);
      }
      lock = std::move(relocked);
      for (std::size_t n = 0; n < which.size(); ++n) {
        DependencyEdit& e = edited->edits[which[n]];
        e.spec = repinned->edits[n].spec;
        e.line = repinned->edits[n].line;
      }
      edited->text = std::move(repinned->text);
      edited->manifest = std::move(repinned->manifest);
    }
  }
  // As `envlock lock` writes them (lock_manifest() fills them where it knows a base's too).
  if (lock->relative_channels.empty()) lock->relative_channels = relative_channel_urls(edited->manifest);
  for (const auto& w : home_channel_warnings(edited->manifest)) {
    warn(w);
    diag.warnings.push_back(w);
  }

  // Written only now, manifest first, as pixi saves its manifest before its lockfile: killed in
  // between, the manifest holds the edit and the lockfile is stale (`lock --check` says so,
  // `create` locks again and keeps the edit); lockfile first left a lockfile ahead of its
  // manifest, which `create --frozen` installed and a default `create` quietly undid (attack 21,
  // F4). A manifest edited on disk since it was read is not overwritten; checked just before its
  // rename, so no lockfile write sits in between (attack 21, F8).
  if (file_bytes(manifest_path) != *text) {
    return report_error(ctx, nothing_written(Error{ErrorKind::Io, manifest_path.string(),
                                                   "changed on disk while envlock " + std::string(adding ? "add" : "rm") +
                                                       " ran",
                                                   "", "run the command again"},
                                             manifest_path, lock_path));
  }
  const std::string lock_text = lock->to_yaml(fs::absolute(lock_path, ec).parent_path());
  const bool lock_changed = !previous_bytes || *previous_bytes != lock_text;
  const bool manifest_changed = edited->text != *text;
  if (manifest_changed)
    if (auto st = write_file_atomic(manifest_path, edited->text); !st)
      return report_error(ctx, nothing_written(st.error(), manifest_path, lock_path));
  if (lock_changed)
    if (auto st = write_file_atomic(lock_path, lock_text); !st) {
      // Put the manifest back as it was, so the two still agree.
      if (manifest_changed) (void)write_file_atomic(manifest_path, *text);
      return report_error(ctx, nothing_written(st.error(), manifest_path, lock_path));
    }

  LockSummary summary = summarize_lock(*lock, previous, fs::absolute(lock_path, ec).parent_path());
  const char* verb = adding ? "Added" : "Removed";
  nlohmann::json j;
  nlohmann::json edits = nlohmann::json::array();
  std::string text_out;
  for (const auto& e : edited->edits) {
    // A pip requirement's URL may carry credentials (`pkg @ git+https://user:token@host/...`): the
    // manifest keeps what the user wrote, the output never shows them (attack 21, F5).
    const std::string spec = redact_text(e.spec), was = redact_text(e.previous);
    nlohmann::json one = {{"action", action_name(e.action)}, {"name", e.name}, {"spec", spec}, {"line", e.line}};
    if (e.action == DependencyEdit::Action::Replaced) one["previous"] = was;
    edits.push_back(std::move(one));
    // pixi's line (src/cli/add.rs, display_success: "✔ Added numpy >=1.26"), the replaced entry named.
    text_out += std::string("✔ ") + verb + " " + spec +
                (e.action == DependencyEdit::Action::Replaced ? " (was " + was + ")" : "") + "\n";
  }
  // pixi's closing line (add.rs: "Added these as pypi-dependencies."), naming the list edited.
  if (kind == DependencyKind::Pypi) {
    const bool all_pypi_dependencies = std::all_of(edited->edits.begin(), edited->edits.end(),
                                                   [](const DependencyEdit& e) { return e.pypi_dependencies; });
    text_out += std::string(verb) + " these as " + (all_pypi_dependencies ? "pypi-dependencies" : "pip requirements") + ".\n";
  }
  text_out += (lock_changed ? "locked " : "unchanged ") + lock_path.string() + "\n" + summary.text;

  j["manifest"] = manifest_path.string();
  j["lockfile"] = lock_path.string();
  j["environment"] = *environment;
  j["kind"] = kind == DependencyKind::Pypi ? "pypi" : "conda";
  j["edits"] = std::move(edits);
  j["lock"] = {{"changed", lock_changed}, {"environments", std::move(summary.environments)}};
  j["hints"] = diag.hints;
  j["warnings"] = diag.warnings;
  if (!ctx.json) std::cout << terminal_text(text_out);
  if (args.no_install) {
    if (ctx.json) {
      j["install"] = nullptr;
      std::cout << json_text(j) << "\n";
    }
    return 0;
  }

  CreateArgs create;
  create.manifest = manifest_path.string();
  create.environment = *environment;
  create.command = adding ? "add" : "rm";
  CreatePlan plan;
  plan.manifest = std::move(edited->manifest);
  plan.lockfile = std::move(*lock);
  plan.lock_path = lock_path;
  plan.environment = *environment;
  plan.prefix = fs::absolute(manifest_path, ec).parent_path() / ".envlock" / "envs" / *environment;
  int code = 0;
  if (ctx.json) {
    std::string installed;
    {
      CaptureStdout capture;
      code = install_created(ctx, create, plan);
      installed = capture.text();
    }
    j["install"] = nlohmann::json::parse(installed, nullptr, false);
    if (j["install"].is_discarded()) j["install"] = installed;
    std::cout << json_text(j) << "\n";
  } else {
    code = install_created(ctx, create, plan);
    if (code != 0)
      std::cerr << terminal_text("hint: " + manifest_path.string() + " and " + lock_path.string() +
                                 " were updated; `envlock create -f " + manifest_path.string() +
                                 "` installs them once the cause is fixed")
                << "\n";
  }
  return code;
}

}  // namespace envlock::cli
