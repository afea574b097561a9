//! GPU timing of a [`Batch`](crate::Batch): timestamp queries around each dispatch where the
//! device has them, the wall clock around the whole batch otherwise. [`Timing`] says which.

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// Where a [`Timing`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingSource {
    /// Timestamp queries written by the GPU at the start and end of each dispatch.
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
    /// Each dispatch's label (its entry point) and time, in submission order. With
    /// [`TimingSource::WallClock`] the times are `None`.
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

/// Query sets holding a begin and an end timestamp per dispatch.
pub(crate) struct Queries {
    sets: Vec<wgpu::QuerySet>,
}

/// Dispatches timed by one query set.
const PASSES_PER_SET: usize = (wgpu::QUERY_SET_MAX_QUERIES / 2) as usize;

impl Queries {
    pub(crate) fn pass_writes(&self, pass: usize) -> wgpu::ComputePassTimestampWrites<'_> {
        let first = (2 * (pass % PASSES_PER_SET)) as u32;
        wgpu::ComputePassTimestampWrites {
            query_set: &self.sets[pass / PASSES_PER_SET],
            beginning_of_pass_write_index: Some(first),
            end_of_pass_write_index: Some(first + 1),
        }
    }
}

/// Encodes `count` dispatches with `encode`, which must write the timestamps of dispatch `i`
/// through `Queries::pass_writes(i)`, and submits them; returns the buffer the timestamps
/// will be in (see [`read_timestamps`]).
pub(crate) fn submit_with_timestamps(
    rt: &Runtime,
    count: usize,
    operation: impl fmt::Display,
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &Queries),
) -> Result<wgpu::Buffer> {
    let device = rt.device();
    rt.scoped(operation, || {
        let sets: Vec<wgpu::QuerySet> = (0..count.div_ceil(PASSES_PER_SET))
            .map(|set| {
                let passes = (count - set * PASSES_PER_SET).min(PASSES_PER_SET);
                device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("tessera timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * passes as u32,
                })
            })
            .collect();
        let bytes = (2 * count * size_of::<u64>()) as u64;
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
            let offset = (index * PASSES_PER_SET * 2 * size_of::<u64>()) as u64;
            let passes = (count - index * PASSES_PER_SET).min(PASSES_PER_SET) as u32;
            encoder.resolve_query_set(set, 0..2 * passes, &resolve, offset);
        }
        encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, bytes);
        rt.raw_queue().submit([encoder.finish()]);
        readback
    })
}

/// Waits for the dispatches [`submit_with_timestamps`] submitted and says how long the ones
/// marked in `labels` (each dispatch's label, and whether it is timed) took.
pub(crate) fn read_timestamps(
    rt: &Runtime,
    readback: &wgpu::Buffer,
    labels: &[(String, bool)],
) -> Result<Timing> {
    let ticks = read_ticks(rt, readback)?;
    Ok(timing_from_ticks(
        &ticks,
        labels,
        rt.raw_queue().get_timestamp_period(),
    ))
}

fn read_ticks(rt: &Runtime, readback: &wgpu::Buffer) -> Result<Vec<u64>> {
    let (sender, receiver) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |result| {
        let _ = sender.send(result);
    });
    rt.wait()?;
    match receiver.try_recv() {
        Ok(result) => result?,
        Err(_) => {
            return Err(Error::Internal {
                operation: "timing a batch".into(),
                message: "the timestamps were not readable after the GPU finished".into(),
            })
        }
    }
    let ticks = bytemuck::pod_collect_to_vec(&readback.get_mapped_range(..)?);
    readback.unmap();
    Ok(ticks)
}

/// Turns the begin/end tick pairs of the dispatches marked in `labels` into durations, and the
/// total from the first one's begin to the last one's end; `period` is nanoseconds per tick.
fn timing_from_ticks(ticks: &[u64], labels: &[(String, bool)], period: f32) -> Timing {
    let nanos = |from: u64, to: u64| {
        Duration::from_nanos((to.saturating_sub(from) as f64 * period as f64) as u64)
    };
    let timed: Vec<(&String, &[u64])> = labels
        .iter()
        .zip(ticks.chunks_exact(2))
        .filter(|((_, timed), _)| *timed)
        .map(|((label, _), pair)| (label, pair))
        .collect();
    let dispatches = timed
        .iter()
        .map(|(label, pair)| ((*label).clone(), Some(nanos(pair[0], pair[1]))))
        .collect();
    let total = match (timed.first(), timed.last()) {
        (Some((_, first)), Some((_, last))) => nanos(first[0], last[1]),
        _ => Duration::ZERO,
    };
    Timing {
        source: TimingSource::GpuTimestamps,
        total,
        dispatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_durations_per_dispatch() {
        let labels = [("a".to_owned(), true), ("b".to_owned(), true)];
        let timing = timing_from_ticks(&[100, 300, 400, 1000], &labels, 2.0);
        assert_eq!(timing.total, Duration::from_nanos(1800));
        assert_eq!(
            timing.dispatches[0],
            ("a".to_owned(), Some(Duration::from_nanos(400)))
        );
        assert_eq!(
            timing.dispatches[1],
            ("b".to_owned(), Some(Duration::from_nanos(1200)))
        );
    }

    #[test]
    fn dispatches_of_other_batches_are_left_out() {
        let labels = [
            ("other".to_owned(), false),
            ("a".to_owned(), true),
            ("b".to_owned(), true),
            ("later".to_owned(), false),
        ];
        let ticks = [0, 50, 100, 300, 400, 1000, 1000, 5000];
        let timing = timing_from_ticks(&ticks, &labels, 1.0);
        assert_eq!(timing.total, Duration::from_nanos(900));
        let names: Vec<&str> = timing.dispatches.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
