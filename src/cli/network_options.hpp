#pragma once
// Network settings on the command line of every command that transfers (lock, install, create,
// snapshot deploy): --connect-timeout, --read-timeout, --low-speed-limit, --max-time, --retries,
// --ca-bundle. They win over the ENVLOCK_* variables (envlock/fetch.hpp, set_network_settings);
// docs/cache.md, "Downloads".
#include <CLI/CLI.hpp>

#include "envlock/fetch.hpp"
#include "registry.hpp"

namespace envlock::cli {

/// Adds the six options to `sub`. A value is checked as it is parsed (not a whole number, 0
/// seconds or 0 bytes/s, a CA bundle that is not a readable file: exit 2 naming the option) and then applies
/// to every transfer of the process. When `sub` runs, each network variable set to a value that
/// cannot be used is named in a warning (it is ignored).
void add_network_options(CLI::App& sub);

/// Progress of `lock`'s repodata and shard downloads for a log (stderr not a terminal, no
/// --json): one plain line at most every 10 s while a batch is still running, naming the URL it
/// waits on (`fetch repodata 1/2 files  1.2 MB  (waiting on https://...)`), as install's package
/// downloads do; nothing when batches finish sooner. Empty (no callback) otherwise.
FetchProgressCallback repodata_progress_lines(const Context& ctx);

}  // namespace envlock::cli
