// envlock.yaml and conda environment.yml (envlock/manifest.hpp): both readers, and the
// manifest hash of what parses.
#include "envlock/manifest.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  for (auto format : {envlock::Manifest::Format::Envlock, envlock::Manifest::Format::CondaEnvironment}) {
    auto m = envlock::parse_manifest(text, "fuzz.yaml", "/nonexistent-fuzz-dir", format);
    if (m) (void)envlock::manifest_hash(*m);
  }
  (void)envlock::parse_manifest(text, "fuzz.yaml", "/nonexistent-fuzz-dir");
  return 0;
}
