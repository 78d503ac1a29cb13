"""Row kernels' building blocks that LLVM can vectorise: a natural log and a fixed-order sum.

numba compiles ``np.log`` to a scalar libm call and a running ``s += x[i]`` to one chain of
dependent adds, so a fused row pass with a log term in its loop does not vectorise, and its running
sums, not memory, set its pace.
:func:`log_normal` is written with bit operations and a polynomial only, so a loop over it
vectorises, and :func:`lane_sum` adds in eight interleaved lanes, which LLVM turns into vector
adds without fast-math (``benchmarks/families.py`` times the fused passes).
Both give the same bits on every run and at every thread count: the order of each sum is fixed by
this code, not by the compiler or the number of threads.

Kernels that use them compile with ``error_model="numpy"`` (Python's error model checks every
division for zero, and that check stops a loop from vectorising) and index from 0, in slices of
the block they work on: numba wraps a negative index around, and for ``range(lo, hi)`` it cannot
rule one out, so such a loop does not vectorise either.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["NORMAL_MIN", "log_normal", "lane_sum", "row_order_sums"]

#: smallest positive normal float64; :func:`log_normal` needs x >= NORMAL_MIN
NORMAL_MIN = 2.2250738585072014e-308

# log 2 split in two so that k * _LN2_HI is exact for |k| < 2^11 (Cody and Waite's reduction)
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# minimax coefficients of (log(1 + f) - f + f^2 / 2) in s = f / (2 + f), the polynomial of fdlibm's
# e_log.c (Sun Microsystems, 1993): |error| < 2^-58.45 on |s| <= 0.1716
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT2 = 1.4142135623730951
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000


@intrinsic
def _bits(typingctx, x):
    """The 64 bits of a float64 as an int64 (a bit cast, no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _from_bits(typingctx, b):
    """The float64 whose 64 bits are the int64 b (a bit cast, no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(inline="always", error_model="numpy")
def log_normal(x):
    """Natural log of a finite normal float64 x > 0, within 1 ulp (fdlibm's method); undefined otherwise.

    x = 2^k m with m in [sqrt(2)/2, sqrt(2)); log x = k log 2 + log(1 + f), f = m - 1, and log(1 + f)
    = f - f^2/2 + s (f^2/2 + R(s^2)) with s = f / (2 + f) and R the minimax polynomial above.  The
    caller checks x >= NORMAL_MIN and x < inf: zeros, subnormals, inf and NaN give wrong values.
    """
    b = _bits(x)
    k = (b >> 52) - 1023
    m = _from_bits((b & _MANTISSA) | _ONE_BITS)        # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    k = k + 1 if big else k
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = 0.5 * f * f
    dk = float(k)
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)


@njit(inline="always", error_model="numpy")
def lane_sum(x):
    """sum of the 1-d array x in a fixed order: eight interleaved lanes, then the lanes pairwise."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    m = x.shape[0] - x.shape[0] % 8
    for j in range(0, m, 8):
        a0 += x[j]
        a1 += x[j + 1]
        a2 += x[j + 2]
        a3 += x[j + 3]
        a4 += x[j + 4]
        a5 += x[j + 5]
        a6 += x[j + 6]
        a7 += x[j + 7]
    for i in range(m, x.shape[0]):
        a0 += x[i]
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@njit(cache=True)
def row_order_sums(T, w, weighted):
    """(sum_i w_i, [sum_i w_i T_ik]_k) added in row order, as ``np.bincount(..., weights=)`` adds (w = 1 unless weighted)."""
    n, d = T.shape
    W = 0.0
    S = np.zeros(d)
    if d == 1:   # scalar accumulators: an array element would be stored and reloaded every row
        s0 = 0.0
        if weighted:
            for i in range(n):
                W += w[i]
                s0 += w[i] * T[i, 0]
        else:
            for i in range(n):
                W += 1.0
                s0 += 1.0 * T[i, 0]
        S[0] = s0
        return W, S
    for i in range(n):
        wi = w[i] if weighted else 1.0
        W += wi
        for k in range(d):
            S[k] += wi * T[i, k]
    return W, S
