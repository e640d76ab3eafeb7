// Activation (conda/activate.py's rules, see envlock/activate.hpp), the shell-hook scripts, and
// running a command in an activated environment.
#include "envlock/activate.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "envlock/process.hpp"
#include "envlock/text.hpp"

extern char** environ;

namespace envlock {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> lookup(const EnvironmentBlock& env, std::string_view name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0)
      return e.substr(name.size() + 1);
  return std::nullopt;
}

std::string_view name_of(const std::string& entry) {
  const auto eq = entry.find('=');
  return std::string_view(entry).substr(0, eq == std::string::npos ? entry.size() : eq);
}

void assign(EnvironmentBlock& env, const std::string& name, const std::optional<std::string>& value) {
  auto it = std::find_if(env.begin(), env.end(), [&](const std::string& e) { return name_of(e) == name; });
  if (!value) {
    if (it != env.end()) env.erase(it);
  } else if (it != env.end()) {
    *it = name + "=" + *value;
  } else {
    env.push_back(name + "=" + *value);
  }
}

/// The `*.sh` files of `dir`, sorted by name (bytes): conda's sorted(glob(dir/*.sh)).
std::vector<fs::path> scripts_in(const fs::path& dir, std::vector<fs::path>& skipped) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 3 || !name.ends_with(".sh") || !it->is_regular_file(ec)) continue;
    const bool control = std::any_of(name.begin(), name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    (control ? skipped : out).push_back(it->path());
  }
  std::sort(skipped.begin(), skipped.end());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  return out;
}

/// conda's _default_env: the folder's name inside an `envs` folder, else the whole prefix.
std::string default_env_name(const fs::path& prefix) {
  return prefix.parent_path().filename() == "envs" ? prefix.filename().string() : prefix.string();
}

std::string posix_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

/// fish: inside single quotes only `\\` and `\'` are escapes (fish-shell docs, "Quotes").
std::string fish_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

/// fish keeps PATH as a list: one quoted element per colon-separated entry (conda's fish
/// activator joins PATH the same way, pathsep_join = '" "'.join).
std::string fish_value(const std::string& name, const std::string& value) {
  if (name != "PATH") return fish_quote(value);
  std::string out;
  std::size_t start = 0;
  for (;;) {
    const auto colon = value.find(':', start);
    out += (out.empty() ? "" : " ") + fish_quote(value.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

}  // namespace

Result<Shell> parse_shell(std::string_view name) {
  if (name == "bash") return Shell::Bash;
  if (name == "zsh") return Shell::Zsh;
  if (name == "fish") return Shell::Fish;
  if (name == "posix" || name == "sh") return Shell::Posix;
  return Error{ErrorKind::Usage, "--shell", "unknown shell '" + std::string(name) + "'", "",
               "use bash, zsh, fish or posix (any POSIX sh: dash, busybox)"};
}

EnvironmentBlock current_environment() {
  EnvironmentBlock out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

Status check_environment_prefix(const fs::path& prefix) {
  std::error_code ec;
  const std::string shown = prefix.string();
  if (!fs::exists(prefix, ec))
    return Error{ErrorKind::Io, shown, "no such environment (the folder does not exist)", "",
                 "create it first: `envlock create -f envlock.yaml -p " + shown + "`"};
  if (!fs::is_directory(prefix / "conda-meta", ec))
    return Error{ErrorKind::Io, shown, "is not an environment (it has no conda-meta/ folder)", "",
                 "pass the folder `envlock create` or `envlock install` made, with -p"};
  return ok_status();
}

Activation plan_activation(const ActivationRequest& request, const EnvironmentBlock& current) {
  Activation a;
  std::error_code ec;
  a.prefix = fs::absolute(request.prefix, ec).lexically_normal();
  if (a.prefix.has_filename() == false && a.prefix.has_parent_path() && a.prefix != a.prefix.root_path())
    a.prefix = a.prefix.parent_path();  // "/x/env/" -> "/x/env"
  const std::string bin = (a.prefix / "bin").string();
  const auto old_path = lookup(current, "PATH");
  int old_level = 0;
  if (const auto lvl = lookup(current, "CONDA_SHLVL")) {
    try {
      old_level = std::max(0, std::stoi(*lvl));
    } catch (const std::exception&) {
      old_level = 0;  // conda: int(value.strip() or 0); a value that is no number counts as none
    }
  }
  a.set.emplace_back("PATH", old_path && !old_path->empty() ? bin + ":" + *old_path : bin);
  a.set.emplace_back("CONDA_PREFIX", a.prefix.string());
  a.set.emplace_back("CONDA_SHLVL", std::to_string(old_level + 1));
  a.set.emplace_back("CONDA_DEFAULT_ENV", default_env_name(a.prefix));
  if (const auto old_prefix = lookup(current, "CONDA_PREFIX"); old_prefix && old_level > 0)
    a.set.emplace_back("CONDA_PREFIX_" + std::to_string(old_level), *old_prefix);
  for (const auto& kv : request.variables) a.set.push_back(kv);
  a.activate_scripts = scripts_in(a.prefix / "etc/conda/activate.d", a.skipped_scripts);
  a.deactivate_scripts = scripts_in(a.prefix / "etc/conda/deactivate.d", a.skipped_scripts);
  std::reverse(a.deactivate_scripts.begin(), a.deactivate_scripts.end());
  return a;
}

std::vector<std::pair<std::string, std::optional<std::string>>> environment_changes(const EnvironmentBlock& before,
                                                                                    const EnvironmentBlock& activated) {
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  for (const auto& e : activated) {
    const std::string name(name_of(e));
    if (name == "_" || name.size() == e.size()) continue;  // bash's last-argument variable
    const std::string value = e.substr(name.size() + 1);
    if (lookup(before, name) != value) out.emplace_back(name, value);
  }
  for (const auto& e : before) {
    const std::string name(name_of(e));
    if (name == "_" || name.size() == e.size()) continue;
    if (!lookup(activated, name)) out.emplace_back(name, std::nullopt);
  }
  return out;
}

Result<EnvironmentBlock> activated_environment(const Activation& activation, const EnvironmentBlock& current) {
  EnvironmentBlock env = current;
  for (const auto& [k, v] : activation.set) assign(env, k, v);
  if (activation.activate_scripts.empty()) return env;
  // The scripts are sourced with no positional parameters, as in the user's shell; their
  // stdout goes to stderr so that the two `env -0` listings stay apart from what they print.
  // The listings are separated by an empty entry (an entry is never empty).
  std::vector<std::string> argv = {
      "bash", "--noprofile", "--norc", "-c",
      "__envlock_scripts=(\"$@\"); set --; command -p env -0; printf '\\0'; "
      "{ for __envlock_s in \"${__envlock_scripts[@]}\"; do . \"$__envlock_s\"; done; } 1>&2; command -p env -0",
      "envlock-activate"};
  for (const auto& s : activation.activate_scripts) argv.push_back(s.string());
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.lookup = ProgramLookup::Path;  // bash from envlock's own PATH (posix_spawnp)
  spawn.environment = env;
  spawn.out = ChildOutput::Capture;
  spawn.err = ChildOutput::Inherit;
  const ChildResult ended = run_process(spawn);
  const std::string& out = ended.out;
  const std::string where = (activation.prefix / "etc/conda/activate.d").string();
  if (ended.start_error)
    return Error{ErrorKind::Io, where, "cannot start bash to run the activation scripts: " + ended.start_error->message(),
                 "", "install bash: conda's activate.d scripts are bash scripts"};
  if (!ended.succeeded())
    return Error{ErrorKind::Io, where,
                 ended.signal != 0 ? "bash was killed by signal " + std::to_string(ended.signal) + " while running the activation scripts"
                                   : "the activation scripts made bash exit with status " + std::to_string(ended.exit_status),
                 "", "a script in it ran `exit` or failed in bash; its message is above"};
  EnvironmentBlock before, after;
  bool second = false;
  std::size_t start = 0;
  while (start < out.size()) {
    auto end = out.find('\0', start);
    if (end == std::string::npos) end = out.size();
    std::string entry = out.substr(start, end - start);
    start = end + 1;
    if (entry.empty() && !second) second = true;
    else if (!entry.empty()) (second ? after : before).push_back(std::move(entry));
  }
  if (!second)
    return Error{ErrorKind::Io, where, "bash did not list the environment after the activation scripts", "",
                 "check that `env` is installed (coreutils)"};
  for (const auto& [k, v] : environment_changes(before, after)) assign(env, k, v);
  return env;
}

std::string activation_script(const Activation& a, Shell shell, const EnvironmentBlock& current,
                              const std::vector<std::pair<std::string, std::optional<std::string>>>& script_changes) {
  std::string out;
  // The variables touched, each once, in the order first set; what deactivation restores.
  std::vector<std::string> touched;
  auto touch = [&touched](const std::string& k) {
    if (std::find(touched.begin(), touched.end(), k) == touched.end()) touched.push_back(k);
  };
  for (const auto& kv : a.set) touch(kv.first);
  if (shell == Shell::Fish) {
    for (const auto& kv : script_changes) touch(kv.first);
    out += "# envlock shell-hook: activates " + a.prefix.string() + "\n";
    out += "# (evaluate with `envlock shell-hook --shell fish | source`; `envlock_deactivate` leaves it)\n";
    out += "function envlock_deactivate\n";
    for (const auto& k : touched) {
      const auto old = lookup(current, k);
      out += old ? "    set -gx " + k + " " + fish_value(k, *old) + "\n" : "    set -e " + k + "\n";
    }
    out += "    functions -e envlock_deactivate\nend\n";
    for (const auto& [k, v] : a.set) out += "set -gx " + k + " " + fish_value(k, v) + "\n";
    for (const auto& [k, v] : script_changes)
      out += v ? "set -gx " + k + " " + fish_value(k, *v) + "\n" : "set -e " + k + "\n";
    return out;
  }
  out += "# envlock shell-hook: activates " + a.prefix.string() + "\n";
  out += "# (evaluate with `eval \"$(envlock shell-hook)\"`; `envlock_deactivate` leaves it)\n";
  out += "envlock_deactivate() {\n";
  for (const auto& s : a.deactivate_scripts) out += "    . " + posix_quote(s.string()) + "\n";
  for (const auto& k : touched) {
    const auto old = lookup(current, k);
    out += old ? "    " + k + "=" + posix_quote(*old) + "; export " + k + "\n" : "    unset " + k + "\n";
  }
  out += "    unset -f envlock_deactivate\n}\n";
  for (const auto& [k, v] : a.set) out += k + "=" + posix_quote(v) + "; export " + k + "\n";
  for (const auto& s : a.activate_scripts) out += ". " + posix_quote(s.string()) + "\n";
  return out;
}

int run_in_environment(const std::vector<std::string>& argv, const EnvironmentBlock& environment) {
  if (argv.empty()) return 0;
  const std::string& cmd = argv.front();
  fs::path program;
  bool found_unexecutable = false;
  if (cmd.find('/') != std::string::npos) {
    program = cmd;
  } else {
    const std::string path = lookup(environment, "PATH").value_or("/usr/bin:/bin");
    std::size_t start = 0;
    for (;;) {
      const auto colon = path.find(':', start);
      std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (dir.empty()) dir = ".";  // an empty PATH entry is the current folder (POSIX XBD 8.3)
      const fs::path candidate = fs::path(dir) / cmd;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        if (::access(candidate.c_str(), X_OK) == 0) {
          program = candidate;
          break;
        }
        found_unexecutable = true;
      }
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (program.empty()) {
      std::cerr << "envlock run: " << printable(cmd) << (found_unexecutable ? ": Permission denied\n" : ": command not found\n");
      return found_unexecutable ? 126 : 127;
    }
  }
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.argv.front() = program.string();
  spawn.environment = environment;
  spawn.input = ChildInput::Inherit;
  spawn.out = ChildOutput::Inherit;
  spawn.err = ChildOutput::Inherit;
  spawn.signals = ChildSignals::Reset;  // the child gets SIGINT's default disposition back
  // envlock stands in for the command as tini and dumb-init do (attack 30, F4: a SIGHUP or SIGUSR1
  // ended envlock and left the command running, re-parented to init): every terminating signal
  // sent to envlock (HUP, INT, QUIT, TERM, USR1, USR2, ALRM, ...) is passed on to the command,
  // which decides; envlock's exit code is then the command's own. A foreground job's Ctrl-C
  // reaches the command from the terminal (same process group) and is not sent twice.
  // A SIGKILLed envlock cannot pass anything on: the command gets SIGKILL too (PR_SET_PDEATHSIG,
  // tini's -p), so that it never runs on, re-parented, without the envlock that started it.
  spawn.parent_death_signal = SIGKILL;
  WaitOptions wait;
  wait.interrupts = Interrupts::Relay;
  const ChildResult ended = run_process(spawn, wait);
  if (ended.start_error) {
    std::cerr << "envlock run: " << printable(cmd) << ": " << std::strerror(ended.start_error->error_number) << "\n";
    return ended.start_error->error_number == ENOENT ? 127 : 126;
  }
  if (ended.signal != 0) return 128 + ended.signal;
  return ended.exit_status < 0 ? 1 : ended.exit_status;
}

}  // namespace envlock
