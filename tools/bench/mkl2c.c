// mkl2c.c: a random llama2.c checkpoint and tokenizer.bin of a given shape, for
// llama.cpp's llama-convert-llama2c-to-ggml. gcc -O2 mkl2c.c -o mkl2c
// usage: mkl2c dim hidden layers heads kv_heads vocab seq_len out.bin tok.bin
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
static uint64_t st = 0x9E3779B97F4A7C15ull;
static float rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return ((st >> 40) / 16777216.0f - 0.5f) * 0.1f; }
static void put(FILE *f, long n, int ones) {
  static float buf[1 << 16];
  while (n > 0) { long k = n < (1 << 16) ? n : (1 << 16);
    for (long i = 0; i < k; i++) buf[i] = ones ? 1.0f : rnd();
    fwrite(buf, 4, k, f); n -= k; }
}
int main(int argc, char **argv) {
  if (argc != 10) { fprintf(stderr, "usage\n"); return 2; }
  int c[7]; for (int i = 0; i < 7; i++) c[i] = atoi(argv[1 + i]);
  long dim = c[0], hid = c[1], L = c[2], H = c[3], KV = c[4], V = c[5], S = c[6];
  long kvdim = dim * KV / H, hs = dim / H;
  FILE *f = fopen(argv[8], "wb"); fwrite(c, 4, 7, f); // vocab > 0: shared classifier
  put(f, V * dim, 0); put(f, L * dim, 1); put(f, L * dim * dim, 0); put(f, L * kvdim * dim, 0);
  put(f, L * kvdim * dim, 0); put(f, L * dim * dim, 0); put(f, L * dim, 1);
  put(f, L * hid * dim, 0); put(f, L * hid * dim, 0); put(f, L * hid * dim, 0); put(f, dim, 1);
  put(f, S * hs, 0); fclose(f);
  FILE *t = fopen(argv[9], "wb"); uint32_t maxlen = 16; fwrite(&maxlen, 4, 1, t);
  for (long i = 0; i < V; i++) { char s[32]; int n;
    if (i >= 3 && i < 259) n = snprintf(s, sizeof s, "<0x%02lX>", i - 3); else n = snprintf(s, sizeof s, "t%ld", i);
    float sc = -(float)i; uint32_t len = n; fwrite(&sc, 4, 1, t); fwrite(&len, 4, 1, t); fwrite(s, 1, n, t); }
  fclose(t); return 0;
}
