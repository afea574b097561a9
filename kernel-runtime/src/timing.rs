//! GPU timing of a [`Batch`](crate::Batch): timestamp queries around the compute pass that
//! runs it as an untimed batch runs, or around each of its dispatches when profiled, where the
//! device has them; the wall clock around the whole batch otherwise. [`Timing`] says which.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use crate::error::Result;
use crate::runtime::Runtime;
use crate::wait::{Completion, Progress, Signal};

/// Where a [`Timing`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingSource {
    /// Timestamp queries written by the GPU at the beginning and end of the batch's compute
    /// pass, or of each dispatch's (see [`Batch::submit_profiled`](crate::Batch::submit_profiled)).
    GpuTimestamps,
    /// The host's clock from submission until the GPU reported completion; includes submission
    /// and synchronisation overhead, and has no per-dispatch breakdown.
    WallClock,
}

/// How long a batch took, and each dispatch in it where the GPU timed them.
#[derive(Clone, Debug)]
pub struct Timing {
    /// How the times were measured.
    pub source: TimingSource,
    /// From the start of the first dispatch to the end of the last.
    pub total: Duration,
    /// Each dispatch's label (its entry point) and, where the batch was profiled
    /// ([`Batch::submit_profiled`](crate::Batch::submit_profiled)) on GPU timestamps, its
    /// time: in submission order. `None` otherwise.
    pub dispatches: Vec<(String, Option<Duration>)>,
}

impl Timing {
    pub(crate) fn wall_clock(total: Duration, labels: Vec<String>) -> Self {
        Timing {
            source: TimingSource::WallClock,
            total,
            dispatches: labels.into_iter().map(|label| (label, None)).collect(),
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            TimingSource::GpuTimestamps => "GPU timestamps",
            TimingSource::WallClock => "wall clock",
        };
        write!(f, "{:.3} ms ({source})", self.total.as_secs_f64() * 1e3)?;
        for (label, time) in &self.dispatches {
            if let Some(time) = time {
                write!(f, "; {label} {:.3} ms", time.as_secs_f64() * 1e3)?;
            }
        }
        Ok(())
    }
}

/// The compute passes of a timed submission and the timestamps they write. The submission
/// holds the timed batch's dispatches and, where other batches recorded into the runtime's
/// queue after it began, theirs. Timing the whole (`each` false), each maximal run of
/// consecutive dispatches of the batch, or of others, is a compute pass, as an untimed
/// submission runs them all in one; profiled (`each`), every dispatch of the batch is a pass
/// of its own. A pass of the timed batch writes a timestamp at its beginning and its end.
/// (Timestamps written between the dispatches of one pass would time them without more
/// passes, but cost the GPU about 8 us each on an H100 through Vulkan, nearly what a pass of
/// its own costs, about 10.)
pub(crate) struct Plan {
    passes: Vec<PlannedPass>,
    each: bool,
    queries: usize,
}

/// One compute pass of a [`Plan`].
pub(crate) struct PlannedPass {
    /// The dispatches it runs, as indices into the submission.
    pub(crate) dispatches: Range<usize>,
    /// Its first timestamp query (the second follows), in a pass of the timed batch.
    first_query: Option<usize>,
}

impl Plan {
    /// The passes of a submission whose dispatches are the timed batch's where `timed` says
    /// so; `each`: a pass per dispatch of the batch.
    pub(crate) fn new(timed: &[bool], each: bool) -> Plan {
        let mut passes = Vec::new();
        let mut queries = 0;
        let mut start = 0;
        while start < timed.len() {
            let mine = timed[start];
            let run = timed[start..].iter().take_while(|&&t| t == mine).count();
            let len = if mine && each { 1 } else { run };
            passes.push(PlannedPass {
                dispatches: start..start + len,
                first_query: mine.then_some(queries),
            });
            if mine {
                queries += 2;
            }
            start += len;
        }
        Plan {
            passes,
            each,
            queries,
        }
    }

    pub(crate) fn passes(&self) -> &[PlannedPass] {
        &self.passes
    }

    /// The timestamps the pass `pass` writes, at its beginning and end, if it is the timed
    /// batch's.
    pub(crate) fn pass_writes<'q>(
        &self,
        pass: &PlannedPass,
        queries: &'q Queries,
    ) -> Option<wgpu::ComputePassTimestampWrites<'q>> {
        // Queries come in pairs from 0, so a pair never straddles two sets.
        let (set, index) = queries.at(pass.first_query?);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(index),
            end_of_pass_write_index: Some(index + 1),
        })
    }
}

/// Query sets holding a submission's timestamps, in the order of a [`Plan`]'s queries.
pub(crate) struct Queries {
    sets: Vec<wgpu::QuerySet>,
}

/// Queries in one set (an even number: the pairs of [`Plan::pass_writes`] stay in one set).
const QUERIES_PER_SET: usize = wgpu::QUERY_SET_MAX_QUERIES as usize;

impl Queries {
    /// The set and index within it of query `query`.
    pub(crate) fn at(&self, query: usize) -> (&wgpu::QuerySet, u32) {
        (
            &self.sets[query / QUERIES_PER_SET],
            (query % QUERIES_PER_SET) as u32,
        )
    }
}

/// A submission [`submit_with_timestamps`] made: where its timestamps will be, and wgpu's
/// answer to it.
pub(crate) struct Timed<'a, E> {
    readback: wgpu::Buffer,
    submission: wgpu::SubmissionIndex,
    errors: E,
    rt: &'a Runtime,
}

/// Encodes a submission with `encode`, which must write the timestamps `plan` says through
/// `queries`, and submits it in error scopes; [`read_timestamps`] reads them.
pub(crate) fn submit_with_timestamps<'a>(
    rt: &'a Runtime,
    plan: &Plan,
    operation: String,
    encode: &mut dyn FnMut(&mut wgpu::CommandEncoder, &Queries),
) -> Result<Timed<'a, impl Future<Output = Result<()>> + use<'a>>> {
    let device = rt.device();
    let count = plan.queries;
    let scopes = rt.push_scopes()?;
    let sets: Vec<wgpu::QuerySet> = (0..count.div_ceil(QUERIES_PER_SET))
        .map(|set| {
            let queries = (count - set * QUERIES_PER_SET).min(QUERIES_PER_SET);
            device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("tessera timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: queries as u32,
            })
        })
        .collect();
    let bytes = (count * size_of::<u64>()) as u64;
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tessera timestamps"),
        size: bytes,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tessera timestamps read-back"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let queries = Queries { sets };
    let mut encoder = device.create_command_encoder(&Default::default());
    encode(&mut encoder, &queries);
    for (index, set) in queries.sets.iter().enumerate() {
        let offset = (index * QUERIES_PER_SET * size_of::<u64>()) as u64;
        let written = (count - index * QUERIES_PER_SET).min(QUERIES_PER_SET) as u32;
        encoder.resolve_query_set(set, 0..written, &resolve, offset);
    }
    encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, bytes);
    let submission = rt.raw_queue().submit([encoder.finish()]);
    let errors = rt.pop_scopes(scopes, operation);
    Ok(Timed {
        readback,
        submission,
        errors,
        rt,
    })
}

/// Waits, as `progress` says, for the submission `timed` made and says how long the timed
/// batch's dispatches (`labels`, one per dispatch of the submission) took.
pub(crate) async fn read_timestamps(
    timed: Timed<'_, impl Future<Output = Result<()>>>,
    plan: &Plan,
    labels: &[String],
    progress: Progress,
) -> Result<Timing> {
    let Timed {
        readback,
        submission,
        errors,
        rt,
    } = timed;
    errors.await?;
    let signal = Signal::new();
    readback.map_async(wgpu::MapMode::Read, .., signal.setter());
    let operation = "reading a timed batch's timestamps".to_owned();
    if let Err(error) = Completion::new(rt, signal, Some(submission), progress, operation).await? {
        // On a lost device the mapping fails at once: the loss is what to report.
        let _ = rt.device().poll(wgpu::PollType::Poll);
        rt.check_device()?;
        return Err(error.into());
    }
    let ticks = bytemuck::pod_collect_to_vec(&readback.get_mapped_range(..)?);
    readback.unmap();
    let period = rt.raw_queue().get_timestamp_period();
    Ok(timing_from_ticks(&ticks, plan, labels, period))
}

/// The timing of the timed batch's dispatches from the ticks of `plan`'s queries (`period`
/// nanoseconds each): each dispatch's time where it had a pass of its own, and the total from
/// the first timed pass's beginning to the last one's end.
fn timing_from_ticks(ticks: &[u64], plan: &Plan, labels: &[String], period: f32) -> Timing {
    let nanos = |from: u64, to: u64| {
        Duration::from_nanos((to.saturating_sub(from) as f64 * period as f64) as u64)
    };
    let mut dispatches = Vec::new();
    let mut span: Option<(u64, u64)> = None;
    for pass in &plan.passes {
        let Some(first) = pass.first_query else {
            continue;
        };
        let (begin, end) = (ticks[first], ticks[first + 1]);
        let time = plan.each.then(|| nanos(begin, end));
        for label in &labels[pass.dispatches.clone()] {
            dispatches.push((label.clone(), time));
        }
        span = Some((span.map_or(begin, |(first_begin, _)| first_begin), end));
    }
    Timing {
        source: TimingSource::GpuTimestamps,
        total: span.map_or(Duration::ZERO, |(begin, end)| nanos(begin, end)),
        dispatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn a_batch_runs_in_one_pass_timed_as_a_whole() {
        let plan = Plan::new(&[true, true, true], false);
        assert_eq!(plan.passes().len(), 1);
        let timing = timing_from_ticks(&[100, 1000], &plan, &labels(&["a", "b", "c"]), 2.0);
        assert_eq!(timing.total, Duration::from_nanos(1800));
        let names: Vec<&str> = timing.dispatches.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(timing.dispatches.iter().all(|(_, time)| time.is_none()));
    }

    #[test]
    fn a_profiled_batch_times_each_dispatch_in_a_pass_of_its_own() {
        let plan = Plan::new(&[true, true], true);
        assert_eq!(plan.passes().len(), 2);
        let timing = timing_from_ticks(&[100, 300, 400, 1000], &plan, &labels(&["a", "b"]), 2.0);
        assert_eq!(timing.total, Duration::from_nanos(1800));
        assert_eq!(
            timing.dispatches,
            [
                ("a".to_owned(), Some(Duration::from_nanos(400))),
                ("b".to_owned(), Some(Duration::from_nanos(1200))),
            ]
        );
    }

    #[test]
    fn dispatches_of_other_batches_run_in_passes_of_their_own_untimed() {
        let timed = [false, true, true, false, true];
        let names = labels(&["other", "a", "b", "later", "c"]);
        let ranges = |plan: &Plan| -> Vec<Range<usize>> {
            plan.passes().iter().map(|p| p.dispatches.clone()).collect()
        };
        let whole = Plan::new(&timed, false);
        assert_eq!(ranges(&whole), [0..1, 1..3, 3..4, 4..5]);
        let timing = timing_from_ticks(&[100, 400, 1000, 5000], &whole, &names, 1.0);
        let got: Vec<&str> = timing.dispatches.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(got, ["a", "b", "c"]);
        assert_eq!(timing.total, Duration::from_nanos(4900));

        let profiled = Plan::new(&timed, true);
        assert_eq!(ranges(&profiled), [0..1, 1..2, 2..3, 3..4, 4..5]);
        let ticks = [100, 300, 400, 1000, 1200, 5000];
        let timing = timing_from_ticks(&ticks, &profiled, &names, 1.0);
        assert_eq!(timing.total, Duration::from_nanos(4900));
        assert_eq!(timing.dispatches[2].1, Some(Duration::from_nanos(3800)));
    }
}
