#pragma once
// The command table: every command file registers one entry (name, one-line summary, setup).
// main.cpp builds the CLI11 app from the table, sorted by name, so help and dispatch come from
// one place. A command's setup adds its options to `sub` and installs a callback that stores the
// command's exit code in `ctx.exit_code`.
//
// Exit codes (documented in docs/cli.md, "Errors and exit codes"): 0 ok, 1 failure, 2 usage error
// (the command line itself is wrong); commands may document
// more (probe: 3 = no GPU where the lockfile needs one).

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "envlock/result.hpp"

namespace envlock::cli {

struct Context {
  bool json = false;       ///< --json: machine-readable output on stdout
  bool color = false;      ///< colour allowed: stdout is a TTY and NO_COLOR is unset
  bool stderr_tty = false; ///< progress displays allowed
  int exit_code = 0;
};

using SetupFn = void (*)(CLI::App& sub, Context& ctx);

struct CommandInfo {
  const char* name;
  const char* summary;
  SetupFn setup;
};

std::vector<CommandInfo>& command_table();

struct RegisterCommand {
  RegisterCommand(const char* name, const char* summary, SetupFn setup) {
    command_table().push_back({name, summary, setup});
  }
};

/// `s` as it may reach a terminal: each line through printable() (envlock/text.hpp: every control
/// character as `\xNN`, a C1 too), the line breaks kept. Every text sink of the CLI (errors,
/// warnings, script messages) goes through it: names, paths and messages come from lockfiles,
/// snapshots, manifests and package metadata, and `envlock show` is a git textconv for untrusted
/// pull requests.
std::string terminal_text(std::string_view s);

/// Prints `error` on stderr in envlock's style ("error: " + Error::to_string(), through
/// terminal_text()) or, with --json, as {"error": {...}} on stdout. Returns the exit code for its kind (Usage -> 2, else 1): Usage is
/// only for a malformed command line; anything about the state of a named path is a failure (1).
int report_error(const Context& ctx, const Error& error);

/// `j` as --json prints it: indented by 2, and never failing on text that is not UTF-8 (a file
/// name's raw bytes, a corrupt record): each invalid byte is written `\xNN` (escape_invalid_utf8,
/// envlock/text.hpp), as JSON (RFC 8259) text must be UTF-8; every invisible character as a
/// `\uXXXX` escape (json_escape_invisible). No trailing newline.
std::string json_text(const nlohmann::json& j);

/// Prints a warning line on stderr ("warning: ...", through terminal_text()).
void warn(const std::string& message);

}  // namespace envlock::cli
