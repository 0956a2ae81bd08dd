//! What keeps a run over several GPUs from hanging: the ranks' host threads meet between
//! iterations ([`Watch::meet`], which also hands every rank the first rank's decision to
//! stop), and every host wait on a GPU's queue polls ([`Watch::settle`]) instead of
//! blocking, so that when one rank fails the others notice, return, and abort their
//! communicators (dropping one aborts it), which ends collectives that a failed peer will
//! never join. Neither NCCL nor the driver gives a timeout of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaStream};

use crate::{Error, Result};

/// How long a rank waits for the others, or for its GPU's queue, before it gives up: far
/// beyond an iteration of the largest runs (about 0.1 s at 10M points), short enough that a
/// hang ends.
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// How long [`Watch::wait`] spins before it sleeps between polls.
const SPIN: Duration = Duration::from_millis(20);

/// The ranks' shared state.
pub struct Watch {
    world: usize,
    failed: AtomicBool,
    /// The rank that failed first, whose error is the run's.
    first: Mutex<Option<usize>>,
    meeting: Mutex<Meeting>,
    arrived: Condvar,
    timeout: Duration,
}

/// One meeting: how many have arrived, the value rank 0 brought, and a count of meetings
/// held so that a rank that returns early cannot be taken for the next one's arrival.
struct Meeting {
    generation: u64,
    count: usize,
    value: usize,
    /// The value of the last meeting held.
    decided: usize,
}

impl Watch {
    /// For `world` ranks, giving up after `timeout`.
    pub fn new(world: usize, timeout: Duration) -> Self {
        Watch {
            world,
            failed: AtomicBool::new(false),
            first: Mutex::new(None),
            meeting: Mutex::new(Meeting {
                generation: 0,
                count: 0,
                value: 0,
                decided: 0,
            }),
            arrived: Condvar::new(),
            timeout,
        }
    }

    /// Marks the run failed: every rank waiting, or about to wait, returns an error.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
        self.arrived.notify_all();
    }

    /// [`Watch::fail`] by `rank`, remembered when it is the first.
    pub fn fail_by(&self, rank: usize) {
        let mut first = self.first.lock().unwrap_or_else(PoisonError::into_inner);
        first.get_or_insert(rank);
        drop(first);
        self.fail();
    }

    /// The rank that failed first ([`Watch::fail_by`]), if one did.
    pub fn first_failed(&self) -> Option<usize> {
        *self.first.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a rank has failed.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    fn peer_failed() -> Error {
        Error::param(
            "gpus",
            "another GPU of the run failed (its error is reported)",
        )
    }

    fn timed_out(&self, what: &str) -> Error {
        self.fail();
        Error::param(
            "gpus",
            format!(
                "gave up after {} s waiting for {what}: a GPU of the run stopped answering",
                self.timeout.as_secs()
            ),
        )
    }

    /// Waits until every rank has called `meet`; returns rank 0's `value` (the others'
    /// are ignored). An error when a rank failed or the wait timed out.
    pub fn meet(&self, rank: usize, value: usize) -> Result<usize> {
        let start = Instant::now();
        let mut m = self.meeting.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = m.generation;
        if rank == 0 {
            m.value = value;
        }
        m.count += 1;
        if m.count == self.world {
            m.count = 0;
            m.generation += 1;
            m.decided = m.value;
            self.arrived.notify_all();
            return Ok(m.decided);
        }
        while m.generation == generation {
            if self.failed() {
                return Err(Self::peer_failed());
            }
            let left = self.timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(self.timed_out("the other GPUs' threads"));
            }
            let wait = left.min(Duration::from_millis(100));
            m = self
                .arrived
                .wait_timeout(m, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(m.decided)
    }

    /// An event recorded on `stream` after the work queued so far, for [`Watch::wait`].
    pub fn mark(stream: &CudaStream) -> Result<CudaEvent> {
        let event = stream
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
        event.record(stream)?;
        Ok(event)
    }

    /// Waits until the work queued on `stream` so far is done ([`Watch::wait`]).
    pub fn settle(&self, stream: &CudaStream) -> Result<()> {
        self.wait(&Self::mark(stream)?)
    }

    /// Waits, polling, until `event` ([`Watch::mark`]) has completed; an error when a rank
    /// failed meanwhile or the wait timed out (a collective waiting on a peer that never
    /// joins it).
    pub fn wait(&self, event: &CudaEvent) -> Result<()> {
        // Spin (yielding) for the short waits of an iteration, whose latency is the host's
        // share of it; sleep briefly beyond that, so that a long wait costs no core.
        let start = Instant::now();
        while !event.is_complete() {
            if self.failed() {
                return Err(Self::peer_failed());
            }
            let waited = start.elapsed();
            if waited > self.timeout {
                return Err(self.timed_out("the GPU's queue"));
            }
            if waited < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank gets rank 0's value at each meeting, in order, whatever order they come in.
    #[test]
    fn ranks_meet_and_share_rank_zero_value() {
        let watch = Watch::new(3, Duration::from_secs(10));
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|rank| {
                    let watch = &watch;
                    s.spawn(move || {
                        (0..50)
                            .map(|round| {
                                if rank == round % 3 {
                                    std::thread::sleep(Duration::from_micros(200));
                                }
                                watch.meet(rank, round * 10 + rank).unwrap()
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                let got = h.join().unwrap();
                assert_eq!(got, (0..50).map(|r| r * 10).collect::<Vec<_>>());
            }
        });
    }

    /// A failed rank releases the others at once, and a missing one after the timeout.
    #[test]
    fn failure_and_silence_end_the_wait() {
        let watch = Watch::new(2, Duration::from_secs(30));
        std::thread::scope(|s| {
            let waiting = s.spawn(|| watch.meet(0, 1));
            std::thread::sleep(Duration::from_millis(50));
            watch.fail();
            let e = waiting.join().unwrap().unwrap_err().to_string();
            assert!(e.contains("another GPU"), "{e}");
        });
        let watch = Watch::new(2, Duration::from_millis(200));
        let start = Instant::now();
        let e = watch.meet(1, 0).unwrap_err().to_string();
        assert!(e.contains("gave up after"), "{e}");
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert!(watch.failed());
    }
}
