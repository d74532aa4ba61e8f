// Golden generator for ignis' quant tests: runs REFERENCE ggml (llama.cpp) on deterministic inputs.
//
// Writes into OUT_DIR:
//   input.bin        u32 n_rows, u32 n_per_row, f32 x[n_rows*n_per_row], f32 act[n_per_row]
//   <type>.bin       per ggml type (see write_type below for the layout)
// Every number comes from ggml: blocks from ggml_quantize_chunk (the deterministic _ref quantizers when
// no importance matrix is given), floats from ggml's to_float, activation blocks from ggml-cpu's
// from_float (what llama.cpp uses at run time) and from from_float_ref, dots from ggml-cpu's vec_dot.
//
// Build (after building ggml + ggml-cpu from a llama.cpp checkout, see scripts/ref/ggml_quant_golden.sh):
//   cc -O2 -I$LLAMA/ggml/include ggml_quant_golden.c $BUILD/ggml/src/libggml-cpu.a \
//      $BUILD/ggml/src/libggml-base.a -lm -lpthread -lstdc++ -o ggml_quant_golden
// Usage: ggml_quant_golden OUT_DIR
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

enum { kRows = 8, kPerRow = 1024 };

static uint64_t g_state = 0x1234abcd5678ef01ull;

static uint64_t splitmix64(void) {
  uint64_t z = (g_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform01(void) { return (double)(splitmix64() >> 11) * (1.0 / 9007199254740992.0); }

static double gaussian(void) {
  double u1 = uniform01(), u2 = uniform01();
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Rows exercise different quantizer branches (row % 4): N(0,s); small weights N(0,0.02 s); all positive
// (min > 0); heavy tails with a zero sub-block at the start; s doubles every 4 rows.
static void make_input(float* x, float* act) {
  for (int r = 0; r < kRows; ++r) {
    for (int i = 0; i < kPerRow; ++i) {
      double v;
      switch (r % 4) {
        case 0: v = gaussian(); break;
        case 1: v = 0.02 * gaussian(); break;
        case 2: v = 0.1 + uniform01(); break;
        default: {
          double g = gaussian();
          v = i < 32 ? 0.0 : 0.5 * g * g * g;
        }
      }
      x[r * kPerRow + i] = (float)(v * (1 << (r / 4)));
    }
  }
  for (int i = 0; i < kPerRow; ++i) act[i] = (float)(gaussian() * (1.0 + 2.0 * (i % 7 == 0)));
}

static void write_all(FILE* f, const void* p, size_t n) {
  if (fwrite(p, 1, n, f) != n) {
    perror("fwrite");
    exit(1);
  }
}

static void put_u32(FILE* f, uint32_t v) { write_all(f, &v, 4); }

// <type>.bin layout (little-endian):
//   char magic[4] = "IGQ1"; u32 type, n_rows, n_per_row, row_bytes, vec_dot_type, act_row_bytes
//   u8  blocks[n_rows * row_bytes]          ggml_quantize_chunk(type, x)
//   f32 deq[n_rows * n_per_row]             ggml to_float(blocks)
//   u8  act_cpu[act_row_bytes]              ggml-cpu from_float(act) in vec_dot_type
//   u8  act_ref[act_row_bytes]              ggml from_float_ref(act) in vec_dot_type
//   f32 dots[n_rows]                        ggml-cpu vec_dot(blocks row r, act_cpu)
static void write_type(const char* dir, enum ggml_type t, const float* x, const float* act) {
  const struct ggml_type_traits* tr = ggml_get_type_traits(t);
  const struct ggml_type_traits_cpu* cpu = ggml_get_type_traits_cpu(t);
  const enum ggml_type vt = cpu->vec_dot_type;
  const struct ggml_type_traits* vtr = ggml_get_type_traits(vt);
  const struct ggml_type_traits_cpu* vcpu = ggml_get_type_traits_cpu(vt);
  const size_t rb = ggml_row_size(t, kPerRow);
  const size_t ab = ggml_row_size(vt, kPerRow);

  uint8_t* blocks = calloc(kRows, rb);
  float* deq = calloc(kRows * kPerRow, sizeof(float));
  uint8_t* act_cpu = calloc(1, ab);
  uint8_t* act_ref = calloc(1, ab);
  float dots[kRows];

  ggml_quantize_chunk(t, x, blocks, 0, kRows, kPerRow, NULL);
  for (int r = 0; r < kRows; ++r) {
    if (t == GGML_TYPE_F32) memcpy(deq + r * kPerRow, blocks + r * rb, rb);  // ggml has no f32 to_float
    else tr->to_float(blocks + r * rb, deq + r * kPerRow, kPerRow);
  }
  if (vt == GGML_TYPE_F32) {
    memcpy(act_cpu, act, ab);
    memcpy(act_ref, act, ab);
  } else {
    vcpu->from_float(act, act_cpu, kPerRow);
    if (vtr->from_float_ref) vtr->from_float_ref(act, act_ref, kPerRow);
    else memcpy(act_ref, act_cpu, ab);  // no separate reference conversion in ggml for this type
  }
  for (int r = 0; r < kRows; ++r) cpu->vec_dot(kPerRow, &dots[r], 0, blocks + r * rb, 0, act_cpu, 0, 1);

  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, tr->type_name);
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  write_all(f, "IGQ1", 4);
  put_u32(f, (uint32_t)t);
  put_u32(f, kRows);
  put_u32(f, kPerRow);
  put_u32(f, (uint32_t)rb);
  put_u32(f, (uint32_t)vt);
  put_u32(f, (uint32_t)ab);
  write_all(f, blocks, kRows * rb);
  write_all(f, deq, sizeof(float) * kRows * kPerRow);
  write_all(f, act_cpu, ab);
  write_all(f, act_ref, ab);
  write_all(f, dots, sizeof dots);
  fclose(f);
  free(blocks);
  free(deq);
  free(act_cpu);
  free(act_ref);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  ggml_cpu_init();
  static float x[kRows * kPerRow], act[kPerRow];
  make_input(x, act);

  char path[4096];
  snprintf(path, sizeof path, "%s/input.bin", argv[1]);
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return 1;
  }
  put_u32(f, kRows);
  put_u32(f, kPerRow);
  write_all(f, x, sizeof x);
  write_all(f, act, sizeof act);
  fclose(f);

  const enum ggml_type types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                                  GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                                  GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) write_type(argv[1], types[i], x, act);
  return 0;
}
