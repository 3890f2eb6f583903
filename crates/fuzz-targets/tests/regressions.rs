//! Replays every file of `regressions/<target>/` (inputs fuzzing found,
//! and seeds) through its target, on stable: a target that panics on one
//! fails this test with the file's name. Each target also runs a few
//! thousand inputs from a fixed generator, so a target that panics on
//! ordinary inputs fails here before anyone runs the fuzzer.

use std::path::Path;
use wirespeed_fuzz_targets::{target, TARGETS};

#[test]
fn every_regression_file_names_a_target_and_passes_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut replayed = 0;
    for dir in std::fs::read_dir(&root).expect("regressions/") {
        let dir = dir.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).expect("a UTF-8 name").to_owned();
        let run = target(&name).unwrap_or_else(|| panic!("regressions/{name}: no such target"));
        for file in std::fs::read_dir(&dir).expect("target folder") {
            let file = file.expect("entry").path();
            let data = std::fs::read(&file).expect("readable");
            println!("{}", file.display());
            run(&data);
            replayed += 1;
        }
    }
    assert!(replayed >= TARGETS.len(), "{replayed} files: every target has at least a seed");
}

#[test]
fn every_target_has_regression_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    for (name, _) in TARGETS {
        let n = std::fs::read_dir(root.join(name)).map(|d| d.count()).unwrap_or(0);
        assert!(n > 0, "regressions/{name} is empty or missing");
    }
}

/// xorshift64*: fixed inputs, the same on every run.
fn inputs(seed: u64, count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..count).map(move |_| {
        let len = (next() % 512) as usize;
        (0..len).map(|_| next() as u8).collect()
    })
}

#[test]
fn every_target_takes_pseudo_random_inputs() {
    for (i, (name, run)) in TARGETS.iter().enumerate() {
        for data in inputs(i as u64 + 1, 300) {
            let r = std::panic::catch_unwind(|| run(&data));
            assert!(r.is_ok(), "target {name} panicked on {data:02x?}");
        }
    }
}
