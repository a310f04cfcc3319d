// Integer tensor-core products with wmma: u8 and s8 inputs, s32 accumulators, in the three shapes, row- and
// column-major, the accumulator loaded from memory and stored back (as immaTensorCoreGemm does).
#include <mma.h>
using namespace nvcuda;

template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
__device__ void tile_product(int* d, const T* a, const T* b, const int* c, int lda, int ldb, int ldc) {
    wmma::fragment<wmma::matrix_a, M, N, K, T, LayoutA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, T, LayoutB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, int> acc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(acc, c, ldc, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, ldc, wmma::mem_row_major);
}

// a: 16x16 row-major, b: 16x16 column-major (ld 16), c and d 16x16
__global__ void wmma_u8_16x16x16(int* d, const unsigned char* a, const unsigned char* b, const int* c) {
    tile_product<16, 16, 16, unsigned char, wmma::row_major, wmma::col_major>(d, a, b, c, 16, 16, 16);
}

__global__ void wmma_s8_16x16x16(int* d, const signed char* a, const signed char* b, const int* c) {
    tile_product<16, 16, 16, signed char, wmma::row_major, wmma::row_major>(d, a, b, c, 16, 16, 16);
}

// 32x8 result: a 32x16 column-major, b 16x8 row-major
__global__ void wmma_s8_32x8x16(int* d, const signed char* a, const signed char* b, const int* c) {
    tile_product<32, 8, 16, signed char, wmma::col_major, wmma::row_major>(d, a, b, c, 32, 8, 8);
}

// 8x32 result: a 8x16 row-major, b 16x32 column-major, accumulator starting from zero and stored column-major
__global__ void wmma_u8_8x32x16(int* d, const unsigned char* a, const unsigned char* b) {
    wmma::fragment<wmma::matrix_a, 8, 32, 16, unsigned char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 32, 16, unsigned char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 32, 16, int> acc;
    wmma::fill_fragment(acc, 0);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 8, wmma::mem_col_major);
}

// saturating accumulate: int32 overflow clamps
__global__ void wmma_s8_saturate(int* d, const signed char* a, const signed char* b, const int* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc, true);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}
