// The NVIDIA vendor libraries (libcuda.so.1, libnvidia-ml.so.1), asked at run time.
//
// Each library is loaded in a forked child: a missing, half-installed, crashing or hanging driver
// can only kill the child, never envlock. The child writes one `key=value` line per fact to a
// pipe, and a `step=<function>` line before each vendor call, so that when it dies the parent
// knows in which call. The parent reads until end of file or the deadline, kills the child after
// the deadline, and reaps it.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>


#include <memory>

#include "envlock/probe.hpp"
#include "envlock/process.hpp"
#include "envlock/text.hpp"
#include "envlock/virtual_packages.hpp"
#include "nvidia_smi_xml.hpp"

namespace envlock {
namespace {

// ---- child side: only write(2) and snprintf, no allocation of ours after the fork ----

void emit(int fd, const char* key, const char* value) {
  char line[512];
  const int n = std::snprintf(line, sizeof line, "%s=%s\n", key, value);
  if (n <= 0) return;
  const std::size_t len = static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n) : sizeof line - 1;
  std::size_t done = 0;
  while (done < len) {
    const ssize_t w = write(fd, line + done, len - done);
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

void emit_int(int fd, const char* key, long long value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld", value);
  emit(fd, key, buf);
}

// Strips newlines so a vendor string cannot break the line protocol.
void emit_text(int fd, const char* key, const char* value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s", value != nullptr ? value : "");
  for (char* p = buf; *p != '\0'; ++p) {
    if (*p == '\n' || *p == '\r') *p = ' ';
  }
  emit(fd, key, buf);
}

template <class Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// CUDA driver API types (cuda.h): CUresult and CUdevice are int.
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuGetErrorName = int (*)(int, const char**);
constexpr int kCcMajorAttribute = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kCcMinorAttribute = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// What a child is asked to do: the candidates to load, in order; CUDA_VISIBLE_DEVICES unset first?
struct ChildJob {
  const std::vector<std::string>* paths;
  bool unmask;
};

// Loads the first candidate that loads, writing `tried.<i>=<dlerror>` for the others and
// `dlerror` when none did. A step line precedes each dlopen: a library constructor may crash.
void* load_first(int fd, const ChildJob& job) {
  if (job.unmask) unsetenv("CUDA_VISIBLE_DEVICES");
  const char* last = "no candidate library";
  for (std::size_t i = 0; i < job.paths->size(); ++i) {
    emit(fd, "step", "dlopen");
    void* h = dlopen((*job.paths)[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    char key[32];
    if (h != nullptr) {
      std::snprintf(key, sizeof key, "%zu", i);
      emit(fd, "loaded_index", key);
      return h;
    }
    const char* err = dlerror();
    last = err != nullptr ? err : "dlopen failed";
    std::snprintf(key, sizeof key, "tried.%zu", i);
    emit_text(fd, key, last);
  }
  emit_text(fd, "dlerror", last);
  return nullptr;
}

// The file the loader actually mapped for `fn` (a soname resolves through the loader path).
void emit_loaded_file(int fd, const void* fn) {
  Dl_info info{};
  if (fn != nullptr && dladdr(fn, &info) != 0 && info.dli_fname != nullptr) emit_text(fd, "loaded_file", info.dli_fname);
}

void cuda_child(int fd, const ChildJob& job) {
  void* h = load_first(fd, job);
  if (h == nullptr) return;
  auto init = symbol<CuInit>(h, "cuInit");
  auto driver_version = symbol<CuDriverGetVersion>(h, "cuDriverGetVersion");
  auto get_count = symbol<CuDeviceGetCount>(h, "cuDeviceGetCount");
  auto get = symbol<CuDeviceGet>(h, "cuDeviceGet");
  auto get_name = symbol<CuDeviceGetName>(h, "cuDeviceGetName");
  auto get_attribute = symbol<CuDeviceGetAttribute>(h, "cuDeviceGetAttribute");
  auto total_mem = symbol<CuDeviceTotalMem>(h, "cuDeviceTotalMem_v2");
  auto error_name = symbol<CuGetErrorName>(h, "cuGetErrorName");
  emit_loaded_file(fd, init != nullptr ? reinterpret_cast<const void*>(init) : reinterpret_cast<const void*>(get_count));
  const std::pair<const char*, bool> required[] = {
      {"cuInit", init != nullptr}, {"cuDriverGetVersion", driver_version != nullptr},
      {"cuDeviceGetCount", get_count != nullptr}, {"cuDeviceGet", get != nullptr},
      {"cuDeviceGetName", get_name != nullptr}, {"cuDeviceGetAttribute", get_attribute != nullptr},
      {"cuDeviceTotalMem_v2", total_mem != nullptr}};
  for (const auto& [name, present] : required) {
    if (!present) {
      emit(fd, "missing_symbol", name);
      return;
    }
  }
  // cuDriverGetVersion works without cuInit and tells what an old driver supports even when
  // cuInit fails.
  emit(fd, "step", "cuDriverGetVersion");
  int version = 0;
  if (driver_version(&version) == 0) emit_int(fd, "driver_version", version);
  emit(fd, "step", "cuInit");
  const int rc = init(0);
  emit_int(fd, "init", rc);
  if (error_name != nullptr) {
    emit(fd, "step", "cuGetErrorName");
    const char* name = nullptr;
    if (error_name(rc, &name) == 0 && name != nullptr) emit_text(fd, "init_name", name);
  }
  if (rc != 0) {
    emit(fd, "done", "1");
    return;
  }
  emit(fd, "step", "cuDeviceGetCount");
  int count = 0;
  if (get_count(&count) != 0) count = 0;
  emit_int(fd, "count", count);
  for (int i = 0; i < count && i < 64; ++i) {
    int dev = 0;
    if (get(&dev, i) != 0) continue;
    char key[64];
    char name[256] = {0};
    emit(fd, "step", "cuDeviceGetName");
    if (get_name(name, sizeof name - 1, dev) == 0) {
      std::snprintf(key, sizeof key, "dev.%d.name", i);
      emit_text(fd, key, name);
    }
    emit(fd, "step", "cuDeviceGetAttribute");
    int major = 0, minor = 0;
    if (get_attribute(&major, kCcMajorAttribute, dev) == 0 && get_attribute(&minor, kCcMinorAttribute, dev) == 0) {
      std::snprintf(key, sizeof key, "dev.%d.cc", i);
      char cc[32];
      std::snprintf(cc, sizeof cc, "%d.%d", major, minor);
      emit(fd, key, cc);
    }
    emit(fd, "step", "cuDeviceTotalMem_v2");
    std::size_t bytes = 0;
    if (total_mem(&bytes, dev) == 0) {
      std::snprintf(key, sizeof key, "dev.%d.memory", i);
      emit_int(fd, key, static_cast<long long>(bytes));
    }
  }
  emit(fd, "done", "1");
}

// NVML types (nvml.h): nvmlReturn_t is int, nvmlDevice_t an opaque pointer.
using NvmlDeviceHandle = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlErrorString = const char* (*)(int);
using NvmlDriverVersion = int (*)(char*, unsigned);
using NvmlCount = int (*)(unsigned*);
using NvmlHandle = int (*)(unsigned, NvmlDeviceHandle*);
using NvmlName = int (*)(NvmlDeviceHandle, char*, unsigned);
using NvmlMemoryInfo = int (*)(NvmlDeviceHandle, NvmlMemory*);
using NvmlCc = int (*)(NvmlDeviceHandle, int*, int*);
using NvmlMig = int (*)(NvmlDeviceHandle, unsigned*, unsigned*);

using NvmlCudaVersion = int (*)(int*);

void nvml_child(int fd, const ChildJob& job) {
  void* h = load_first(fd, job);
  if (h == nullptr) return;
  auto init = symbol<NvmlInit>(h, "nvmlInit_v2");
  emit_loaded_file(fd, reinterpret_cast<const void*>(init));
  auto cuda_version_fn = symbol<NvmlCudaVersion>(h, "nvmlSystemGetCudaDriverVersion_v2");
  if (cuda_version_fn == nullptr) cuda_version_fn = symbol<NvmlCudaVersion>(h, "nvmlSystemGetCudaDriverVersion");
  auto shutdown = symbol<NvmlShutdown>(h, "nvmlShutdown");
  auto error_string = symbol<NvmlErrorString>(h, "nvmlErrorString");
  auto driver = symbol<NvmlDriverVersion>(h, "nvmlSystemGetDriverVersion");
  auto count_fn = symbol<NvmlCount>(h, "nvmlDeviceGetCount_v2");
  auto handle_fn = symbol<NvmlHandle>(h, "nvmlDeviceGetHandleByIndex_v2");
  auto name_fn = symbol<NvmlName>(h, "nvmlDeviceGetName");
  // Optional: older drivers lack some; their facts are then left out.
  auto uuid_fn = symbol<NvmlName>(h, "nvmlDeviceGetUUID");
  auto memory_fn = symbol<NvmlMemoryInfo>(h, "nvmlDeviceGetMemoryInfo");
  auto cc_fn = symbol<NvmlCc>(h, "nvmlDeviceGetCudaComputeCapability");
  auto mig_fn = symbol<NvmlMig>(h, "nvmlDeviceGetMigMode");
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", init != nullptr}, {"nvmlShutdown", shutdown != nullptr},
      {"nvmlSystemGetDriverVersion", driver != nullptr}, {"nvmlDeviceGetCount_v2", count_fn != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", handle_fn != nullptr}, {"nvmlDeviceGetName", name_fn != nullptr}};
  for (const auto& [name, present] : required) {
    if (!present) {
      emit(fd, "missing_symbol", name);
      return;
    }
  }
  emit(fd, "step", "nvmlInit_v2");
  const int rc = init();
  emit_int(fd, "init", rc);
  if (rc != 0) {
    if (error_string != nullptr) emit_text(fd, "init_name", error_string(rc));
    emit(fd, "done", "1");
    return;
  }
  emit(fd, "step", "nvmlSystemGetDriverVersion");
  char version[96] = {0};
  if (driver(version, sizeof version - 1) == 0) emit_text(fd, "driver", version);
  if (cuda_version_fn != nullptr) {
    emit(fd, "step", "nvmlSystemGetCudaDriverVersion_v2");
    int cuda = 0;
    if (cuda_version_fn(&cuda) == 0 && cuda > 0) emit_int(fd, "cuda_version", cuda);
  }
  emit(fd, "step", "nvmlDeviceGetCount_v2");
  unsigned count = 0;
  if (count_fn(&count) != 0) count = 0;
  emit_int(fd, "count", count);
  for (unsigned i = 0; i < count && i < 64; ++i) {
    NvmlDeviceHandle dev = nullptr;
    emit(fd, "step", "nvmlDeviceGetHandleByIndex_v2");
    if (handle_fn(i, &dev) != 0) continue;
    char key[64];
    char text[256] = {0};
    emit(fd, "step", "nvmlDeviceGetName");
    if (name_fn(dev, text, 96) == 0) {
      std::snprintf(key, sizeof key, "dev.%u.name", i);
      emit_text(fd, key, text);
    }
    if (uuid_fn != nullptr) {
      emit(fd, "step", "nvmlDeviceGetUUID");
      std::memset(text, 0, sizeof text);
      if (uuid_fn(dev, text, 96) == 0) {
        std::snprintf(key, sizeof key, "dev.%u.uuid", i);
        emit_text(fd, key, text);
      }
    }
    if (memory_fn != nullptr) {
      emit(fd, "step", "nvmlDeviceGetMemoryInfo");
      NvmlMemory memory{};
      if (memory_fn(dev, &memory) == 0) {
        std::snprintf(key, sizeof key, "dev.%u.memory", i);
        emit_int(fd, key, static_cast<long long>(memory.total));
      }
    }
    if (cc_fn != nullptr) {
      emit(fd, "step", "nvmlDeviceGetCudaComputeCapability");
      int major = 0, minor = 0;
      if (cc_fn(dev, &major, &minor) == 0) {
        std::snprintf(key, sizeof key, "dev.%u.cc", i);
        char cc[32];
        std::snprintf(cc, sizeof cc, "%d.%d", major, minor);
        emit(fd, key, cc);
      }
    }
    if (mig_fn != nullptr) {
      emit(fd, "step", "nvmlDeviceGetMigMode");
      unsigned current = 0, pending = 0;
      if (mig_fn(dev, &current, &pending) == 0) {
        std::snprintf(key, sizeof key, "dev.%u.mig", i);
        char mig[32];
        std::snprintf(mig, sizeof mig, "%u,%u", current, pending);
        emit(fd, key, mig);
      }
    }
  }
  emit(fd, "step", "nvmlShutdown");
  shutdown();
  emit(fd, "done", "1");
}

// ---- parent side ----

struct ChildAnswer {
  std::map<std::string, std::string> facts;  // last value per key
  std::string step;                          // last step line seen
  bool timed_out = false;
  int signal = 0;                            // the signal that ended the child, 0 if none
  std::string fork_error;
};

// Runs `body(write_fd)` in a forked child in its own process group (envlock/process.hpp). The
// parent reads until end of file, `done=1` (the child's last line: a helper process the library
// started may still hold the pipe; the group is then killed), the deadline (the group is
// killed) or 1 MiB (a bounded answer: cut there, as a child writing on dies of SIGPIPE), and
// reaps the child.
template <class Body>
ChildResult collect_child(Body&& body, int timeout_ms) {
  WaitOptions wait = WaitOptions::bounded(std::chrono::milliseconds(timeout_ms), 1u << 20);
  wait.finished = [](const std::string& buffer) {
    return buffer.starts_with("done=1\n") || buffer.find("\ndone=1\n") != std::string::npos;
  };
  ChildResult out = run_function(std::forward<Body>(body), ProcessGroup::Own, wait);
  if (out.overflowed) out.signal = SIGPIPE;
  return out;
}

// The start failure of a child as the probe reports it: "pipe: ..." or "fork: ...".
std::string start_failure(const ChildResult& out) { return out.start_error ? out.start_error->message() : std::string(); }

ChildAnswer run_child(void (*body)(int, const ChildJob&), const ChildJob& job, int timeout_ms) {
  const ChildResult raw = collect_child([&](int fd) { body(fd, job); }, timeout_ms);
  ChildAnswer answer;
  answer.timed_out = raw.timed_out;
  answer.signal = raw.signal;
  answer.fork_error = start_failure(raw);
  const std::string& buffer = raw.out;
  std::size_t start = 0;
  while (start < buffer.size()) {
    std::size_t end = buffer.find('\n', start);
    if (end == std::string::npos) break;  // a torn last line is dropped
    const std::string line = buffer.substr(start, end - start);
    start = end + 1;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    if (key == "step") answer.step = line.substr(eq + 1);
    answer.facts[key] = line.substr(eq + 1);
  }
  return answer;
}

std::optional<int> to_int(const std::map<std::string, std::string>& facts, const std::string& key) {
  const auto it = facts.find(key);
  if (it == facts.end()) return std::nullopt;
  try {
    return std::stoi(it->second);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string get(const std::map<std::string, std::string>& facts, const std::string& key) {
  const auto it = facts.find(key);
  return it == facts.end() ? std::string() : it->second;
}

void parse_cc(const std::string& text, int& major, int& minor) {
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) != 2) major = minor = 0;
}

std::uint64_t to_u64(const std::string& text) {
  try {
    return text.empty() ? 0 : std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

// Common fields of both queries: how the child ended.
template <class Query>
void fill_outcome(Query& q, const ChildAnswer& a) {
  q.step = a.step;
  if (!a.fork_error.empty()) {
    q.outcome = VendorOutcome::ChildFailed;
    q.error = a.fork_error;
  } else if (a.timed_out) {
    q.outcome = VendorOutcome::TimedOut;
    q.error = "no answer";
  } else if (a.signal != 0) {
    q.outcome = VendorOutcome::Crashed;
    q.error = std::string("SIG") + (sigabbrev_np(a.signal) != nullptr ? sigabbrev_np(a.signal) : std::to_string(a.signal).c_str());
  } else if (a.facts.count("dlerror")) {
    q.outcome = VendorOutcome::LibraryMissing;
    q.error = get(a.facts, "dlerror");
  } else if (a.facts.count("missing_symbol")) {
    q.outcome = VendorOutcome::SymbolMissing;
    q.error = get(a.facts, "missing_symbol");
  } else if (!a.facts.count("done")) {
    q.outcome = VendorOutcome::Crashed;
    q.error = "the child exited before finishing";
  } else {
    q.outcome = VendorOutcome::Ok;
    q.step.clear();
  }
}

}  // namespace

const char* to_string(VendorOutcome outcome) {
  switch (outcome) {
    case VendorOutcome::Ok: return "ok";
    case VendorOutcome::LibraryMissing: return "library-missing";
    case VendorOutcome::SymbolMissing: return "symbol-missing";
    case VendorOutcome::Crashed: return "crashed";
    case VendorOutcome::TimedOut: return "timed-out";
    case VendorOutcome::ChildFailed: return "child-failed";
  }
  return "child-failed";
}

std::string cuda_error_name(int code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error " + std::to_string(code);
  }
}

namespace {

namespace fs = std::filesystem;

// `text` as on the host: the probe root removed wherever it appears (paths, dlerror texts).
std::string unroot(const fs::path& root, std::string text) {
  const std::string r = root.string();
  if (r.empty() || r == "/") return text;
  const std::string bare = r.back() == '/' ? r.substr(0, r.size() - 1) : r;
  for (std::size_t at = text.find(bare); at != std::string::npos; at = text.find(bare, at)) text.erase(at, bare.size());
  return text;
}

std::vector<std::string> paths_of(const std::vector<LibraryCandidate>& candidates) {
  std::vector<std::string> out;
  for (const auto& c : candidates) out.push_back(c.path);
  return out;
}

// Which candidate loaded, the file the loader mapped, and the candidates that failed.
template <class Query>
void fill_library(Query& q, const ChildAnswer& a, const std::vector<LibraryCandidate>& candidates, const fs::path& root) {
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string key = "tried." + std::to_string(i);
    if (a.facts.count(key)) q.tried.push_back({unroot(root, candidates[i].path), unroot(root, get(a.facts, key))});
  }
  const auto index = to_int(a.facts, "loaded_index");
  const std::size_t i = index && *index >= 0 && static_cast<std::size_t>(*index) < candidates.size()
                            ? static_cast<std::size_t>(*index) : candidates.size() - (candidates.empty() ? 0 : 1);
  if (candidates.empty()) return;
  const std::string file = get(a.facts, "loaded_file");
  q.library = unroot(root, index && !file.empty() ? file : candidates[i].path);
  if (q.error.size() > 0) q.error = unroot(root, q.error);
  q.layout = candidates[i].layout == DriverLayout::Override ? DriverLayout::Override
                                                            : layout_of_library(q.library, candidates[i].layout);
}

}  // namespace

bool cuda_init_counts(int init_result) { return init_result == 0 || init_result == 100 || init_result == 101; }

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

CudaDriverQuery query_cuda_driver(const std::vector<LibraryCandidate>& candidates, int timeout_ms, bool unmask,
                                  const std::filesystem::path& root) {
  CudaDriverQuery q;
  const std::vector<std::string> paths = paths_of(candidates);
  const ChildAnswer a = run_child(&cuda_child, ChildJob{&paths, unmask}, timeout_ms);
  fill_outcome(q, a);
  fill_library(q, a, candidates, root);
  q.driver_version = to_int(a.facts, "driver_version");
  q.init_result = to_int(a.facts, "init");
  if (q.init_result) {
    q.init_error_name = get(a.facts, "init_name");
    if (q.init_error_name.empty()) q.init_error_name = cuda_error_name(*q.init_result);
  }
  const int count = to_int(a.facts, "count").value_or(0);
  for (int i = 0; i < count; ++i) {
    const std::string prefix = "dev." + std::to_string(i) + ".";
    if (!a.facts.count(prefix + "name")) continue;
    CudaDevice d;
    d.ordinal = i;
    d.name = get(a.facts, prefix + "name");
    parse_cc(get(a.facts, prefix + "cc"), d.cc_major, d.cc_minor);
    d.total_memory_bytes = to_u64(get(a.facts, prefix + "memory"));
    q.devices.push_back(std::move(d));
  }
  return q;
}

CudaDriverQuery query_cuda_driver(const std::string& library, int timeout_ms) {
  return query_cuda_driver({{library, DriverLayout::Override}}, timeout_ms, false);
}

NvmlQuery query_nvml(const std::vector<LibraryCandidate>& candidates, int timeout_ms, const std::filesystem::path& root) {
  NvmlQuery q;
  const std::vector<std::string> paths = paths_of(candidates);
  const ChildAnswer a = run_child(&nvml_child, ChildJob{&paths, false}, timeout_ms);
  fill_outcome(q, a);
  fill_library(q, a, candidates, root);
  q.init_result = to_int(a.facts, "init");
  q.init_error = get(a.facts, "init_name");
  q.driver_version = get(a.facts, "driver");
  q.cuda_version = to_int(a.facts, "cuda_version");
  const int count = to_int(a.facts, "count").value_or(0);
  for (int i = 0; i < count; ++i) {
    const std::string prefix = "dev." + std::to_string(i) + ".";
    if (!a.facts.count(prefix + "name")) continue;
    NvmlDevice d;
    d.index = static_cast<unsigned>(i);
    d.name = get(a.facts, prefix + "name");
    d.uuid = get(a.facts, prefix + "uuid");
    parse_cc(get(a.facts, prefix + "cc"), d.cc_major, d.cc_minor);
    d.total_memory_bytes = to_u64(get(a.facts, prefix + "memory"));
    const std::string mig = get(a.facts, prefix + "mig");
    unsigned current = 0, pending = 0;
    if (!mig.empty() && std::sscanf(mig.c_str(), "%u,%u", &current, &pending) == 2) {
      d.mig_current = current != 0;
      d.mig_pending = pending != 0;
    }
    q.devices.push_back(std::move(d));
  }
  return q;
}

NvmlQuery query_nvml(const std::string& library, int timeout_ms) {
  return query_nvml({{library, DriverLayout::Override}}, timeout_ms);
}

NvidiaSmiAnswer query_nvidia_smi(const std::string& program, int timeout_ms, const std::filesystem::path& root) {
  NvidiaSmiAnswer answer;
  answer.command = unroot(root, program) + " -q -x";
  SpawnOptions spawn;
  spawn.argv = {program, "-q", "-x"};
  spawn.err = ChildOutput::Discard;
  spawn.group = ProcessGroup::Own;
  const ChildResult out = run_process(spawn, WaitOptions::bounded(std::chrono::milliseconds(timeout_ms), 1u << 20));
  if (out.start_error && out.start_error->step == "pipe") {
    answer.error = out.start_error->message();
  } else if (out.start_error) {
    answer.error = "could not be run";
  } else if (out.timed_out) {
    answer.error = "did not answer within the timeout; killed";
  } else if (out.signal != 0 || out.overflowed) {
    const int sig = out.overflowed ? SIGPIPE : out.signal;
    answer.error = std::string("killed by SIG") + (sigabbrev_np(sig) != nullptr ? sigabbrev_np(sig) : "?");
  } else if (out.exit_status == 127 && out.out.empty()) {
    answer.error = "could not be run";
  } else if (out.exit_status != 0) {
    answer.error = "exit status " + std::to_string(out.exit_status) +
                   (out.exit_status == 9 ? " (NVIDIA_SMI_ERROR_DRIVER_NOT_LOADED: no driver)" : "");
  }
  if (!answer.error.empty()) return answer;
  // The one reader of this XML (snapshot capture's parse_nvidia_smi_xml reads through it too).
  const host_detail::SmiXmlRead xml = host_detail::read_nvidia_smi_xml(out.out, "nvidia-smi.xml", false);
  if (xml.state == host_detail::SmiXml::NotXml) {
    answer.error = "the output is not XML";
    return answer;
  }
  answer.driver_version = xml.facts.driver_version;
  answer.cuda_version = xml.facts.cuda_version;
  if (answer.driver_version.empty() && answer.cuda_version.empty()) {
    answer.error = "no <driver_version> or <cuda_version> under <nvidia_smi_log>";
  }
  return answer;
}

std::optional<std::string> detect_cuda_driver_version(const std::string& library, int timeout_ms) {
  const CudaDriverQuery q = query_cuda_driver(library, timeout_ms);
  if (q.outcome != VendorOutcome::Ok || !q.init_result || !cuda_init_counts(*q.init_result) || !q.driver_version ||
      *q.driver_version <= 0) {
    return std::nullopt;
  }
  return cuda_version_string(*q.driver_version);
}

}  // namespace envlock
