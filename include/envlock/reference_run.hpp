#pragma once
// envlock/reference_run.hpp — a reference run as a value: the manifest's `reference:` entry,
// carried into the lockfile with its recorded metric. Running and verifying one is
// envlock/reference.hpp (the probe module); docs/manifest.md and docs/lockfile.md give the fields.

#include <map>
#include <optional>
#include <string>

namespace envlock {

/// The manifest's `reference: {command, metric, tolerance}` and, once recorded, its value.
struct ReferenceRun {
  std::string command;
  std::string metric;       ///< a JSON key path (`json:loss` / `a.b`) or `regex:<re with one group>`
  double tolerance = 0.0;   ///< absolute tolerance
  std::optional<double> recorded_value;
  std::map<std::string, std::string> recorded_host;  ///< probe facts of the recording host
};

}  // namespace envlock
