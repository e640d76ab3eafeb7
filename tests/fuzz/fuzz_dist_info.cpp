// A pip *.dist-info folder (PEP 376/627; envlock/pip.hpp read_dist_info): RECORD is the input,
// METADATA a fixed valid one.
#include "envlock/pip.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = envlock::fuzz::scratch();
  const auto di = dir / "lib/python3.11/site-packages/fuzz-1.0.dist-info";
  envlock::fuzz::write_file(di / "METADATA", "Metadata-Version: 2.1\nName: fuzz\nVersion: 1.0\n");
  envlock::fuzz::write_file(di / "INSTALLER", "pip\n");
  envlock::fuzz::write_file(di / "RECORD", envlock::fuzz::text_of(data, size));
  (void)envlock::read_dist_info(di, "lib/python3.11/site-packages/fuzz-1.0.dist-info");
  return 0;
}
