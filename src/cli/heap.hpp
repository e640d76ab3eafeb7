// Heap settings for commands that read large inputs (heap.cpp).
#pragma once

namespace envlock::cli {

/// Sets up glibc's heap for a command that reads large inputs (two lockfiles of thousands of
/// records, a prefix's conda-meta and file lists) into many small allocations, in one short
/// process: the heap grows 64 MiB of address space at a time and asks for transparent huge pages
/// on it (madvise(MADV_HUGEPAGE): one page fault per 2 MiB instead of per 4 KiB, where the kernel
/// has THP in "madvise" or "always" mode), keeps what is freed (M_TRIM_THRESHOLD) and serves
/// buffers up to 64 MiB itself (M_MMAP_THRESHOLD), and worker threads allocate from the same heap
/// (M_ARENA_MAX 1; their own arenas would be faulted in 4 KiB at a time). Measured (perf stat,
/// Release): the 1,000-package x 5-platform diff 10,548 -> ~850 page faults, the 700-package
/// `snapshot capture --no-hash` 2,935 -> ~800; CPU time was not measurable on the busy machine
/// (load 7-9: runs of the same binary differed by 30%).
/// Call it before the command allocates much and before it starts threads; later calls do nothing.
/// Memory is only used when touched; the process's peak RSS grows by at most a few MiB.
void prepare_heap_for_large_inputs();

}  // namespace envlock::cli
