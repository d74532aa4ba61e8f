// Files written in large, aligned pieces (GGUF files, downloads), so the page cache holds them in
// large folios that a later mapping of the file takes 2 MiB at a time.
//
// NOTE (page cache folios): the page cache keeps a written file in folios as large as the writes that
// made them (ext4 with large folios, Linux 6.18 here), and a 2 MiB-aligned mapping of a 2 MiB folio is
// one page-table entry. Touching every page of a 1 GB GGUF mapping on the 2-vCPU Zen 5 VM
// (`bench/first-touch-file.c`): written in 4 KiB or 64 KiB pieces (stdio's default buffer, cp) 445-580
// ms, every page its own fault; written in 4 MiB pieces 13-23 ms, 98-100% of it mapped 2 MiB at a
// time. Load to first token (`bench/load-vs-llamacpp.sh 5`, medians) of the same bytes in the two
// page-cache states, small -> large folios: Qwen2.5-1.5B Q4_K_M 656 -> 370 ms, 0.5B F16 611 -> 321,
// Qwen3-0.6B Q8_0 489 -> 326 (BENCHMARKS.md, thirty-first session). A file read from disk (after a
// reboot) gets large folios from readahead either way.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>

namespace ignis {

inline constexpr size_t kLargeWriteBytes = size_t{4} << 20;

// Gives f a stdio buffer of kLargeWriteBytes, so it writes in 4 MiB pieces at 4 MiB-aligned offsets
// (glibc also sends the whole buffers of a larger fwrite straight to write(2) from the aligned point
// the flush leaves). Call before f's first write and keep the result until fclose(f); null (f keeps
// its default buffer) if setvbuf refuses.
inline std::unique_ptr<char[]> large_write_buffer(std::FILE* f) {
  auto buf = std::make_unique_for_overwrite<char[]>(kLargeWriteBytes);
  if (std::setvbuf(f, buf.get(), _IOFBF, kLargeWriteBytes) != 0) return nullptr;
  return buf;
}

}  // namespace ignis
