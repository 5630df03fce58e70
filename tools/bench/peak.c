// peak.c: fp32 FMA peak, 12 independent FMA chains per thread, AVX-512 and AVX2; and the int8
// VPDPBUSD (AVX-512 VNNI) peak the same way, in multiply-adds (MAC) per second.
// gcc -O3 -march=native -fopenmp peak.c -o peak; OMP_NUM_THREADS=1 ./peak
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <omp.h>
#define N 20000000L /* iterations of 12 independent FMAs per thread */
#define BODY(T, FMA, SET) { T m = SET(0.999999f), c = SET(1e-7f); \
  T a0=SET(0),a1=SET(1),a2=SET(2),a3=SET(3),a4=SET(4),a5=SET(5),a6=SET(6),a7=SET(7),a8=SET(8),a9=SET(9),a10=SET(10),a11=SET(11); \
  for (long k = 0; k < N; k++) { a0=FMA(a0,m,c);a1=FMA(a1,m,c);a2=FMA(a2,m,c);a3=FMA(a3,m,c);a4=FMA(a4,m,c);a5=FMA(a5,m,c); \
    a6=FMA(a6,m,c);a7=FMA(a7,m,c);a8=FMA(a8,m,c);a9=FMA(a9,m,c);a10=FMA(a10,m,c);a11=FMA(a11,m,c); __asm__("" ::: "memory"); } \
  T s = a0+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11; float o[16]; memcpy(o, &s, sizeof s); sink += o[0]; }
int main(void) {
  double b512 = 0, b256 = 0; float sink = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t = omp_get_wtime();
    #pragma omp parallel reduction(+:sink)
    BODY(__m512, _mm512_fmadd_ps, _mm512_set1_ps)
    t = omp_get_wtime() - t; double f = 2.0*16*12*N*omp_get_max_threads()/t/1e9; if (f > b512) b512 = f;
    t = omp_get_wtime();
    #pragma omp parallel reduction(+:sink)
    BODY(__m256, _mm256_fmadd_ps, _mm256_set1_ps)
    t = omp_get_wtime() - t; f = 2.0*8*12*N*omp_get_max_threads()/t/1e9; if (f > b256) b256 = f;
  }
  printf("threads %d fp32 FMA peak: AVX-512 %.0f GFLOP/s, AVX2 %.0f GFLOP/s (%g)\n", omp_get_max_threads(), b512, b256, sink);
  double v512 = 0, v256 = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t = omp_get_wtime();
    #pragma omp parallel reduction(+:sink)
    BODY(__m512i, _mm512_dpbusd_epi32, _mm512_set1_epi32)
    t = omp_get_wtime() - t; double f = 64.0*12*N*omp_get_max_threads()/t/1e9; if (f > v512) v512 = f;
    t = omp_get_wtime();
    #pragma omp parallel reduction(+:sink)
    BODY(__m256i, _mm256_dpbusd_epi32, _mm256_set1_epi32)
    t = omp_get_wtime() - t; f = 32.0*12*N*omp_get_max_threads()/t/1e9; if (f > v256) v256 = f;
  }
  printf("threads %d int8 VPDPBUSD peak: zmm %.0f GMAC/s, ymm %.0f GMAC/s (%g)\n", omp_get_max_threads(), v512, v256, sink);
  return 0;
}
