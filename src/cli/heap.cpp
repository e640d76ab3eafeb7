// Heap settings for commands that read large inputs into many small allocations in one short
// process (registry.hpp: prepare_heap_for_large_inputs).
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "heap.hpp"

namespace envlock::cli {

void prepare_heap_for_large_inputs() {
  static bool done = false;
  if (done) return;
  done = true;
  constexpr std::size_t kPad = std::size_t{64} << 20;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kPad));  // buffers up to 64 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * kPad));  // what is freed stays for the next phase
  mallopt(M_TOP_PAD, static_cast<int>(kPad));         // grow 64 MiB of address space at a time
  // (no M_ARENA_MAX: threads parsing both sides at once would contend on one arena)
  // Grow the heap now: a block larger than all the heap holds cannot come from a free chunk.
  const auto lo = reinterpret_cast<std::uintptr_t>(sbrk(0));
  void* volatile grow = std::malloc(mallinfo2().arena + (std::size_t{1} << 16));  // volatile: not elided
  std::free(grow);
  const auto hi = reinterpret_cast<std::uintptr_t>(sbrk(0));
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t start = (lo + kHuge - 1) & ~(kHuge - 1);
  // Transparent huge pages where the kernel allows them ("madvise" mode, the default): one page
  // fault per 2 MiB instead of per 4 KiB. A kernel without THP refuses it; nothing else changes.
  if (hi > start) (void)madvise(reinterpret_cast<void*>(start), hi - start, MADV_HUGEPAGE);
}

}  // namespace envlock::cli
