//! Intervals and paired tests.

/// Wilson score interval at 95 % for `hits` out of `n` (`[0, 1]` when `n` is 0).
///
/// ```
/// let [lo, hi] = mnemon_eval::stats::wilson(8, 10);
/// assert!((lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4);
/// ```
pub fn wilson(hits: usize, n: usize) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, hits as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let center = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    [(center - half).max(0.0), (center + half).min(1.0)]
}

/// Exact two-sided McNemar test: the probability, under no difference, of a split of the `b + c`
/// discordant pairs at least as uneven as `b` vs `c`.
///
/// ```
/// assert_eq!(mnemon_eval::stats::mcnemar_exact(0, 0), 1.0);
/// assert!((mnemon_eval::stats::mcnemar_exact(1, 9) - 0.021484375).abs() < 1e-12);
/// ```
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // Sum of C(n, i) / 2^n for i ≤ k, in logs to stay finite for large n.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_c = 0.0f64; // ln C(n, 0)
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_c + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_known_tables() {
        // Reference values from the closed form (Newcombe 1998, method 3).
        let close = |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).abs() < 1e-4 && (a[1] - b[1]).abs() < 1e-4;
        assert!(close(wilson(0, 10), [0.0, 0.2775]));
        assert!(close(wilson(10, 10), [0.7225, 1.0]));
        assert!(close(wilson(81, 263), [0.2553, 0.3662]));
        assert!(close(wilson(15, 148), [0.0624, 0.1605]));
        assert_eq!(wilson(0, 0), [0.0, 1.0]);
    }

    #[test]
    fn mcnemar_matches_the_binomial() {
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        // 2 · P(X ≤ 2), X ~ Bin(12, 1/2) = 2 · 79 / 4096.
        assert!((mcnemar_exact(2, 10) - 158.0 / 4096.0).abs() < 1e-12);
        assert!((mcnemar_exact(10, 2) - 158.0 / 4096.0).abs() < 1e-12);
        assert!((mcnemar_exact(0, 6) - 2.0 / 64.0).abs() < 1e-12);
        assert!(mcnemar_exact(0, 2000) < 1e-100);
    }
}
