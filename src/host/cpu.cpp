// x86-64 psABI microarchitecture level from CPUID (the levels glibc and conda's __archspec use).
#include <sys/utsname.h>

#include <string>

#include "envlock/virtual_packages.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace envlock {

#if defined(__x86_64__)
namespace {
struct Regs { unsigned a = 0, b = 0, c = 0, d = 0; };
Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}
bool os_saves_avx_state(unsigned mask) {
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & mask) == mask;
}
}  // namespace

std::string detect_microarchitecture() {
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  const Regs l1 = cpuid(1);
  const Regs l7 = max_leaf >= 7 ? cpuid(7) : Regs{};
  const unsigned ext_max = __get_cpuid_max(0x80000000u, nullptr);
  const Regs e1 = ext_max >= 0x80000001u ? cpuid(0x80000001u) : Regs{};
  const bool osxsave = (l1.c >> 27) & 1;

  // x86-64-v2: CMPXCHG16B, LAHF-SAHF, POPCNT, SSE3, SSE4.1, SSE4.2, SSSE3.
  const bool v2 = ((l1.c >> 13) & 1) && (e1.c & 1) && ((l1.c >> 23) & 1) && (l1.c & 1) &&
                  ((l1.c >> 19) & 1) && ((l1.c >> 20) & 1) && ((l1.c >> 9) & 1);
  // x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, OSXSAVE (+ OS saves YMM state).
  const bool v3 = v2 && osxsave && os_saves_avx_state(0x6) && ((l1.c >> 28) & 1) &&
                  ((l7.b >> 5) & 1) && ((l7.b >> 3) & 1) && ((l7.b >> 8) & 1) &&
                  ((l1.c >> 29) & 1) && ((l1.c >> 12) & 1) && ((e1.c >> 5) & 1) &&
                  ((l1.c >> 22) & 1);
  // x86-64-v4: AVX512F, AVX512BW, AVX512CD, AVX512DQ, AVX512VL (+ OS saves ZMM state).
  const bool v4 = v3 && os_saves_avx_state(0xe6) && ((l7.b >> 16) & 1) && ((l7.b >> 30) & 1) &&
                  ((l7.b >> 28) & 1) && ((l7.b >> 17) & 1) && ((l7.b >> 31) & 1);
  return v4 ? "x86_64_v4" : v3 ? "x86_64_v3" : v2 ? "x86_64_v2" : "x86_64_v1";
}
#else
std::string detect_microarchitecture() {
  struct utsname u {};
  if (uname(&u) != 0) return "";
  return u.machine;
}
#endif

}  // namespace envlock
