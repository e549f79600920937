/* ops_generic.c - the portable build of the kernels (ops_kern.h).
 *
 * v8 is eight floats in plain C (ops_v8.h), so this builds and runs on any
 * CPU and gives, lane by lane, the bits of the AVX2 build: the same
 * operations in the same order, each fused multiply-add an fmaf (exact
 * by definition; one instruction where the CPU has FMA, a slower libm
 * routine where it has not). The packing the tiled attention uses is
 * the portable gemm's (ops.c). Not fast: on x86-64 the AVX2 build is
 * the one that runs unless NORMSCOPE_KERNELS=generic asks for this one.
 */
#include "ops_simd.h"

/* GCC on x86-64 builds each kernel twice, for CPUs with FMA (where fmaf
 * is one instruction and the lanes vectorize) and for the rest (libm's
 * fmaf), chosen when the program loads: the same C, the same exact
 * operations, so the same bits; only the speed differs. */
/* Not under the sanitizers: the clones' ifunc resolvers run while the
 * program is being loaded, before ThreadSanitizer's runtime is up. Only
 * with glibc: the clones are chosen through IFUNC relocations, which
 * musl's loader refuses ("unsupported relocation type 37"); a musl
 * build runs the default clone everywhere (on an AVX2 CPU the AVX2
 * kernels run anyway), which gives the same bits. */
#if NS_OPS_X86 && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__) && defined(__GLIBC__)
#define KERN_FN __attribute__((target_clones("fma", "default")))
#endif

#include "ops_v8.h"

static void pack_tr(float *dst, const float *src, long rs, int kc, int nc)
{
    ops_generic_pack_b(dst, src, 1, rs, kc, nc);
}

static void pack_cp(float *dst, const float *src, long rs, int kc, int nc)
{
    ops_generic_pack_b(dst, src, rs, 1, kc, nc);
}

#define OPS_KERN_TABLE ops_kernels_generic
#include "ops_kern.h"
