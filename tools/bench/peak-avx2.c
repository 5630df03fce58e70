// peak-avx2.c: the arithmetic peaks of x86 CPUs without AVX-512 (the avx2 and avx2+vnni kernel
// routes), 12 independent accumulators per thread as peak.c does for AVX-512:
//   fp32 FMA on ymm (GFLOP/s);
//   the int8 step of the avx2 route's q8 kernels, VPSIGNB + VPMADDUBSW + VPMADDWD + VPADDD
//     (32 multiply-adds of u8 x s8 into int32), and of its q4 kernels, VPMADDUBSW + VPADDW
//     (32 multiply-adds into int16), in GMAC/s;
//   VPDPBUSD on ymm, VEX-encoded (AVX-VNNI), in GMAC/s, where the CPU has it.
// The loops are inline assembly so that the compiler neither merges nor reorders them.
// gcc -O2 -fopenmp peak-avx2.c -o peak-avx2; OMP_NUM_THREADS=1 ./peak-avx2
#include <stdio.h>
#include <time.h>
#include <omp.h>
#define N 20000000L /* iterations of 12 steps per thread */
#define R12(S) S("4") S("5") S("6") S("7") S("8") S("9") S("10") S("11") S("12") S("13") S("14") S("15")
#define FMA(a) "vfmadd231ps %%ymm1, %%ymm0, %%ymm" a "\n"
#define Q8(a) "vpsignb %%ymm1, %%ymm2, %%ymm3\n vpmaddubsw %%ymm3, %%ymm0, %%ymm3\n vpmaddwd %%ymm2, %%ymm3, %%ymm3\n vpaddd %%ymm3, %%ymm" a ", %%ymm" a "\n"
#define Q4(a) "vpmaddubsw %%ymm1, %%ymm0, %%ymm3\n vpaddw %%ymm3, %%ymm" a ", %%ymm" a "\n"
#define DP(a) "%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" a "\n"
#define LOOP(BODY) __asm__ volatile( \
  "vpxor %%ymm0, %%ymm0, %%ymm0\n vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n vpcmpeqd %%ymm2, %%ymm2, %%ymm2\n" \
  "1:\n" R12(BODY) "dec %0\n jnz 1b\n vzeroupper\n" : "+r"(n) :: "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", \
  "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15")

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double bestcpu; /* the best rate per thread CPU-second of the last run */

static double run(int kind) {
  double best = 0;
  double per = kind == 0 ? 2.0 * 8 : 32.0; /* FLOP or MAC per step */
  bestcpu = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t = omp_get_wtime(), tc = 0;
    #pragma omp parallel reduction(max:tc)
    {
      long n = N;
      double c0 = cpu();
      switch (kind) {
      case 0: LOOP(FMA); break;
      case 1: LOOP(Q8); break;
      case 2: LOOP(Q4); break;
      case 3: LOOP(DP); break;
      }
      tc = cpu() - c0;
    }
    t = omp_get_wtime() - t;
    double f = per * 12 * N * omp_get_max_threads() / t / 1e9;
    if (f > best) best = f;
    f = per * 12 * N / tc / 1e9;
    if (f > bestcpu) bestcpu = f;
  }
  return best;
}

int main(void) {
  int t = omp_get_max_threads();
  __builtin_cpu_init();
  /* Per thread CPU-second is what a thread gets while it runs: on a shared
     machine, the figure to set beside kernels timed by thread CPU time. */
  double r;
  r = run(0); printf("threads %d fp32 FMA ymm: %.0f GFLOP/s (%.0f per thread CPU-second)\n", t, r, bestcpu);
  r = run(1); printf("threads %d int8 VPSIGNB+VPMADDUBSW+VPMADDWD+VPADDD (avx2 q8 step): %.0f GMAC/s (%.0f per thread CPU-second)\n", t, r, bestcpu);
  r = run(2); printf("threads %d int8 VPMADDUBSW+VPADDW (avx2 q4 step): %.0f GMAC/s (%.0f per thread CPU-second)\n", t, r, bestcpu);
  if (__builtin_cpu_supports("avxvnni")) {
    r = run(3); printf("threads %d int8 VPDPBUSD ymm, VEX (avx2+vnni): %.0f GMAC/s (%.0f per thread CPU-second)\n", t, r, bestcpu);
  }
  else
    printf("no AVX-VNNI on this CPU\n");
  return 0;
}
