//! Unit tests of the DMA layer, on the [`FakeIommu`](super::testing::FakeIommu).

mod domain;
mod iova;
mod lazy;
mod leaks;
mod sg;

use super::testing::FakeIommu;
use super::{AllocatorKind, DmaDomain, DomainConfig, IommuHw, IommuMode};
use std::sync::Arc;

/// A domain over a fresh fake IOMMU.
fn domain(config: DomainConfig) -> (DmaDomain, Arc<FakeIommu>) {
    let fake = Arc::new(FakeIommu::new());
    let hw: Arc<dyn IommuHw> = fake.clone();
    (DmaDomain::new(Some(hw), config).unwrap(), fake)
}

fn config(mode: IommuMode, allocator: AllocatorKind) -> DomainConfig {
    DomainConfig { mode, allocator, ..DomainConfig::default() }
}

/// A small xorshift generator (deterministic per seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
