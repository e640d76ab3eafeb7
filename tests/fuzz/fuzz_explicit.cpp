// @EXPLICIT files (conda list --explicit; envlock/readers.hpp read_explicit), and whatever
// read_lockfile_text makes of the same bytes.
#include "envlock/readers.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  (void)envlock::read_explicit(text, "explicit.txt");
  (void)envlock::read_lockfile_text(text, "explicit.txt");
  return 0;
}
