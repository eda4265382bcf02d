//! Where a commit runs: on the caller's thread when it is alone, or through the writer's queue.
//!
//! One at a time (a round trip's four commits, one after another), a commit through the writer's
//! thread costs two thread wake-ups: the caller's worker wakes the writer, and the writer's reply
//! wakes the worker, which has nothing else to do meanwhile. Run by the caller, the same commit
//! wakes nobody. Under load the queue is what pays: commits queued while a batch runs share the
//! next commit, on a core of its own. So a caller runs its commit itself only after a spell of
//! commits that each found no other in flight; one that finds another in flight ends the spell.
//!
//! A commit run by a caller blocks its runtime worker, and no other commit can be submitted from
//! that worker meanwhile: a caller's commit can never find company. So every [`PROBE_EVERY`]th
//! commit of a spell goes through the queue anyway, and if others arrive while it waits, the spell
//! ends.
//!
//! On 7 December 2026, on 2 cores, two interleaved rounds of three repeats against the queue
//! alone (the build of be769e6): sequentially 4,073 and 3,989 round trips a second against 3,442
//! and 3,463, with 185–188 µs of server CPU per round trip against 225–236; at 64 streams the same
//! at the same speed of the machine. Without the spell and its probes (every commit alone run by
//! its caller), 64 streams fell to 6,361 and 6,438 a second against 11,164 and 11,161: one worker
//! committing one operation at a time.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Commits in a row that found no other in flight before a caller runs one itself.
const QUIET_COMMITS: u32 = 16;

/// In a spell, one commit in this many goes through the queue, to see whether others follow it.
const PROBE_EVERY: u32 = 64;

/// The commits in flight, and how many in a row found none other.
#[derive(Default)]
pub(super) struct CommitTraffic {
    in_flight: AtomicUsize,
    alone_in_a_row: AtomicU32,
}

/// A commit in flight, until dropped.
pub(super) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl CommitTraffic {
    /// Counts a commit in flight (until the guard drops); the flag says whether its caller should
    /// run it.
    pub fn start(&self) -> (InFlight<'_>, bool) {
        let alone = self.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
        let in_flight = InFlight(&self.in_flight);
        if !alone {
            self.alone_in_a_row.store(0, Ordering::Relaxed);
            return (in_flight, false);
        }
        // A heuristic: a count that wraps after 4 billion only starts a spell over.
        let before = self.alone_in_a_row.fetch_add(1, Ordering::Relaxed);
        (
            in_flight,
            before >= QUIET_COMMITS && !before.is_multiple_of(PROBE_EVERY),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alone commits are run by their callers after the quiet spell, except the probes; a commit
    /// that finds another in flight goes to the queue and starts the spell over.
    #[test]
    fn callers_commit_only_after_a_quiet_spell() {
        let traffic = CommitTraffic::default();
        let here: Vec<bool> = (0..130).map(|_| traffic.start().1).collect();
        let expected =
            |n: usize| n >= QUIET_COMMITS as usize && !n.is_multiple_of(PROBE_EVERY as usize);
        for (n, here) in here.iter().enumerate() {
            assert_eq!(*here, expected(n), "commit {n}");
        }
        let (_first, first_here) = traffic.start();
        assert!(first_here, "commit 130 of the spell");
        let (_second, second_here) = traffic.start();
        assert!(!second_here, "a commit with another in flight is queued");
        drop((_first, _second));
        let after: Vec<bool> = (0..=QUIET_COMMITS).map(|_| traffic.start().1).collect();
        assert_eq!(after.iter().filter(|here| **here).count(), 1);
        assert!(after[QUIET_COMMITS as usize], "the spell starts over");
    }
}
