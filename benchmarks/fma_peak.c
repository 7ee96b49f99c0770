/* The machine's float32 fused multiply-add peak: each thread runs chains of independent
 * 16-lane FMAs that stay in registers (AVX-512 when available, else AVX2 with 8 lanes).
 * Usage: fma_peak THREADS   prints GFLOP/s for that many threads.
 * Compiled by benchmarks/bench_gemm.py with: cc -O3 -march=native -pthread. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 12
#define ITERATIONS 20000000L

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define SUM _mm512_reduce_add_ps
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
static float SUM(__m256 v) {
  float out[8];
  _mm256_storeu_ps(out, v);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#endif

static void* run(void* result) {
  vec acc[CHAINS];
  vec a = SET1(0.999999f), b = SET1(1e-7f);
  for (int c = 0; c < CHAINS; ++c) acc[c] = SET1((float)c);
  for (long it = 0; it < ITERATIONS; ++it) {
    for (int c = 0; c < CHAINS; ++c) acc[c] = FMA(acc[c], a, b);
  }
  vec total = acc[0];
  for (int c = 1; c < CHAINS; ++c) total = ADD(total, acc[c]);
  *(float*)result = SUM(total); /* keeps the chains alive */
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  pthread_t* ids = malloc(sizeof(pthread_t) * threads);
  float* sink = malloc(sizeof(float) * threads);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, run, &sink[t]);
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds = (end.tv_sec - start.tv_sec) + 1e-9 * (end.tv_nsec - start.tv_nsec);
  double flops = 2.0 * LANES * CHAINS * (double)ITERATIONS * threads;
  printf("%.2f %d %f\n", flops / seconds / 1e9, LANES, sink[0]);
  free(ids);
  free(sink);
  return 0;
}
