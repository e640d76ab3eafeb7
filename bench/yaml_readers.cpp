// The YAML readers side by side (issue 19 step 4; docs/design.md "YAML readers"): envlock's block
// reader (src/yaml/block_yaml.cpp), Debian's libfyaml (0.7.12, libfyaml-dev) and yaml-cpp,
// each building a whole tree of one file and walking every scalar, as the lockfile reader does;
// and libfyaml's event parser alone (no tree), the least a libfyaml-based reader could cost.
//   yaml_readers FILE [RUNS]   prints one line per reader: the best and the median of RUNS (9).
// Built only where pkg-config finds libfyaml (bench/CMakeLists.txt).
#include <libfyaml.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "block_yaml.hpp"

namespace {

using envlock::block_yaml::Node;

std::size_t walk(const Node& n) {
  if (n.IsScalar()) return n.Scalar().size();
  std::size_t sum = 0;
  for (const Node& c : n.items()) sum += walk(c);
  for (const auto& [k, v] : n.entries()) sum += walk(k) + walk(v);
  return sum;
}

std::size_t walk(fy_node* n) {
  if (n == nullptr) return 0;
  switch (fy_node_get_type(n)) {
    case FYNT_SCALAR: {
      std::size_t len = 0;
      (void)fy_node_get_scalar(n, &len);
      return len;
    }
    case FYNT_SEQUENCE: {
      std::size_t sum = 0;
      void* it = nullptr;
      for (fy_node* c; (c = fy_node_sequence_iterate(n, &it)) != nullptr;) sum += walk(c);
      return sum;
    }
    case FYNT_MAPPING: {
      std::size_t sum = 0;
      void* it = nullptr;
      for (fy_node_pair* p; (p = fy_node_mapping_iterate(n, &it)) != nullptr;)
        sum += walk(fy_node_pair_key(p)) + walk(fy_node_pair_value(p));
      return sum;
    }
  }
  return 0;
}

std::size_t walk(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar().size();
  std::size_t sum = 0;
  if (n.IsSequence())
    for (const auto& c : n) sum += walk(c);
  if (n.IsMap())
    for (const auto& kv : n) sum += walk(kv.first) + walk(kv.second);
  return sum;
}

void measure(const char* name, int runs, const std::function<std::size_t()>& once) {
  std::vector<double> ms;
  std::size_t bytes = 0;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    bytes = once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-12s best %8.1f ms  median %8.1f ms  (%zu scalar bytes)\n", name, ms.front(), ms[ms.size() / 2], bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: yaml_readers FILE [RUNS]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 9;
  measure("block", runs, [&] {
    const auto doc = envlock::block_yaml::parse_block_yaml(text);
    return doc ? walk(doc->root()) : 0;
  });
  measure("libfyaml", runs, [&] {
    fy_parse_cfg cfg{};
    cfg.flags = FYPCF_QUIET;
    fy_document* doc = fy_document_build_from_string(&cfg, text.data(), text.size());
    const std::size_t n = doc ? walk(fy_document_root(doc)) : 0;
    fy_document_destroy(doc);
    return n;
  });
  // libfyaml's event stream, no tree at all: the least a libfyaml-based reader could cost.
  measure("fy-events", runs, [&] {
    fy_parse_cfg cfg{};
    cfg.flags = FYPCF_QUIET;
    fy_parser* parser = fy_parser_create(&cfg);
    std::size_t n = 0;
    if (parser != nullptr && fy_parser_set_string(parser, text.data(), text.size()) == 0) {
      for (fy_event* e; (e = fy_parser_parse(parser)) != nullptr; fy_parser_event_free(parser, e)) {
        if (e->type != FYET_SCALAR) continue;
        std::size_t len = 0;
        (void)fy_token_get_text(e->scalar.value, &len);
        n += len;
      }
    }
    fy_parser_destroy(parser);
    return n;
  });
  measure("yaml-cpp", std::min(runs, 3), [&] { return walk(YAML::Load(text)); });
  return 0;
}
