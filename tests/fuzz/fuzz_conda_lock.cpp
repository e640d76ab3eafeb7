// conda-lock.yml (envlock/readers.hpp read_conda_lock; also the format detection).
#include "envlock/readers.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  (void)envlock::read_conda_lock(text, "conda-lock.yml");
  (void)envlock::detect_lock_format(text, "conda-lock.yml");
  return 0;
}
