// llama_ref: evaluates a GGUF model with llama.cpp (through llama.h) and prints JSON for goldens.
//
// Reference tool only (never part of ignis). Build against a llama.cpp build made by
// scripts/ref/build_llamacpp.sh, e.g.:
//   cc -O2 -o llama_ref scripts/ref/llama_ref.c -I$LL/include -I$LL/ggml/include
//      -L$LL/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LL/build/bin
// (scripts/ref/make_goldens.sh does this).
//
// Usage: llama_ref MODEL.gguf [--prompt 1,2,3] [--n-predict N] [--top K] [--tf 1,2,3,...]
//                  [--threads T] [--kv f32|f16] [--greedy-logits]
//   --prompt:  greedy run: the prompt is decoded as one batch, then N tokens are generated one at a time
//              through the KV cache, taking the argmax (lowest id on ties) at each step; end-of-generation
//              tokens are not special (always N steps). Per step the top K (id, logit) pairs are printed,
//              and with --greedy-logits all logits.
//   --tf:      teacher-forced run (fresh cache): the whole sequence in one batch, logits at every position.
//   --kv:      KV cache type (default f32, so the reference adds no f16 rounding of K/V).
//   --fa:      flash attention on|off (default off: ggml's CPU flash attention rounds Q to f16).
// Output (stdout): {"reference": ..., "model": ..., "n_vocab": V, "prompt": [...], "greedy": [...],
//                   "greedy_top": [[[id, logit] x K] per step], "greedy_logits": [[V] per step],
//                   "tf_tokens": [...], "tf_logits": [[V] per position]}
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int parse_ids(const char* s, llama_token** out) {
  int cap = 16, n = 0;
  llama_token* v = malloc(sizeof(llama_token) * cap);
  while (*s) {
    char* end;
    long x = strtol(s, &end, 10);
    if (end == s) {
      fprintf(stderr, "llama_ref: bad token list near '%s'\n", s);
      exit(2);
    }
    if (n == cap) v = realloc(v, sizeof(llama_token) * (cap *= 2));
    v[n++] = (llama_token)x;
    s = *end == ',' ? end + 1 : end;
  }
  *out = v;
  return n;
}

static void print_ids(const char* key, const llama_token* t, int n) {
  printf("\"%s\": [", key);
  for (int i = 0; i < n; ++i) printf("%s%d", i ? ", " : "", t[i]);
  printf("]");
}

static void print_row(const float* x, int n) {
  printf("[");
  for (int i = 0; i < n; ++i) printf("%s%.5f", i ? "," : "", x[i]);
  printf("]");
}

static int decode(struct llama_context* ctx, const llama_token* toks, int n, int pos0, int all_logits) {
  struct llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    b.token[i] = toks[i];
    b.pos[i] = pos0 + i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = all_logits || i == n - 1;
  }
  b.n_tokens = n;
  int rc = llama_decode(ctx, b);
  llama_batch_free(b);
  return rc;
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  llama_token *prompt = NULL, *tf = NULL;
  int n_prompt = 0, n_tf = 0, n_predict = 64, top_k = 5, threads = 2, greedy_logits = 0;
  enum ggml_type kv_type = GGML_TYPE_F32;
  int flash = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--prompt") && v) n_prompt = parse_ids(argv[++i], &prompt);
    else if (!strcmp(a, "--tf") && v) n_tf = parse_ids(argv[++i], &tf);
    else if (!strcmp(a, "--n-predict") && v) n_predict = atoi(argv[++i]);
    else if (!strcmp(a, "--top") && v) top_k = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--kv") && v) kv_type = !strcmp(argv[++i], "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32;
    else if (!strcmp(a, "--fa") && v) flash = !strcmp(argv[++i], "on");
    else if (!strcmp(a, "--greedy-logits")) greedy_logits = 1;
    else if (a[0] != '-' && !model_path) model_path = a;
    else {
      fprintf(stderr, "llama_ref: unknown or incomplete argument %s\n", a);
      return 2;
    }
  }
  if (!model_path) {
    fprintf(stderr, "usage: llama_ref MODEL.gguf [--prompt ids] [--n-predict N] [--top K] [--tf ids]\n");
    return 2;
  }
  llama_log_set(quiet_log, NULL);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(model_path, mp);
  if (!model) {
    fprintf(stderr, "llama_ref: cannot load %s\n", model_path);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int n_ctx = n_prompt + n_predict;
  if (n_tf > n_ctx) n_ctx = n_tf;
  n_ctx = (n_ctx + 255) / 256 * 256;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_ctx;
  cp.n_ubatch = n_ctx;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.type_k = kv_type;
  cp.type_v = kv_type;
  cp.no_perf = 1;
  cp.flash_attn_type = flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "llama_ref: cannot create a context for %s\n", model_path);
    return 1;
  }
  printf("{\"reference\": \"llama.cpp (node-llama-cpp 3.21.1 bundle) via scripts/ref/llama_ref.c, kv %s, fa %s\",\n",
         kv_type == GGML_TYPE_F32 ? "f32" : "f16", flash ? "on" : "off");
  printf("\"model\": \"%s\", \"n_vocab\": %d", model_path, n_vocab);
  if (n_prompt > 0) {
    llama_token* gen = calloc((size_t)n_predict + 1, sizeof(llama_token));
    float* top_logit = malloc(sizeof(float) * n_predict * top_k);
    int* top_id = malloc(sizeof(int) * n_predict * top_k);
    float* all = greedy_logits ? malloc(sizeof(float) * (size_t)n_predict * n_vocab) : NULL;
    if (decode(ctx, prompt, n_prompt, 0, 0) != 0) {
      fprintf(stderr, "llama_ref: decode failed\n");
      return 1;
    }
    for (int s = 0; s < n_predict; ++s) {
      const float* lg = llama_get_logits_ith(ctx, -1);
      if (all) memcpy(all + (size_t)s * n_vocab, lg, sizeof(float) * n_vocab);
      // top K by logit, ties to the lower id
      for (int k = 0; k < top_k; ++k) {
        int best = -1;
        for (int j = 0; j < n_vocab; ++j) {
          int taken = 0;
          for (int q = 0; q < k; ++q) taken |= top_id[s * top_k + q] == j;
          if (!taken && (best < 0 || lg[j] > lg[best])) best = j;
        }
        top_id[s * top_k + k] = best;
        top_logit[s * top_k + k] = lg[best];
      }
      gen[s] = top_id[s * top_k];
      if (s + 1 < n_predict && decode(ctx, &gen[s], 1, n_prompt + s, 0) != 0) {
        fprintf(stderr, "llama_ref: decode failed at step %d\n", s);
        return 1;
      }
    }
    printf(",\n");
    print_ids("prompt", prompt, n_prompt);
    printf(",\n");
    print_ids("greedy", gen, n_predict);
    printf(",\n\"greedy_top\": [");
    for (int s = 0; s < n_predict; ++s) {
      printf("%s[", s ? ",\n  " : "");
      for (int k = 0; k < top_k; ++k)
        printf("%s[%d, %.5f]", k ? ", " : "", top_id[s * top_k + k], top_logit[s * top_k + k]);
      printf("]");
    }
    printf("]");
    if (all) {
      printf(",\n\"greedy_logits\": [");
      for (int s = 0; s < n_predict; ++s) {
        printf(s ? ",\n" : "");
        print_row(all + (size_t)s * n_vocab, n_vocab);
      }
      printf("]");
    }
  }
  if (n_tf > 0) {
    llama_memory_clear(llama_get_memory(ctx), 1);
    if (decode(ctx, tf, n_tf, 0, 1) != 0) {
      fprintf(stderr, "llama_ref: teacher-forced decode failed\n");
      return 1;
    }
    printf(",\n");
    print_ids("tf_tokens", tf, n_tf);
    printf(",\n\"tf_logits\": [");
    for (int i = 0; i < n_tf; ++i) {
      printf(i ? ",\n" : "");
      print_row(llama_get_logits_ith(ctx, i), n_vocab);
    }
    printf("]");
  }
  printf("}\n");
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
