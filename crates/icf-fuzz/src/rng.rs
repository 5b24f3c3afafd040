//! The fuzzer's only source of randomness: SplitMix64, seeded explicitly.
//!
//! Assumption: reproducibility matters more than statistical quality. Every
//! execution derives its generator from (campaign seed, execution index), so
//! one execution can be replayed alone without running the ones before it.

/// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state, one add and a
/// mix per output; plenty for choosing mutations.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The generator of execution `index` of the campaign seeded with `campaign_seed`.
    pub fn for_execution(campaign_seed: u64, index: u64) -> SplitMix64 {
        let mut mixer = SplitMix64::new(campaign_seed ^ index.wrapping_mul(0xa076_1d64_78bd_642f));
        SplitMix64::new(mixer.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        // The modulo bias is irrelevant at fuzzing sizes.
        (self.next_u64() % bound as u64) as usize
    }

    /// True with probability `numerator / denominator`.
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.next_u64() % denominator.max(1) < numerator
    }

    /// One element of a non-empty slice, or `None` for an empty one.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn matches_the_reference_sequence() {
        // First outputs of the reference implementation seeded with 1234567.
        let mut rng = SplitMix64::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(7);
        assert!((0..1000).all(|_| rng.below(13) < 13));
        assert_eq!(rng.below(0), 0);
    }
}
