// bench/bench_envlock — envlock's side of the repodata benchmarks (the counterpart of
// ref_libsolv, linking envlock's libraries):
//   bench_envlock load-json REPODATA.json            index the JSON (no cache): solver-ready
//   bench_envlock load-cache REPODATA.json CACHE_DIR  reload through the index cache (the first
//                                                    run in CACHE_DIR writes it)
//   bench_envlock solve REPODATA.json [--cache DIR] SPEC...   load (lazily) and solve once
//   bench_envlock problems REPODATA.json [--cache DIR] --count N --seed S
//                     N seeded random problems of 1-10 specs (names drawn from the file), each
//                     solved on the loaded index; prints p50/p95/max seconds per problem
// Prints one JSON line: {"mode", "records", "names", "seconds", ...} (in-process time of the step;
// whole-process times come from hyperfine). Virtual packages: envlock's linux-64 defaults.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "envlock/lock.hpp"
#include "envlock/repodata_index.hpp"
#include "envlock/solver.hpp"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int usage() {
  std::fprintf(stderr,
               "usage: bench_envlock load-json FILE | load-cache FILE CACHE_DIR | solve FILE [--cache DIR] SPEC... |\n"
               "       problems FILE [--cache DIR] --count N --seed S\n");
  return 2;
}

envlock::Result<std::unique_ptr<envlock::RepodataIndex>> open(const char* file, const std::string& cache) {
  envlock::RepodataIndexOptions o;
  o.source = file;
  o.channel_url = "https://conda.anaconda.org/bench";
  o.subdir = "linux-64";
  o.cache_dir = cache;
  return envlock::RepodataIndex::open_file(file, o);
}

struct Solved {
  bool ok = false;
  bool solved = false;
  std::size_t packages = 0;
};

Solved solve_once(const envlock::RepodataIndex& index, const std::vector<std::string>& specs) {
  envlock::SolveTask task;
  task.repos.push_back({index.channel(), index.subdir(), 0, nullptr, &index});
  task.virtual_packages = envlock::default_virtual_packages("linux-64");
  for (const auto& s : specs) {
    auto spec = envlock::MatchSpec::parse(s);
    if (!spec) {
      std::fprintf(stderr, "bench_envlock: %s\n", spec.error().to_string().c_str());
      return {};
    }
    task.specs.push_back({*spec, s, "bench"});
  }
  auto out = envlock::solve(task);
  if (!out) {
    std::fprintf(stderr, "bench_envlock: %s\n", out.error().to_string().c_str());
    return {};
  }
  return {true, out->solved, out->solution.packages.size()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  const char* file = argv[2];
  std::string cache;
  std::vector<std::string> rest;
  long count = 100, seed = 1;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cache" && i + 1 < argc) cache = argv[++i];
    else if (a == "--count" && i + 1 < argc) count = std::atol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::atol(argv[++i]);
    else rest.push_back(a);
  }
  if (mode == "load-cache") {
    if (rest.empty()) return usage();
    cache = rest[0];
  } else if (mode != "load-json" && mode != "solve" && mode != "problems") {
    return usage();
  }

  const double t0 = now();
  auto index = open(file, cache);
  if (!index) {
    std::fprintf(stderr, "bench_envlock: %s\n", index.error().to_string().c_str());
    return 1;
  }
  const envlock::RepodataIndex& ix = **index;
  double t1 = now();
  std::string extra;
  if (mode == "solve") {
    Solved s = solve_once(ix, rest);
    if (!s.ok) return 1;
    t1 = now();
    extra = ",\"solved\":" + std::string(s.solved ? "true" : "false") + ",\"packages\":" + std::to_string(s.packages) +
            ",\"parsed_names\":" + std::to_string(ix.parsed_names());
  } else if (mode == "problems") {
    // Deterministic draws: std::mt19937_64 with explicit modulo (no distribution objects).
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    const auto& names = ix.names();
    std::vector<double> times;
    std::size_t solved = 0, failed = 0;
    for (long k = 0; k < count; ++k) {
      std::vector<std::string> specs;
      const std::size_t n = 1 + rng() % 10;
      for (std::size_t j = 0; j < n; ++j) specs.emplace_back(names[rng() % names.size()]);
      std::sort(specs.begin(), specs.end());
      specs.erase(std::unique(specs.begin(), specs.end()), specs.end());
      const double a = now();
      Solved s = solve_once(ix, specs);
      times.push_back(now() - a);
      if (!s.ok) ++failed;
      else if (s.solved) ++solved;
    }
    std::sort(times.begin(), times.end());
    auto pct = [&](double p) {
      return times.empty() ? 0.0 : times[std::min(times.size() - 1, static_cast<std::size_t>(p / 100 * (times.size() - 1) + 0.5))];
    };
    t1 = now();
    char buf[256];
    std::snprintf(buf, sizeof buf, ",\"problems\":%ld,\"solved\":%zu,\"errors\":%zu,\"p50\":%.6f,\"p95\":%.6f,\"max\":%.6f",
                  count, solved, failed, pct(50), pct(95), times.empty() ? 0.0 : times.back());
    extra = buf;
  }
  std::printf("{\"mode\":\"%s\",\"records\":%zu,\"names\":%zu,\"from_cache\":%s,\"scanner\":\"%s\",\"seconds\":%.6f%s}\n",
              mode.c_str(), ix.entry_count(), ix.names().size(), ix.from_cache() ? "true" : "false",
              ix.from_cache() ? "cache" : ix.scanned_fast() ? "repodata" : "simdjson", t1 - t0, extra.c_str());
  return 0;
}
