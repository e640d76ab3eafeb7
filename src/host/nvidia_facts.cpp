// NVIDIA driver facts: /proc/driver/nvidia/version and `nvidia-smi -q -x` (read with libxml2).
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cctype>
#include <charconv>
#include <memory>
#include <algorithm>

#include "envlock/probe.hpp"
#include "envlock/text.hpp"
#include "envlock/host_facts.hpp"
#include "nvidia_smi_xml.hpp"

namespace envlock {

namespace {

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};

std::string text_of(xmlNode* n) {
  if (n == nullptr) return "";
  xmlChar* c = xmlNodeGetContent(n);
  std::string s = c != nullptr ? reinterpret_cast<const char*>(c) : "";
  xmlFree(c);
  s = trim(s);
  return s == "N/A" ? "" : s;
}

xmlNode* child(xmlNode* n, const char* name) {
  if (n == nullptr) return nullptr;
  for (xmlNode* c = n->children; c != nullptr; c = c->next) {
    if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0) return c;
  }
  return nullptr;
}

}  // namespace

Result<std::string> parse_nvidia_proc_version(std::string_view text, const std::string& source) {
  // One parser for the fact, probe's (envlock/probe.hpp): the file may hold anything.
  const std::string version = parse_nvrm_version(text).version;
  if (version.empty()) {
    return Error{ErrorKind::Parse, source, "no driver version in the `NVRM version:` line", "",
                 "expected a line like `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ...`"};
  }
  return version;
}

namespace host_detail {

SmiXmlRead read_nvidia_smi_xml(std::string_view text, const std::string& source, bool include_ids) {
  SmiXmlRead r;
  // No network, no external DTD loading, no entity expansion: the input is untrusted.
  std::unique_ptr<xmlDoc, DocFree> doc(xmlReadMemory(text.data(), static_cast<int>(text.size()), source.c_str(), nullptr,
                                                     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc) {
    const xmlError* err = xmlGetLastError();
    r.error_line = err != nullptr && err->line > 0 ? err->line : 0;
    std::string msg = err != nullptr && err->message != nullptr ? err->message : "malformed XML";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    r.error = std::move(msg);
    return r;
  }
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (root == nullptr || xmlStrcmp(root->name, BAD_CAST "nvidia_smi_log") != 0) {
    r.state = SmiXml::OtherRoot;
    r.root = root != nullptr ? reinterpret_cast<const char*>(root->name) : "";
    return r;
  }
  r.state = SmiXml::Ok;
  NvidiaFacts& nv = r.facts;
  nv.driver_version = text_of(child(root, "driver_version"));
  nv.cuda_version = text_of(child(root, "cuda_version"));
  for (xmlNode* g = root->children; g != nullptr; g = g->next) {
    if (g->type != XML_ELEMENT_NODE || xmlStrcmp(g->name, BAD_CAST "gpu") != 0) continue;
    GpuInfo gpu;
    gpu.name = text_of(child(g, "product_name"));
    gpu.architecture = text_of(child(g, "product_architecture"));
    // <compute_cap> ("8.0"), when the output has it: none of the -q -x outputs in the corpus do
    // (older drivers); `nvidia-smi --query-gpu=compute_cap` is where current drivers report it.
    gpu.compute_capability = text_of(child(g, "compute_cap"));
    if (include_ids) gpu.uuid = text_of(child(g, "uuid"));
    const std::string total = text_of(child(child(g, "fb_memory_usage"), "total"));  // "24576 MiB"
    std::uint64_t mib = 0;
    if (auto [end, ec] = std::from_chars(total.data(), total.data() + total.size(), mib); ec == std::errc() && end != total.data()) {
      gpu.memory_mib = mib;
    }
    nv.gpus.push_back(std::move(gpu));
  }
  return r;
}

}  // namespace host_detail

Result<NvidiaFacts> parse_nvidia_smi_xml(std::string_view text, const std::string& source, bool include_ids) {
  host_detail::SmiXmlRead r = host_detail::read_nvidia_smi_xml(text, source, include_ids);
  switch (r.state) {
    case host_detail::SmiXml::NotXml: {
      const std::string where = source + (r.error_line > 0 ? ":" + std::to_string(r.error_line) : "");
      return Error{ErrorKind::Parse, where, "not valid nvidia-smi XML: " + r.error, "", "capture it again with `nvidia-smi -q -x`"};
    }
    case host_detail::SmiXml::OtherRoot:
      return Error{ErrorKind::Parse, source, "the root element is <" + r.root + ">, not <nvidia_smi_log>", "",
                   "pass the output of `nvidia-smi -q -x`"};
    case host_detail::SmiXml::Ok: break;
  }
  return std::move(r.facts);
}

}  // namespace envlock
