// Small argument helpers shared by subcommands: byte sizes ("2G", "512MiB") and whole text files.
#pragma once

#include <cstdint>
#include <string>

namespace ignis::cli {

// "123", "512K", "2M", "1.5G", "2GiB", "4GB" -> bytes (binary units). Throws Error naming `flag`.
uint64_t parse_size(const std::string& s, const char* flag);
// The whole file; throws Error naming `flag` and the path when it cannot be read.
std::string read_text_file(const std::string& path, const char* flag);

}  // namespace ignis::cli
