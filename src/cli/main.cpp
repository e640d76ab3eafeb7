// envlock's entry point: builds the CLI from the command table and maps errors to exit codes.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/build_info.hpp"
#include "envlock/url.hpp"
#include "registry.hpp"

namespace envlock::cli {

std::vector<CommandInfo>& command_table() {
  static std::vector<CommandInfo> table;
  return table;
}

namespace {
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
    std::cout << j.dump(2) << "\n";
  }
  std::cerr << "error: " << error.to_string() << "\n";
  return exit_code_for(error.kind);
}

void warn(const std::string& message) { std::cerr << "warning: " << redact_text(message) << "\n"; }

}  // namespace envlock::cli

int main(int argc, char** argv) {
  using namespace envlock::cli;
  Context ctx;
  ctx.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
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
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << envlock::redact_text(e.what()) << "\n"
              << "hint: this is a bug in envlock; please report it with the command line used\n";
    return 1;
  }
  return ctx.exit_code;
}
