// parse_repodata (every record, through RepodataIndex) and zstd decompression.
#include <memory>
#include <zstd.h>

#include "envlock/repodata.hpp"
#include "envlock/repodata_index.hpp"
#include "envlock/url.hpp"

namespace envlock {

Result<SubdirRepodata> parse_repodata(std::string_view json, const std::string& source, const std::string& channel_url,
                                      const std::string& subdir) {
  RepodataIndexOptions o;
  o.source = source;
  o.channel_url = channel_url;
  o.subdir = subdir;
  auto index = RepodataIndex::from_text(std::string(json), o);
  if (!index) return index.error();
  auto records = (*index)->all_records();
  if (!records) return records.error();
  SubdirRepodata out;
  out.channel = (*index)->channel();
  out.subdir = subdir;
  out.source = (*index)->source();
  out.content_hash = (*index)->content_hash();
  out.records = std::move(*records);
  out.warnings = (*index)->warnings();
  return out;
}

Result<std::string> zstd_decompress(std::string_view compressed, const std::string& source) {
  constexpr std::size_t kMax = std::size_t{4} << 30;
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::string out;
  unsigned long long known = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (known != ZSTD_CONTENTSIZE_ERROR && known != ZSTD_CONTENTSIZE_UNKNOWN && known < kMax)
    out.reserve(static_cast<std::size_t>(known));
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  std::size_t last = 1;
  for (;;) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(last))
      return Error{ErrorKind::Parse, redact_url(source), std::string("corrupt zstd data: ") + ZSTD_getErrorName(last), "",
                   "delete the file (or the repodata cache) and fetch it again"};
    out.append(buf.data(), o.pos);
    if (out.size() > kMax)
      return Error{ErrorKind::Parse, redact_url(source), "decompressed repodata exceeds 4 GiB", "", ""};
    if (in.pos >= in.size && o.pos < o.size) break;
  }
  if (last != 0)
    return Error{ErrorKind::Parse, redact_url(source), "truncated zstd data", "",
                 "delete the file (or the repodata cache) and fetch it again"};
  return out;
}

}  // namespace envlock
