#pragma once
// envlock/virtual_packages.hpp — conda virtual packages (`__unix`, `__linux`, `__glibc`,
// `__archspec`, `__cuda`, `__osx`, `__win`): what this host offers, and overrides.
//
// Detection follows conda (conda/plugins/virtual_packages/*) and rattler_virtual_packages:
//   __unix     = 0=0 on Unix hosts
//   __linux    = <kernel release, numeric part of uname -r, e.g. 6.1.0>=0
//   __glibc    = <gnu_get_libc_version()>=0
//   __archspec = 1=<microarchitecture>, for x86-64 the psABI level from CPUID (x86_64_v1..v4),
//                otherwise the machine name (aarch64, ppc64le, ...)
//   __cuda     = <max CUDA version the driver supports>=0, from libcuda.so.1 loaded at run time
//                (cuDriverGetVersion + cuInit in a child process, so a broken driver cannot take
//                envlock down), looked up in every layout (loader path, WSL2, Tegra, container
//                folders, CUDA compat) with NVML and nvidia-smi as fallbacks (detect_driver in
//                envlock/probe.hpp); absent — not 0 — when there is no usable driver.
//                CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES hide devices, not the driver:
//                `__cuda` stays (conda unsets CUDA_VISIBLE_DEVICES before cuInit to the same end).
// Overrides, as conda: CONDA_OVERRIDE_CUDA, CONDA_OVERRIDE_GLIBC, CONDA_OVERRIDE_LINUX,
// CONDA_OVERRIDE_ARCHSPEC, CONDA_OVERRIDE_OSX, CONDA_OVERRIDE_WIN. A set, non-empty value replaces
// the detected version (archspec: the build); an empty value removes the package; a value that is
// not a valid conda version is an error naming the variable.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envlock/host.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

/// Detects the virtual packages of `host` with overrides applied, sorted by name: from its
/// kernel_release, glibc_version, microarchitecture and cuda_driver_version (asked only when no
/// CONDA_OVERRIDE_CUDA decides), the overrides through its getenv (envlock/host.hpp); an empty
/// part leaves its package out (`__unix` is always there). `envlock install` and `info` pass
/// Host::system(), a snapshot's compatibility check a Host holding the target's facts.
/// Errors: ErrorKind::Parse for an unparsable CONDA_OVERRIDE_* value, naming the variable; a
/// version override (CUDA, GLIBC, LINUX) must also start with a digit ("CONDA_OVERRIDE_GLIBC=banana
/// is not a version").
Result<std::vector<VirtualPackage>> detect_virtual_packages(const Host& host);

/// x86-64 psABI level of this CPU from CPUID ("x86_64_v1".."x86_64_v4"); on other machines the
/// uname machine name.
std::string detect_microarchitecture();

/// Calls cuDriverGetVersion and cuInit(0) through `library` (dlopen) inside a forked child with a
/// timeout (milliseconds). Returns "major.minor", or nullopt when the library is missing, cuInit
/// fails for another reason than "no device visible" (CUDA_ERROR_NO_DEVICE, _INVALID_DEVICE: a
/// driver whose devices CUDA_VISIBLE_DEVICES hides still counts), the child crashes or times out.
std::optional<std::string> detect_cuda_driver_version(const std::string& library = "libcuda.so.1",
                                                      int timeout_ms = 5000);

}  // namespace envlock
