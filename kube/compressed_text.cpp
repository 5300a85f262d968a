#include "kube/compressed_text.h"

// For ZSTD_c_format / ZSTD_d_format (magicless frames): parameters the
// library takes through its stable setParameter calls, declared only in
// its experimental section.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

namespace hb::kube {

namespace {

// zstd's fastest level: a cache write compresses one object, and its reads
// (every reconcile) decompress; the dictionary does most of the work.
constexpr int kCompressionLevel = 1;

CompressedText kept_as_is(std::string_view text) {
  CompressedText out;
  out.bytes.assign(text);
  out.text_bytes = static_cast<uint32_t>(text.size());
  return out;
}

// One compression and one decompression context per thread, reused: making
// them anew for each object costs more than the work.
//
// Frames carry nothing the store already knows or never needs: no magic
// number, no dictionary ID, no content size (the entry keeps the text's
// length). About 5 bytes of an object's 60 or so; the bytes never leave
// this process, so no other reader has to understand them.
struct Contexts {
  ZSTD_CCtx* compress = ZSTD_createCCtx();
  ZSTD_DCtx* decompress = ZSTD_createDCtx();
  Contexts() {
    if (compress != nullptr) {
      ZSTD_CCtx_setParameter(compress, ZSTD_c_format, ZSTD_f_zstd1_magicless);
      ZSTD_CCtx_setParameter(compress, ZSTD_c_contentSizeFlag, 0);
      ZSTD_CCtx_setParameter(compress, ZSTD_c_dictIDFlag, 0);
      ZSTD_CCtx_setParameter(compress, ZSTD_c_compressionLevel, kCompressionLevel);
    }
    if (decompress != nullptr) {
      ZSTD_DCtx_setParameter(decompress, ZSTD_d_format, ZSTD_f_zstd1_magicless);
    }
  }
  Contexts(const Contexts&) = delete;
  Contexts& operator=(const Contexts&) = delete;
  ~Contexts() {
    ZSTD_freeCCtx(compress);
    ZSTD_freeDCtx(decompress);
  }
};

Contexts& contexts() {
  thread_local Contexts per_thread;
  return per_thread;
}

}  // namespace

struct TextDictionary::Tables {
  ZSTD_CDict* compress = nullptr;
  ZSTD_DDict* decompress = nullptr;
  ~Tables() {
    ZSTD_freeCDict(compress);
    ZSTD_freeDDict(decompress);
  }
};

TextDictionary::TextDictionary(std::string_view sample) : tables_(std::make_unique<Tables>()) {
  sample = sample.substr(0, kCompressionDictionaryBytesMax);
  if (sample.empty()) return;
  // A sample without zstd's dictionary magic is used as raw content (JSON
  // text starts with '{', never with the magic; a sample that did would be
  // read as a zstd dictionary, the same way on both sides).
  tables_->compress = ZSTD_createCDict(sample.data(), sample.size(), kCompressionLevel);
  tables_->decompress = ZSTD_createDDict(sample.data(), sample.size());
  if (tables_->compress == nullptr || tables_->decompress == nullptr) {
    tables_ = std::make_unique<Tables>();  // both or neither: the two sides must agree
  }
}

TextDictionary::~TextDictionary() = default;

CompressedText TextDictionary::compress(std::string_view text) const {
  ZSTD_CCtx* context = contexts().compress;
  const bool has_dictionary = tables_->compress != nullptr;
  if (text.empty() || text.size() >= kCompressedTextBytesMax || context == nullptr) {
    return kept_as_is(text);
  }
  std::string out(ZSTD_compressBound(text.size()), '\0');
  // The context is the thread's, shared by every store: this one's tables.
  if (ZSTD_isError(ZSTD_CCtx_refCDict(context, has_dictionary ? tables_->compress : nullptr))) {
    return kept_as_is(text);
  }
  const std::size_t size =
      ZSTD_compress2(context, out.data(), out.size(), text.data(), text.size());
  if (ZSTD_isError(size) || size >= text.size()) return kept_as_is(text);
  out.resize(size);  // not shrunk: the store copies it into its entry at once
  return CompressedText{std::move(out), static_cast<uint32_t>(text.size()), true};
}

bool TextDictionary::decompress(CompressedTextView stored, std::string& text) const {
  if (!stored.compressed) {
    text.assign(stored.bytes);
    return true;
  }
  ZSTD_DCtx* context = contexts().decompress;
  if (context == nullptr) return false;
  if (ZSTD_isError(ZSTD_DCtx_refDDict(context, tables_->decompress))) return false;
  text.resize(stored.text_bytes);
  const std::size_t size = ZSTD_decompressDCtx(context, text.data(), text.size(),
                                               stored.bytes.data(), stored.bytes.size());
  return !ZSTD_isError(size) && size == text.size();
}

std::optional<std::string> TextDictionary::decompress(CompressedTextView stored) const {
  std::string text;
  if (!decompress(stored, text)) return std::nullopt;
  return text;
}

std::size_t TextDictionary::footprint_bytes() const {
  return ZSTD_sizeof_CDict(tables_->compress) + ZSTD_sizeof_DDict(tables_->decompress);
}

}  // namespace hb::kube
