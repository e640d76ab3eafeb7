// Host facts for the probe: files under the probe root, the environment, both vendor queries.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <system_error>

#include "envlock/probe.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace fs = std::filesystem;

GpuHostFacts gather_host_facts(const Host& host) {
  GpuHostFacts facts;
  static_cast<DriverFacts&>(facts) = detect_driver(host);
  const fs::path& root = host.root;
  auto env = [&](const std::string& name) { return host.env(name); };

  std::error_code ec;
  for (fs::directory_iterator it(root / "dev", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // /dev/nvidia*; /dev/dxg under WSL2; /dev/nvmap and /dev/nvhost-* on Jetson/L4T.
    if (!name.starts_with("nvidia") && name != "dxg" && name != "nvmap" && !name.starts_with("nvhost-")) continue;
    std::error_code type_ec;
    if (it->is_directory(type_ec)) continue;  // nvidia-caps/ holds MIG capabilities
    DeviceNode node;
    node.path = "/dev/" + name;
    node.accessible = access(it->path().c_str(), R_OK | W_OK) == 0;
    facts.device_nodes.push_back(std::move(node));
  }
  std::sort(facts.device_nodes.begin(), facts.device_nodes.end(),
            [](const DeviceNode& a, const DeviceNode& b) { return a.path < b.path; });

  facts.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
  facts.nvidia_visible_devices = env("NVIDIA_VISIBLE_DEVICES");
  for (const char* name : {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
                           "NVIDIA_DISABLE_REQUIRE", "NVIDIA_MIG_CONFIG_DEVICES"}) {
    if (auto v = env(name)) facts.container_env[name] = *v;
  }

  if (fs::exists(root / ".dockerenv", ec)) facts.container_hints.push_back("/.dockerenv exists (Docker)");
  if (fs::exists(root / "run/.containerenv", ec)) facts.container_hints.push_back("/run/.containerenv exists (Podman)");
  if (auto cgroup = read_host_file(root / "proc/1/cgroup")) {
    for (const char* word : {"docker", "kubepods", "containerd", "libpod", "lxc"}) {
      if (cgroup->find(word) != std::string::npos) {
        facts.container_hints.push_back(std::string("the cgroup of PID 1 mentions ") + word);
      }
    }
  }
  if (auto c = env("container"); c && !c->empty()) facts.container_hints.push_back("container=" + *c + " is set");
  if (env("KUBERNETES_SERVICE_HOST")) facts.container_hints.push_back("KUBERNETES_SERVICE_HOST is set (Kubernetes pod)");
  std::sort(facts.container_hints.begin(), facts.container_hints.end());

  return facts;
}

bool visible_under(const std::optional<std::string>& cuda_visible_devices, unsigned index,
                   const std::string& uuid, unsigned device_count) {
  if (!cuda_visible_devices) return true;
  std::stringstream list(*cuda_visible_devices);
  std::string entry;
  while (std::getline(list, entry, ',')) {
    entry = trim(entry);
    if (entry.empty()) return false;
    if (std::isdigit(static_cast<unsigned char>(entry[0]))) {
      char* end = nullptr;
      const unsigned long i = std::strtoul(entry.c_str(), &end, 10);
      if (*end != '\0' || i >= device_count) return false;  // the driver stops at a bad entry
      if (i == index) return true;
    } else if (entry.starts_with("GPU-")) {
      if (!uuid.empty() && uuid.starts_with(entry)) return true;
    } else if (entry.starts_with("MIG-")) {
      // Legacy MIG names embed the parent GPU's UUID: MIG-GPU-<uuid>/<gi>/<ci>.
      const std::string parent = entry.substr(4, entry.find('/') == std::string::npos ? std::string::npos : entry.find('/') - 4);
      if (!uuid.empty() && parent.starts_with("GPU-") && uuid.starts_with(parent)) return true;
    } else {
      return false;
    }
  }
  return false;
}

}  // namespace envlock
