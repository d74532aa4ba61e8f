// GGUF pre-tokenizer names (tokenizer.ggml.pre) -> the split regexes of that model family.
#pragma once

#include <string>
#include <vector>

#include "text/vocab.h"

namespace ignis::text {

// Adds the pre-tokenizer steps for `pre` to cfg (and the family's ignore_merges / add_bos
// defaults). An unknown name throws ignis::Error naming it and `source`.
void set_gguf_pre_tokenizer(const std::string& pre, const std::string& source,
                            TokenizerConfig* cfg);
// Every name set_gguf_pre_tokenizer knows.
std::vector<std::string> gguf_pre_tokenizer_names();

}  // namespace ignis::text
