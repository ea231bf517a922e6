//! The one place that computes similarity between stored vectors.
//!
//! Vectors are unit length, so cosine is their dot product. The kernel sums in a fixed order
//! (32 lanes, then a fixed reduction) with fused multiply-adds, so the AVX2 path and the portable
//! path give the same bits. Byte vectors' dot products are integer sums, exact on every path: the
//! AVX2 kernel takes four rows at a time, 32 bytes per step (`abs(q)` times `v` signed as `q`,
//! summed in pairs to 16 bits and then to 32).

/// Scales `v` to unit length in place; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

/// Cosine of two unit vectors of equal length (their dot product).
///
/// ```
/// let a = [0.6f32, 0.8];
/// assert!((mnemon::internals::vector::cosine(&a, &a) - 1.0).abs() < 1e-6);
/// ```
#[inline]
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { avx2::dot(a, b) };
        }
    }
    portable_dot(a, b)
}

/// The member closest to `vector` by cosine, and that cosine (ties to the earlier member).
pub(crate) fn nearest<'a, K>(
    vector: &[f32],
    members: impl Iterator<Item = (K, &'a [f32])>,
) -> Option<(f32, K)> {
    members.map(|(k, v)| (cosine(vector, v), k)).fold(None, |acc, (c, k)| match acc {
        Some((bc, _)) if bc >= c => acc,
        _ => Some((c, k)),
    })
}

/// Cosine of two unit vectors from their Euclidean distance (`1 − d²/2`).
pub fn cosine_from_l2(distance: f32) -> f32 {
    1.0 - distance * distance / 2.0
}

const LANES: usize = 32;

/// Same order of operations as the AVX2 kernel: 32 running sums updated with fused
/// multiply-adds, reduced pairwise, then the tail.
fn portable_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut acc = [0f32; LANES];
    let mut i = 0;
    while i + LANES <= n {
        for l in 0..LANES {
            acc[l] = a[i + l].mul_add(b[i + l], acc[l]);
        }
        i += LANES;
    }
    let mut sum = reduce(&acc);
    while i < n {
        sum = a[i].mul_add(b[i], sum);
        i += 1;
    }
    sum
}

/// Reduces 4 registers of 8 lanes as the AVX2 kernel does: (r0+r1)+(r2+r3), then 8 → 4 → 2 → 1.
fn reduce(acc: &[f32; LANES]) -> f32 {
    let mut v = [0f32; 8];
    for l in 0..8 {
        v[l] = (acc[l] + acc[8 + l]) + (acc[16 + l] + acc[24 + l]);
    }
    let v4 = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    let v2 = [v4[0] + v4[2], v4[1] + v4[3]];
    v2[0] + v2[1]
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        unsafe {
            let n = a.len().min(b.len());
            let (pa, pb) = (a.as_ptr(), b.as_ptr());
            let mut r = [_mm256_setzero_ps(); 4];
            let mut i = 0;
            while i + super::LANES <= n {
                for (k, acc) in r.iter_mut().enumerate() {
                    let x = _mm256_loadu_ps(pa.add(i + 8 * k));
                    let y = _mm256_loadu_ps(pb.add(i + 8 * k));
                    *acc = _mm256_fmadd_ps(x, y, *acc);
                }
                i += super::LANES;
            }
            let v = _mm256_add_ps(_mm256_add_ps(r[0], r[1]), _mm256_add_ps(r[2], r[3]));
            let v4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            let v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
            let v1 = _mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1));
            let mut sum = _mm_cvtss_f32(v1);
            while i < n {
                sum = (*pa.add(i)).mul_add(*pb.add(i), sum);
                i += 1;
            }
            sum
        }
    }

    /// Sums of 16-bit pair products `abs(q) · sign(v, q)` (each pair at most 2 · 127² = 32,258,
    /// so no saturation: bytes are in −127..=127) widened to 32-bit lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn madd_bytes(qa: __m256i, q: __m256i, v: __m256i, ones: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(qa, _mm256_sign_epi8(v, q)), ones)
    }

    /// The sum of the eight 32-bit lanes of each of four accumulators, in order.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn sums4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128i {
        let ab = _mm256_hadd_epi32(a, b);
        let cd = _mm256_hadd_epi32(c, d);
        let abcd = _mm256_hadd_epi32(ab, cd);
        _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1))
    }

    /// Four rows at a time, 32 bytes per step; a dimension that is not a multiple of 32 (or a
    /// last group of fewer than four rows) goes through the scalar twin.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dot_i8_rows(q: &[i8], rows: &[i8], out: &mut Vec<i32>) {
        unsafe {
            let dim = q.len();
            let count = rows.len() / dim;
            out.reserve(count);
            if !dim.is_multiple_of(32) {
                out.extend(rows.chunks_exact(dim).map(|row| super::portable_dot_i8(q, row)));
                return;
            }
            let steps = dim / 32;
            let pq = q.as_ptr();
            let ones = _mm256_set1_epi16(1);
            let mut r = 0;
            while r + 4 <= count {
                let base = rows.as_ptr().add(r * dim);
                let mut acc = [_mm256_setzero_si256(); 4];
                for s in 0..steps {
                    let qs = _mm256_loadu_si256(pq.add(32 * s) as *const __m256i);
                    let qa = _mm256_abs_epi8(qs);
                    for (j, a) in acc.iter_mut().enumerate() {
                        let v = _mm256_loadu_si256(base.add(j * dim + 32 * s) as *const __m256i);
                        *a = _mm256_add_epi32(*a, madd_bytes(qa, qs, v, ones));
                    }
                }
                let sums = sums4(acc[0], acc[1], acc[2], acc[3]);
                let mut four = [0i32; 4];
                _mm_storeu_si128(four.as_mut_ptr() as *mut __m128i, sums);
                out.extend_from_slice(&four);
                r += 4;
            }
            out.extend(rows[r * dim..].chunks_exact(dim).map(|row| super::portable_dot_i8(q, row)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_and_portable_kernels_agree_bit_for_bit() {
        for n in [0, 1, 7, 31, 32, 33, 100, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 77.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 61.0).collect();
            assert_eq!(cosine(&a, &b).to_bits(), portable_dot(&a, &b).to_bits(), "n={n}");
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            assert!((f64::from(cosine(&a, &b)) - naive).abs() < 1e-4);
        }
    }

    #[test]
    fn byte_dot_products_are_exact_and_quantization_error_is_bounded() {
        for n in [1, 15, 16, 17, 384, 390] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 300.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 250.0).collect();
            let (qa, qb) = (quantize(&a), quantize(&b));
            let exact: i32 = qa.q.iter().zip(&qb.q).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            assert_eq!(dot_i8(&qa.q, &qb.q), exact, "n={n}");
            let mut out = Vec::new();
            dot_i8_rows(&qa.q, &[qb.q.clone(), qa.q.clone()].concat(), &mut out);
            assert_eq!(out[0], exact);
            let approx = qa.scale * qb.scale * exact as f32;
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let bound = norm(&b) * qa.error_norm + qb.error_norm * qa.norm;
            let truth: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((approx - truth).abs() <= bound + 1e-5, "n={n}: {approx} vs {truth}, bound {bound}");
        }
    }

    #[test]
    fn the_byte_row_kernel_is_exact_at_the_extremes_and_on_every_row_count() {
        let mut x = 11u64;
        let mut byte = || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) % 255) as i32 - 127
        };
        for dim in [1, 31, 32, 64, 384, 390] {
            for rows in [0, 1, 3, 4, 5, 8, 9] {
                let q: Vec<i8> = (0..dim).map(|_| byte() as i8).collect();
                let mut data: Vec<i8> = (0..dim * rows).map(|_| byte() as i8).collect();
                if rows > 1 {
                    // The largest sums: every product 127², with both signs.
                    for (j, v) in data[..dim].iter_mut().enumerate() {
                        *v = if q[j] < 0 { -127 } else { 127 };
                    }
                    for (j, v) in data[dim..2 * dim].iter_mut().enumerate() {
                        *v = if q[j] < 0 { 127 } else { -127 };
                    }
                }
                let mut q = q;
                q[0] = -127;
                let mut out = Vec::new();
                dot_i8_rows(&q, &data, &mut out);
                let want: Vec<i32> = data.chunks_exact(dim).map(|row| portable_dot_i8(&q, row)).collect();
                assert_eq!(out, want, "dim {dim} rows {rows}");
            }
        }
    }

    #[test]
    fn bytes_without_the_library_call_are_rounded_and_clamped() {
        let mut x = 5u64;
        let mut values =
            vec![0.5f32, -0.5, 1.5, -1.5, 2.5, 126.5, -126.5, 0.49999997, -0.49999997, 127.00001, 0.0, -0.0];
        values.extend((0..100_000).map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            f32::from_bits((x >> 32) as u32 & 0x7fff_ffff) % 300.0 * if x & 1 == 0 { 1.0 } else { -1.0 }
        }));
        values.extend((0..=2560).map(|i| i as f32 / 10.0 - 128.0));
        values.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, 127.49999, 127.5, -127.5]);
        for y in values {
            assert_eq!(to_byte(y), y.round().clamp(-127.0, 127.0) as i8, "{y}");
        }
    }

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0.0; 4];
        normalize(&mut z);
        assert_eq!(z, vec![0.0; 4]);
    }
}

/// A vector quantized to signed bytes: `v ≈ scale · q`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    /// Bytes in −127..=127.
    pub q: Vec<i8>,
    /// Multiplier back to the original scale.
    pub scale: f32,
    /// Euclidean norm of the quantization error `v − scale · q`.
    pub error_norm: f32,
    /// Euclidean norm of the dequantized vector `scale · q`.
    pub norm: f32,
}

/// Quantizes `v` symmetrically to bytes, recording the error so that callers can bound it.
pub fn quantize(v: &[f32]) -> Quantized {
    let mut q = Vec::with_capacity(v.len());
    let (scale, error_norm, norm) = quantize_into(v, &mut q);
    Quantized { q, scale, error_norm, norm }
}

/// [`quantize`], appending the bytes to `out`: `(scale, error_norm, norm)`. Loading a view
/// quantizes every vector, so each step runs in lanes: the largest magnitude (a maximum, the same
/// in any order), the bytes (each on its own), and the two norms in eight running `f32` sums each.
/// The norms feed an error bound, not a ranked score: their rounding (some 10^-5 of their value)
/// sits far inside the bound's slack (`ROUNDING_SLACK`, 10^-4, in `index::rank`).
pub(crate) fn quantize_into(v: &[f32], out: &mut Vec<i8>) -> (f32, f32, f32) {
    const W: usize = 8;
    let mut lanes = [0f32; W];
    let mut chunks = v.chunks_exact(W);
    for c in &mut chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            *m = m.max(x.abs());
        }
    }
    let max =
        chunks.remainder().iter().fold(lanes.iter().fold(0f32, |m, x| m.max(*x)), |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let start = out.len();
    out.extend(v.iter().map(|x| to_byte(x / scale)));
    let (mut err, mut norm) = ([0f32; W], [0f32; W]);
    let bytes = &out[start..];
    let mut pairs = v.chunks_exact(W).zip(bytes.chunks_exact(W));
    for (xs, bs) in &mut pairs {
        for j in 0..W {
            let back = scale * f32::from(bs[j]);
            let e = xs[j] - back;
            err[j] += e * e;
            norm[j] += back * back;
        }
    }
    let tail = v.len() - v.len() % W;
    for (j, (x, b)) in v[tail..].iter().zip(&bytes[tail..]).enumerate() {
        let back = scale * f32::from(*b);
        err[j] += (x - back) * (x - back);
        norm[j] += back * back;
    }
    let sum = |a: [f32; W]| a.iter().map(|x| f64::from(*x)).sum::<f64>().sqrt() as f32;
    (scale, sum(err), sum(norm))
}

/// `y` rounded half away from zero and clamped to −127..=127, as a byte (NaN gives 0), without
/// the library call `round` is on CPUs without SSE4.1 and without the checks of a saturating
/// cast, so that a loop over many values runs in lanes: clamp, truncate by an integer conversion
/// that cannot overflow, then step by the fraction, which is exact (Sterbenz: `y` and its
/// truncation are within a factor of two, or the truncation is 0). Clamping before rounding
/// gives what rounding before clamping gives: past ±127 both give ±127.
#[inline]
fn to_byte(y: f32) -> i8 {
    let y = if y.is_nan() { 0.0 } else { y.clamp(-127.0, 127.0) };
    // SAFETY: `y` is finite and within ±127, so it truncates to an `i32` without overflow.
    let t = unsafe { y.to_int_unchecked::<i32>() };
    let f = y - t as f32;
    let r = t + i32::from(f >= 0.5) - i32::from(f <= -0.5);
    r as i8
}

/// Exact integer dot products of `query` with each `query.len()`-wide row of `rows`, written to
/// `out` (one per row). Integer sums are exact, so every kernel gives the same numbers.
pub fn dot_i8_rows(query: &[i8], rows: &[i8], out: &mut Vec<i32>) {
    let dim = query.len();
    out.clear();
    if dim == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { avx2::dot_i8_rows(query, rows, out) };
            return;
        }
    }
    out.extend(rows.chunks_exact(dim).map(|row| portable_dot_i8(query, row)));
}

fn portable_dot_i8(query: &[i8], v: &[i8]) -> i32 {
    query.iter().zip(v).map(|(a, b)| i32::from(*a) * i32::from(*b)).sum()
}

/// Exact integer dot product of two byte vectors of equal length.
#[inline]
pub fn dot_i8(query: &[i8], v: &[i8]) -> i32 {
    debug_assert_eq!(query.len(), v.len());
    portable_dot_i8(query, v)
}
