// envlock snapshot files (envlock/snapshot.hpp Snapshot::parse), and the round trip of what
// parses through to_yaml().
#include "envlock/snapshot.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  auto snap = envlock::Snapshot::parse(text, "fuzz.snapshot.yaml");
  if (snap) (void)envlock::Snapshot::parse(snap->to_yaml(), "fuzz-again.snapshot.yaml");
  (void)envlock::Lockfile::parse(text, "fuzz.snapshot.yaml", "/nonexistent-fuzz-dir");
  return 0;
}
