#pragma once
// The one reader of `nvidia-smi -q -x` output (private to src/host): parse_nvidia_smi_xml
// (envlock/host_facts.hpp, snapshot capture) and query_nvidia_smi (envlock/probe.hpp, the last
// method of the driver chain) both read through it, each keeping its own messages.
#include <string>
#include <string_view>

#include "envlock/host_facts.hpp"

namespace envlock::host_detail {

/// How far the XML was read.
enum class SmiXml {
  Ok,         ///< a <nvidia_smi_log> document: `facts` holds what it says
  NotXml,     ///< libxml2 refused the text: `error_line` (0: unknown) and `error` say why
  OtherRoot,  ///< XML whose root element is `root` (empty: none), not <nvidia_smi_log>
};

struct SmiXmlRead {
  SmiXml state = SmiXml::NotXml;
  NvidiaFacts facts;
  int error_line = 0;
  std::string error;
  std::string root;
};

/// Reads `text` with libxml2 (no network, no DTD, no entity expansion: the output is untrusted):
/// driver_version, cuda_version and per <gpu> product_name, product_architecture, compute_cap,
/// fb_memory_usage/total and, with `include_ids`, uuid; each trimmed, "N/A" read as empty.
/// `source` names the document for libxml2.
SmiXmlRead read_nvidia_smi_xml(std::string_view text, const std::string& source, bool include_ids);

}  // namespace envlock::host_detail
