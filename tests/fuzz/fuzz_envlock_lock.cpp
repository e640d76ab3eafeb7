// envlock.lock (envlock/lockfile.hpp): parse, and for what parses the writer and the round trip
// (the text written parses again).
#include "envlock/lockfile.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  auto lock = envlock::Lockfile::parse(text, "fuzz.lock", "/nonexistent-fuzz-dir");
  if (!lock) return 0;
  const std::string out = lock->to_yaml("/nonexistent-fuzz-dir");
  if (!envlock::Lockfile::parse(out, "fuzz-again.lock", "/nonexistent-fuzz-dir")) __builtin_trap();
  for (const auto& [env, e] : lock->environments) {
    for (const auto& [platform, p] : e.platforms) (void)envlock::to_explicit(p);
  }
  return 0;
}
