// pixi.lock, formats 1-7 (envlock/readers.hpp read_pixi_lock).
#include "envlock/readers.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  (void)envlock::read_pixi_lock(text, "pixi.lock");
  return 0;
}
