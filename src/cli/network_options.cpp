// --connect-timeout, --read-timeout, --low-speed-limit, --max-time, --retries, --ca-bundle; see
// network_options.hpp.
#include "network_options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "envlock/url.hpp"

namespace envlock::cli {
namespace {

/// A whole number of at most 6 digits (the environment variables' rule), at least `min`.
CLI::Validator whole_number(bool seconds, unsigned long min) {
  return CLI::Validator(
      [seconds, min](std::string& v) -> std::string {
        const bool digits = !v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos;
        if (!digits)
          return "'" + v.substr(0, 40) + "' is not a whole number" + (seconds ? " of seconds" : "") +
                 " (at most 6 digits)";
        if (std::stoul(v) < min) return "must be at least " + std::to_string(min) + (seconds ? " second" : "");
        return "";
      },
      "");
}

const CLI::Validator kReadableFile(
    [](std::string& v) -> std::string {
      struct stat st {};
      if (v.empty()) return "is empty (give a PEM file of CA certificates)";
      if (::stat(v.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(v.c_str(), R_OK) != 0)
        return v + " is not a readable file (give a PEM file of CA certificates)";
      return "";
    },
    "");

}  // namespace

void add_network_options(CLI::App& sub) {
  // One command runs per process: the settings are the process's (envlock/fetch.hpp).
  auto settings = std::make_shared<NetworkSettings>();
  auto apply = [settings] { set_network_settings(*settings); };
  sub.add_option_function<std::string>(
         "--connect-timeout", [settings, apply](const std::string& v) {
           settings->connect_timeout = std::chrono::seconds(std::stoul(v));
           apply();
         },
         "seconds to establish a connection (default 30; ENVLOCK_CONNECT_TIMEOUT)")
      ->type_name("SECONDS")
      ->check(whole_number(true, 1));
  sub.add_option_function<std::string>(
         "--read-timeout", [settings, apply](const std::string& v) {
           settings->read_timeout = std::chrono::seconds(std::stoul(v));
           apply();
         },
         "seconds a transfer may stay below --low-speed-limit before it is retried (default 60; ENVLOCK_READ_TIMEOUT)")
      ->type_name("SECONDS")
      ->check(whole_number(true, 1));
  sub.add_option_function<std::string>(
         "--low-speed-limit", [settings, apply](const std::string& v) {
           settings->low_speed_limit = std::stoull(v);
           apply();
         },
         "bytes per second below which a transfer counts as stalled (default 30, as mamba; ENVLOCK_LOW_SPEED_LIMIT)")
      ->type_name("BYTES")
      ->check(whole_number(false, 1));
  sub.add_option_function<std::string>(
         "--max-time", [settings, apply](const std::string& v) {
           settings->max_time = std::chrono::seconds(std::stoul(v));
           apply();
         },
         "seconds one download may take, retries included (default: no limit; ENVLOCK_MAX_TIME)")
      ->type_name("SECONDS")
      ->check(whole_number(true, 1));
  sub.add_option_function<std::string>(
         "--retries", [settings, apply](const std::string& v) {
           settings->retries = static_cast<unsigned>(std::stoul(v));
           apply();
         },
         "retries of a transient network failure (default 4, repodata 3; ENVLOCK_RETRIES)")
      ->type_name("N")
      ->check(whole_number(false, 0));
  sub.add_option_function<std::string>(
         "--ca-bundle", [settings, apply](const std::string& v) {
           settings->ca_bundle = v;
           apply();
         },
         "PEM file of CA certificates for https (default: the system's; ENVLOCK_CA_BUNDLE)")
      ->type_name("FILE")
      ->check(kReadableFile);
  sub.preparse_callback([](std::size_t) {
    for (const auto& problem : network_environment_problems()) warn(problem);
  });
}

FetchProgressCallback repodata_progress_lines(const Context& ctx) {
  if (ctx.stderr_tty || ctx.json) return {};
  // One clock for every batch of the lock (repodata rounds, then the shard walk's steps).
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [last](const FetchProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::seconds(10) || p.files_done == p.files_total) return;
    *last = now;
    char size[32];
    if (p.bytes_done < 1000) std::snprintf(size, sizeof size, "%llu B", static_cast<unsigned long long>(p.bytes_done));
    else if (p.bytes_done < 1000 * 1000) std::snprintf(size, sizeof size, "%.1f kB", static_cast<double>(p.bytes_done) / 1e3);
    else std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(p.bytes_done) / 1e6);
    const std::string line = "fetch repodata " + std::to_string(p.files_done) + "/" + std::to_string(p.files_total) +
                             " files  " + size + "  (waiting on " + redact_url(p.current_url) + ")";
    std::fprintf(stderr, "%s\n", terminal_text(line).c_str());
    std::fflush(stderr);
  };
}

}  // namespace envlock::cli
