// Debug dumps of named intermediates (GUIDE.md section 2).
//
// When the environment variable IGNIS_DUMP names a folder, every forward() ubatch writes each named
// intermediate as a NumPy .npy file (f32, shape [rows, cols]) called
// "<IGNIS_DUMP>/<call>_<name>.npy", e.g. "dump/00003_attn_norm-2.npy" for layer 2 of the fourth
// ubatch run by this process. Names follow llama.cpp's graph callback names (attn_norm-N, Qcur-N,
// Kcur-N, Vcur-N, kqv_out-N, attn_out-N, ffn_inp-N, ffn_norm-N, ffn_out-N, l_out-N, result_norm,
// result_output) so the files can be diffed against llama.cpp's eval-callback output.
// Dumper is created per ubatch by one thread; the call counter is atomic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ignis::model {

class Dumper {
 public:
  Dumper();  // reads IGNIS_DUMP; inactive when unset or empty
  bool active() const { return !dir_.empty(); }
  // data: [rows, cols] f32, rows contiguous. il < 0 means "not per layer" (no "-N" suffix).
  void dump(std::string_view name, int il, const float* data, int64_t rows, int64_t cols) const {
    if (active()) write(name, il, data, rows, cols);
  }

 private:
  void write(std::string_view name, int il, const float* data, int64_t rows, int64_t cols) const;
  std::string dir_;
  uint64_t call_ = 0;
};

}  // namespace ignis::model
