//! Series measured side by side in chunks: one round's messages of every
//! member sent in alternating chunks of [`CHUNK`], each chunk timed on its
//! own ([`alternate`]; [`in_chunks`] is the loop, which the kick probe's
//! `beside_classic` shares).
//!
//! The host is not steady. Its stalls (here the guest kernel's kdamond takes
//! a CPU for about a millisecond several times a second) and its slower
//! stretches fall on whichever chunk runs at that moment. A round's mean
//! takes every stall of the round: over rounds of 2,000 messages, fast's
//! and linux-6.9's overheads (about 0.4–0.5 µs each) read 0.87–1.00 of each
//! other in eight runs of `bench spi`, while the medians over the same
//! messages' chunks, which leave out the few chunks a stall fell in, read
//! 0.93–0.96, around the 0.945 that their instruction counts give
//! (`scripts/instructions`).

use super::rig::{round_with, Rig, Round, Style};
use wirespeed::spi::PreparedMessage;

/// Messages per chunk: about half a millisecond of classic's messages or
/// 0.2 ms of fast's here, shorter than the host's stalls (about a
/// millisecond, up to four), so that one spans members alike or spoils one
/// chunk.
pub const CHUNK: u64 = 50;

/// One member: a rig, how it sends, and its prepared message.
#[derive(Debug)]
pub struct Member<'a> {
    pub rig: &'a Rig,
    pub style: Style,
    pub pm: &'a mut PreparedMessage,
}

/// Calls `each` with the sizes of consecutive chunks that add up to `msgs`
/// ([`CHUNK`] each, the last one shorter), stopping at its first error.
pub fn in_chunks(msgs: u64, mut each: impl FnMut(u64) -> Result<(), String>) -> Result<(), String> {
    let mut left = msgs;
    while left > 0 {
        let chunk = left.min(CHUNK);
        each(chunk)?;
        left -= chunk;
    }
    Ok(())
}

/// Sends `msgs` messages of `size` bytes through every member, in chunks of
/// [`CHUNK`] (the last one shorter) that take turns in the members' order;
/// returns each member's chunks, in the order sent.
pub fn alternate(members: &mut [Member<'_>], size: usize, msgs: u64) -> Result<Vec<Vec<Round>>, String> {
    let (tx, mut rx) = (vec![0xA5u8; size], vec![0u8; size]);
    let chunks = msgs.div_ceil(CHUNK) as usize;
    let mut out: Vec<Vec<Round>> = members.iter().map(|_| Vec::with_capacity(chunks)).collect();
    in_chunks(msgs, |chunk| {
        for (m, rounds) in members.iter_mut().zip(out.iter_mut()) {
            rounds.push(round_with(m.rig, m.style, (&tx, &mut rx), chunk, m.pm)?);
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed::spi::Policy;
    use wirespeed_lab::trace::cs_windows;

    #[test]
    fn every_member_sends_all_its_messages_in_chunks_that_take_turns() {
        let msgs = 2 * CHUNK + 7;
        let (a, b) = (
            Rig::new(Policy::fast(), 20_000_000, false).unwrap(),
            Rig::new(Policy::linux69(), 20_000_000, false).unwrap(),
        );
        let (mut pa, mut pb) = (a.prepared(4).unwrap(), b.prepared(4).unwrap());
        let blocks = [a.block.as_ref().unwrap(), b.block.as_ref().unwrap()];
        for blk in blocks {
            blk.trace_start(super::super::trace_capacity(4, msgs));
        }
        let mut members = [
            Member { rig: &a, style: Style::Unprepared, pm: &mut pa },
            Member { rig: &b, style: Style::Prepared, pm: &mut pb },
        ];
        let out = alternate(&mut members, 4, msgs).unwrap();
        assert_eq!(out.len(), 2);
        for rounds in &out {
            assert_eq!(rounds.iter().map(|r| r.msgs).collect::<Vec<_>>(), [CHUNK, CHUNK, 7]);
            assert!(rounds.iter().all(|r| r.elapsed_ns > 0), "{rounds:?}");
        }
        // On the wires: a's chunk k, then b's chunk k, then a's chunk k + 1.
        let [aw, bw] = blocks.map(|blk| {
            blk.trace_stop();
            cs_windows(&blk.trace_take())
        });
        assert_eq!((aw.len(), bw.len()), (msgs as usize, msgs as usize));
        let n = CHUNK as usize;
        for k in 0..3 {
            let a_last = aw[(k * n + n - 1).min(aw.len() - 1)].asserted_at;
            assert!(a_last < bw[k * n].asserted_at, "b's chunk {k} began inside a's");
            if k < 2 {
                assert!(
                    bw[k * n + n - 1].asserted_at < aw[(k + 1) * n].asserted_at,
                    "a's chunk {} began inside b's",
                    k + 1
                );
            }
        }
    }
}
