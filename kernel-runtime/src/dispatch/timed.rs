//! Timed submissions ([`Batch::submit_timed`](crate::Batch::submit_timed) and its `async`,
//! profiled forms): what was issued before the batch first, untimed, then the batch with
//! timestamp queries, or by the wall clock where the device has none.

use std::future::Future;
use std::sync::PoisonError;

use super::encode;
use crate::error::Result;
use crate::runtime::Runtime;
use crate::timing::{self, Timing};
use crate::wait::{Completion, Progress, Signal};

impl Runtime {
    /// [`Batch::submit_timed`] (or, `each`, [`Batch::submit_profiled`]) for the batch `batch`,
    /// waiting as `progress` says.
    ///
    /// What was issued before the batch is submitted at once and waited for, untimed, the
    /// batch left first in the queue meanwhile: an operation of another thread that needs
    /// its results then submits it, in order, and it is not timed.
    pub(crate) fn submit_timed_with(
        &self,
        batch: u64,
        each: bool,
        progress: Progress,
    ) -> impl Future<Output = Result<Timing>> + '_ {
        let before = {
            let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
            let mut before = std::mem::take(&mut *queue);
            *queue = before.split_at_batch(batch);
            before
        };
        let earlier = (!before.is_empty()).then(|| {
            let submitted = before.submit_async(self);
            let signal = Signal::new();
            let done = signal.setter();
            // The raw queue: `Runtime::queue` would submit the batch, untimed.
            self.raw_queue().on_submitted_work_done(move || done(()));
            let operation = "waiting for the work issued before a timed batch".to_owned();
            (
                submitted,
                Completion::new(self, signal, None, progress, operation),
            )
        });
        async move {
            if let Some((submitted, finished)) = earlier {
                submitted.await?;
                finished.await?;
            }
            match self.start_timed(batch, each)? {
                Started::WallClock(start, labels, errors) => {
                    errors.await?;
                    self.wait_with(progress).await?;
                    Ok(Timing::wall_clock(start.elapsed(), labels))
                }
                Started::Timestamps(timed, plan, labels) => {
                    timing::read_timestamps(timed, &plan, &labels, progress).await
                }
            }
        }
    }

    /// Submits the queued dispatches from the batch `batch`'s first on, timed as the device
    /// allows (each of the batch's in a pass of its own where `each`).
    fn start_timed(
        &self,
        batch: u64,
        each: bool,
    ) -> Result<
        Started<
            impl Future<Output = Result<()>> + '_,
            timing::Timed<'_, impl Future<Output = Result<()>> + '_>,
        >,
    > {
        let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        let mut rest = std::mem::take(&mut *queue);
        let timed = rest.split_at_batch(batch);
        // `rest` holds dispatches only where another operation submitted the batch meanwhile
        // (it was first in the queue): they stay queued, and nothing of the batch is timed.
        *queue = rest;
        let labels = timed.labels(batch);
        // With the sanitizer, the submission waits for its reports: timed by the wall clock.
        let checked = timed
            .recorded
            .iter()
            .any(|r| r.pipeline.checked().is_some());
        let untimed = !self.info().has_timestamps() || checked;
        if untimed || !labels.iter().any(|(_, mine)| *mine) {
            let start = std::time::Instant::now();
            let errors = timed.submit_async(self);
            let mine = labels.into_iter().filter(|(_, mine)| *mine);
            let labels = mine.map(|(label, _)| label).collect();
            return Ok(Started::WallClock(start, labels, errors));
        }
        let (labels, mine): (Vec<String>, Vec<bool>) = labels.into_iter().unzip();
        let plan = timing::Plan::new(&mine, each);
        let bind_groups = timed.bind_groups(self);
        let operation = timed.describe();
        let submitted =
            timing::submit_with_timestamps(self, &plan, operation, &mut |encoder, queries| {
                encode(
                    encoder,
                    &timed.recorded,
                    &bind_groups,
                    &[],
                    Some((&plan, queries)),
                );
            })?;
        Ok(Started::Timestamps(submitted, plan, labels))
    }
}

/// A timed batch as [`Runtime::start_timed`] submitted it.
enum Started<W, T> {
    /// Submitted at the instant, untimed by the GPU: the batch's dispatches' labels, and
    /// wgpu's answer.
    WallClock(std::time::Instant, Vec<String>, W),
    /// Submitted with the timestamp queries the plan says: every dispatch's label.
    Timestamps(T, timing::Plan, Vec<String>),
}
