// Choosing the .gguf file of a repo for "-hf REPO[:QUANT]" (llama.cpp's convention).
//
// Pure functions over a repo's file list; no I/O. Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ignis::hub {

inline constexpr const char* kDefaultQuant = "Q4_K_M";

// "ORG/NAME[:QUANT]" split; quant is empty when absent. Throws ignis::Error on a malformed repo id.
struct HfSpec {
  std::string repo;
  std::string quant;
};
HfSpec parse_hf_spec(const std::string& spec);

// Throws ignis::Error unless `repo` is ORG/NAME made of [A-Za-z0-9._-] (no "..", no leading '.').
void check_repo_id(const std::string& repo);

// The files to download for QUANT (empty = the default Q4_K_M, with a fallback to the repo's only
// model when it has just one): one single-file .gguf, or every part of a split .gguf in order (the
// first part is the model path). Matching is case-insensitive on the repo-relative path; names carrying
// QUANT as a whole token (bounded by start/end or one of "-._/") win over mere substrings; single files
// win over split sets; then the shortest, then the alphabetically first name. mmproj files (vision
// projectors) are never chosen. Throws ignis::Error listing the available quants when nothing matches.
std::vector<std::string> select_gguf(const std::string& repo, const std::vector<std::string>& files,
                                     const std::string& quant);

// The quant names that appear in the .gguf file names (sorted, unique, upper case), for error messages.
std::vector<std::string> available_quants(const std::vector<std::string>& files);

}  // namespace ignis::hub
