//! Percentiles and medians.

/// Nearest-rank percentile `p` (0..=100) of an ascending slice; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median of the values (mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Latency summary of nanosecond samples, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Largest sample.
    pub max_us: f64,
}

/// Summarises nanosecond samples (sorted in place).
pub fn latency(samples: &mut [u64]) -> Latency {
    samples.sort_unstable();
    let us = |ns: u64| ns as f64 / 1000.0;
    let mean = if samples.is_empty() {
        0.0
    } else {
        samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len() as f64 / 1000.0
    };
    Latency {
        p50_us: us(percentile(samples, 50.0)),
        p99_us: us(percentile(samples, 99.0)),
        mean_us: mean,
        max_us: us(samples.last().copied().unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p50_of_odd() {
        assert_eq!(percentile(&[1, 2, 3], 50.0), 2);
    }
    #[test]
    fn p99_of_hundred() {
        assert_eq!(percentile(&(1..=100).collect::<Vec<_>>(), 99.0), 99);
    }
    #[test]
    fn p100_is_max() {
        assert_eq!(percentile(&[1, 5, 9], 100.0), 9);
    }
    #[test]
    fn p0_is_min() {
        assert_eq!(percentile(&[1, 5, 9], 0.0), 1);
    }
    #[test]
    fn percentile_empty() {
        assert_eq!(percentile(&[], 50.0), 0);
    }
    #[test]
    fn median_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    }
    #[test]
    fn median_even() {
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
    #[test]
    fn median_skips_nan() {
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }
    #[test]
    fn median_empty() {
        assert_eq!(median(&[]), None);
    }
    #[test]
    fn latency_in_us() {
        let l = latency(&mut [3000, 1000, 2000]);
        assert_eq!((l.p50_us, l.max_us, l.mean_us), (2.0, 3.0, 2.0));
    }
}
