//! The one place that computes similarity between stored vectors.
//!
//! Vectors are unit length, so cosine is their dot product. The kernel sums in a fixed order
//! (32 lanes, then a fixed reduction) with fused multiply-adds, so the AVX2 path and the portable
//! path give the same bits.

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

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dot_i8_rows(q: &[i16], rows: &[i8], out: &mut Vec<i32>) {
        let dim = q.len();
        out.reserve(rows.len() / dim);
        for row in rows.chunks_exact(dim) {
            out.push(dot_i8(q, row));
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn dot_i8(q: &[i16], v: &[i8]) -> i32 {
        let n = q.len().min(v.len());
        let (pq, pv) = (q.as_ptr(), v.as_ptr());
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i + 16 <= n {
            let bytes = _mm_loadu_si128(pv.add(i) as *const __m128i);
            let wide = _mm256_cvtepi8_epi16(bytes);
            let query = _mm256_loadu_si256(pq.add(i) as *const __m256i);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(wide, query));
            i += 16;
        }
        let lo = _mm256_castsi256_si128(acc);
        let hi = _mm256_extracti128_si256(acc, 1);
        let s4 = _mm_add_epi32(lo, hi);
        let s2 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0b01_00_11_10));
        let s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0b00_00_00_01));
        let mut sum = _mm_cvtsi128_si32(s1);
        while i < n {
            sum += i32::from(*pq.add(i)) * i32::from(*pv.add(i));
            i += 1;
        }
        sum
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
            let wide: Vec<i16> = qa.q.iter().map(|x| i16::from(*x)).collect();
            let exact: i32 = wide.iter().zip(&qb.q).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            assert_eq!(dot_i8(&wide, &qb.q), exact, "n={n}");
            let mut out = Vec::new();
            dot_i8_rows(&wide, &[qb.q.clone(), qa.q.clone()].concat(), &mut out);
            assert_eq!(out[0], exact);
            let approx = qa.scale * qb.scale * exact as f32;
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let bound = norm(&b) * qa.error_norm + qb.error_norm * qa.norm;
            let truth: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((approx - truth).abs() <= bound + 1e-5, "n={n}: {approx} vs {truth}, bound {bound}");
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
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let q: Vec<i8> = v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect();
    let (mut err, mut norm) = (0f64, 0f64);
    for (x, b) in v.iter().zip(&q) {
        let back = f64::from(scale) * f64::from(*b);
        err += (f64::from(*x) - back).powi(2);
        norm += back * back;
    }
    Quantized { q, scale, error_norm: err.sqrt() as f32, norm: norm.sqrt() as f32 }
}

/// Exact integer dot products of a widened query with each `query.len()`-wide row of `rows`,
/// written to `out` (one per row).
pub fn dot_i8_rows(query: &[i16], rows: &[i8], out: &mut Vec<i32>) {
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

fn portable_dot_i8(query: &[i16], v: &[i8]) -> i32 {
    query.iter().zip(v).map(|(a, b)| i32::from(*a) * i32::from(*b)).sum()
}

/// Exact integer dot product of a widened query and a byte vector.
#[inline]
pub fn dot_i8(query: &[i16], v: &[i8]) -> i32 {
    debug_assert_eq!(query.len(), v.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { avx2::dot_i8(query, v) };
        }
    }
    portable_dot_i8(query, v)
}
