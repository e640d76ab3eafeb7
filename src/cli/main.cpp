// envlock's entry point: builds the CLI from the command table and maps errors to exit codes.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/build_info.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "registry.hpp"

namespace envlock::cli {

std::vector<CommandInfo>& command_table() {
  static std::vector<CommandInfo> table;
  return table;
}

namespace {
// The one rule (docs/cli.md, "Exit codes"): 2 means the command line itself is wrong (unknown
// command or option, missing or malformed argument, flags that contradict each other) — fixable
// by editing the command line alone. Everything else — a path that does not exist or is not what
// the command needs, bad file contents, network, integrity, solver, host — is a failure: 1.
int exit_code_for(ErrorKind kind) { return kind == ErrorKind::Usage ? 2 : 1; }

const char* kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Parse: return "parse";
    case ErrorKind::Io: return "io";
    case ErrorKind::Network: return "network";
    case ErrorKind::Integrity: return "integrity";
    case ErrorKind::Unsatisfiable: return "unsatisfiable";
    case ErrorKind::Incompatible: return "incompatible";
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Stale: return "stale";
    case ErrorKind::Internal: return "internal";
  }
  return "internal";
}
}  // namespace

std::string terminal_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = s.find('\n', start);
    out += printable(s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

int report_error(const Context& ctx, const Error& raw) {
  // Whatever module built the error, nothing it quotes (a manifest line, a spec with a channel
  // URL) leaves the process with a credential in it.
  Error error = raw;
  error.where = redact_text(error.where);
  error.message = redact_text(error.message);
  error.detail = redact_text(error.detail);
  error.hint = redact_text(error.hint);
  if (ctx.json) {
    nlohmann::json j = {{"error",
                         {{"kind", kind_name(error.kind)},
                          {"where", error.where},
                          {"message", error.message},
                          {"detail", error.detail},
                          {"hint", error.hint}}}};
    std::cout << json_text(j) << "\n";
  }
  // `where` is one line (a path, a package, file:line:col): a newline in it is data, shown escaped.
  Error shown = error;
  shown.where = printable(error.where);
  std::cerr << "error: " << terminal_text(shown.to_string()) << "\n";
  return exit_code_for(error.kind);
}

namespace {
// Every string and key of `j` through escape_invalid_utf8().
nlohmann::json utf8_only(const nlohmann::json& j) {
  if (j.is_string()) return escape_invalid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(utf8_only(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[escape_invalid_utf8(k)] = utf8_only(v);
    return out;
  }
  return j;
}
}  // namespace

std::string json_text(const nlohmann::json& j) {
  // Invisible characters (a tag character after a name, a bidi override in a URL) as \uXXXX
  // escapes: the same strings, none shown raw (json_escape_invisible, envlock/text.hpp).
  try {
    return json_escape_invisible(j.dump(2));
  } catch (const nlohmann::json::type_error&) {
    // Text that is not UTF-8 (a file name's raw bytes): written as \xNN, as text output does.
    return json_escape_invisible(utf8_only(j).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

void warn(const std::string& message) { std::cerr << "warning: " << terminal_text(redact_text(message)) << "\n"; }

}  // namespace envlock::cli

namespace {

// --json is a global flag, but a parse error can stop CLI11 before it sets ctx.json; so errors
// found while parsing look for it in argv themselves (up to a "--" terminator).
bool argv_has_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") return false;
    if (a == "--json") return true;
  }
  return false;
}

// The first argument that is not an option names the command ("envlock --json lock ...").
const char* first_positional(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') return argv[i];
    if (std::string(argv[i]) == "--") return nullptr;
  }
  return nullptr;
}

/// The positional word right after `first` (the command), or nullptr: a command's subcommand.
const char* positional_after(int argc, char** argv, const char* first) {
  bool seen = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") return nullptr;
    if (argv[i] == first) {
      seen = true;
      continue;
    }
    if (seen && argv[i][0] != '-') return argv[i];
  }
  return nullptr;
}

/// The names of a command's subcommands (`envlock snapshot`: capture, check, ...), sorted.
std::string subcommand_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const auto* sub : command.get_subcommands({})) names.push_back(sub->get_name());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string command_names() {
  std::string names;
  for (const auto& cmd : envlock::cli::command_table()) {
    if (!names.empty()) names += ", ";
    names += cmd.name;
  }
  return names;
}

// Everything a command printed on stdout must have reached it: a full disk or a closed pipe
// turns a "successful" run into a failure instead of a silently truncated lockfile listing.
int check_stdout(int code) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return code;
  const int err = errno;
  std::cerr << "error: cannot write output: " << (err != 0 ? std::strerror(err) : "write error") << "\n"
            << "hint: check that the disk or pipe stdout goes to has room and is still open\n";
  return 1;  // whatever the command's own verdict was (probe's 3, diff's 2): its output is lost
}

// Options that name a path, by long name, in every command. An empty value (`-p ''`, `-o ''`) is a
// usage error naming the option (docs/cli.md), found after the command line is parsed and before
// any command runs: one check for every command, so none turns "" into the current folder or
// fails later with a filesystem error.
bool is_path_option(const CLI::Option& opt) {
  static const char* const kPathOptions[] = {"prefix", "output",   "lockfile",   "file",           "root",
                                             "bundle", "pkgs-dir", "pip-source", "nvidia-smi-xml", "rpm-qa"};
  for (const char* name : kPathOptions) {
    if (opt.check_lname(name)) return true;
  }
  return false;
}

void refuse_empty_paths(CLI::App* app) {
  app->parse_complete_callback([app] {
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->count() == 0 || !is_path_option(*opt)) continue;
      for (const auto& value : opt->results()) {
        if (value.empty()) {
          std::string names = opt->get_name(false, true);  // "-p,--prefix"
          std::replace(names.begin(), names.end(), ',', '/');
          throw CLI::ValidationError(names, "is empty (an empty path; give a file or folder name)");
        }
      }
    }
  });
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) refuse_empty_paths(sub);
}

}  // namespace

namespace {
void on_file_size_limit(int) {}  // the write then fails with EFBIG, reported like any other error
void on_broken_pipe(int) {}      // the write then fails with EPIPE: `cannot write output`, exit 1
}  // namespace

int main(int argc, char** argv) {
  using namespace envlock::cli;
  // The one read of envlock's environment variables, at the edge (envlock/settings.hpp): the
  // library's readers (cache folders, network, credentials, install sync, NVIDIA libraries) ask
  // these from here on.
  envlock::use_settings(envlock::Settings::from_environment());
  // A file-size limit (`ulimit -f`) would otherwise kill envlock by SIGXFSZ mid-write, with no
  // message. Python (so conda) ignores it; envlock catches it instead, so that every write over
  // the limit fails with "File too large" and the install rolls back, while child processes
  // (scripts, pip) get the default disposition back at exec, as Python's subprocess gives them.
  struct sigaction xfsz {};
  xfsz.sa_handler = on_file_size_limit;
  sigemptyset(&xfsz.sa_mask);
  xfsz.sa_flags = SA_RESTART;
  ::sigaction(SIGXFSZ, &xfsz, nullptr);
  // `envlock create | head`: a reader that goes killed envlock by SIGPIPE at its next write, exit
  // 141 with no message (attack 20, L4), where docs/cli.md promises exit 1 and `cannot write
  // output`. Caught the same way (not ignored, so children get the default back at exec, as
  // Python's subprocess restores SIGPIPE for them): the write fails with EPIPE, check_stdout()
  // reports it. The command itself is not cut short: an install still commits or rolls back.
  struct sigaction pipe_action {};
  pipe_action.sa_handler = on_broken_pipe;
  sigemptyset(&pipe_action.sa_mask);
  pipe_action.sa_flags = SA_RESTART;
  ::sigaction(SIGPIPE, &pipe_action, nullptr);
  Context ctx;
  // no-color.org: only a NO_COLOR that is present AND not empty turns colour off.
  const char* no_color = std::getenv("NO_COLOR");
  ctx.color = isatty(STDOUT_FILENO) && (no_color == nullptr || *no_color == '\0');
  ctx.stderr_tty = isatty(STDERR_FILENO);

  CLI::App app{"envlock — one lockfile, the same ML environment on every machine"};
  app.set_version_flag("--version", std::string("envlock ") + ENVLOCK_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_flag("--json", ctx.json, "machine-readable JSON output on stdout");

  auto& table = command_table();
  std::sort(table.begin(), table.end(),
            [](const CommandInfo& a, const CommandInfo& b) { return std::string(a.name) < b.name; });
  for (const auto& cmd : table) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
    sub->fallthrough();
    cmd.setup(*sub, ctx);
    refuse_empty_paths(sub);
  }

  // Usage errors found before any command runs honour --json like every other error.
  Context usage_ctx;
  usage_ctx.json = argv_has_json(argc, argv);

  if (const char* word = first_positional(argc, argv)) {
    const bool known = std::any_of(table.begin(), table.end(),
                                   [&](const CommandInfo& c) { return std::string(c.name) == word; });
    if (!known) {
      return check_stdout(report_error(
          usage_ctx, {envlock::ErrorKind::Usage, "envlock", std::string("unknown command '") + word + "'",
                      "commands: " + command_names(), "run `envlock --help` to see what each command does"}));
    }
    // A command made of subcommands (`envlock snapshot capture`): an unknown one is named the same way.
    const CLI::App* command = app.get_subcommand(word);
    if (const char* sub = positional_after(argc, argv, word); sub != nullptr && !command->get_subcommands({}).empty()) {
      const auto subs = command->get_subcommands({});
      const bool known_sub = std::any_of(subs.begin(), subs.end(), [&](const CLI::App* c) { return c->get_name() == sub; });
      if (!known_sub) {
        return check_stdout(report_error(
            usage_ctx, {envlock::ErrorKind::Usage, std::string("envlock ") + word, std::string("unknown command '") + sub + "'",
                        std::string(word) + " commands: " + subcommand_names(*command),
                        std::string("run `envlock ") + word + " --help` to see what each command does"}));
      }
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return check_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return check_stdout(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return check_stdout(app.exit(e));
  } catch (const CLI::ParseError& e) {
    const char* word = first_positional(argc, argv);
    std::string message = e.what();
    std::string hint = word != nullptr ? std::string("run `envlock ") + word + " --help` for its options"
                                       : "run `envlock --help` to see the commands";
    std::string detail;
    if (word == nullptr && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      message = "a command is required";
      detail = "commands: " + command_names();
    } else if (word != nullptr && positional_after(argc, argv, word) == nullptr &&
               dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !app.get_subcommand(word)->get_subcommands({}).empty()) {
      message = std::string("a command is required after `envlock ") + word + "`";
      detail = std::string(word) + " commands: " + subcommand_names(*app.get_subcommand(word));
      hint = std::string("run `envlock ") + word + " --help` to see what each command does";
    }
    return check_stdout(report_error(usage_ctx, {envlock::ErrorKind::Usage, word != nullptr ? word : "envlock",
                                                 message, detail, hint}));
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << envlock::redact_text(e.what()) << "\n"
              << "hint: this is a bug in envlock; please report it with the command line used\n";
    return check_stdout(1);
  }
  return check_stdout(ctx.exit_code);
}
