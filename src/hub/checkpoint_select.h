// Choosing the files of a Hugging Face safetensors checkpoint for "-hf ORG/NAME" when the repo has no
// .gguf files: exactly what ignis needs to load the folder (config, weights, tokenizer), nothing else
// (no *.bin / *.pth / *.pt / onnx / original/ / other sub-folders).
//
// Pure functions over a repo's file list and the text of model.safetensors.index.json; no I/O.
// Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ignis::hub {

inline constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";

// True when the listing holds a model .gguf (mmproj projectors do not count). Case-insensitive.
bool has_model_gguf(const std::vector<std::string>& files);

// The top-level files of a checkpoint, in download order: config.json, generation_config.json (if
// listed), model.safetensors.index.json (sharded; its shards come from index_shards) or
// model.safetensors, tokenizer.json or else vocab.json + merges.txt or else tokenizer.model,
// tokenizer_config.json, special_tokens_map.json and added_tokens.json when listed.
// Throws ignis::Error naming the repo and what it lacks ("org/x: no .gguf files and no config.json").
std::vector<std::string> select_checkpoint(const std::string& repo, const std::vector<std::string>& files);

// The shard files that the "weight_map" of model.safetensors.index.json names, sorted and unique.
// `where` names the file in messages. Throws ignis::Error on invalid JSON, a missing/empty weight_map,
// a non-string entry or a shard name that is not a safe top-level "*.safetensors" file name.
std::vector<std::string> index_shards(const std::string& index_text, const std::string& where);

}  // namespace ignis::hub
