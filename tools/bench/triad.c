// triad.c: STREAM-like memory bandwidth, best of 10 over 3 arrays of 512 MiB: the triad
// a = b + 3c (24 bytes per element counted) and a read of the 3 arrays (s += a + b + c).
// gcc -O3 -march=native -ffast-math -fopenmp triad.c -o triad; OMP_NUM_THREADS=1 ./triad
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#define N (64L*1024*1024)
int main(void) {
  double *a = aligned_alloc(64, N*8), *b = aligned_alloc(64, N*8), *c = aligned_alloc(64, N*8);
  #pragma omp parallel for
  for (long i = 0; i < N; i++) { a[i] = 1; b[i] = 2; c[i] = 3; }
  double best_t = 1e9, best_r = 1e9, sink = 0;
  for (int k = 0; k < 10; k++) {
    double t = omp_get_wtime();
    #pragma omp parallel for
    for (long i = 0; i < N; i++) a[i] = b[i] + 3.0 * c[i];
    t = omp_get_wtime() - t; if (t < best_t) best_t = t;
    double s = 0; t = omp_get_wtime();
    #pragma omp parallel for reduction(+:s)
    for (long i = 0; i < N; i++) s += a[i] + b[i] + c[i];
    t = omp_get_wtime() - t; if (t < best_r) best_r = t; sink += s;
  }
  printf("threads %d triad %.1f GB/s read %.1f GB/s (%g)\n", omp_get_max_threads(),
         3.0*N*8/best_t/1e9, 3.0*N*8/best_r/1e9, sink);
  return 0;
}
