//! Submissions of dispatches built with the sanitizer's checks
//! ([`Runtime::with_sanitizer`](crate::Runtime::with_sanitizer)): each such dispatch gets its
//! own part of one buffer, bound at group 1 (cleared before the pass: a report at its head,
//! then the shadows of the storage buffers it writes); after the pass each part's report is
//! copied out, and read back once the GPU is done.

use std::future::Future;
use std::sync::Arc;

use super::{Bound, Recorded};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::sanitizer::{Checked, HEADER_WORDS};
use crate::wait::{Completion, Progress, Signal};

/// Bytes of one dispatch's report.
const REPORT_BYTES: u64 = HEADER_WORDS * 4;

/// The sanitizer's buffers of one submission.
pub(super) struct Reports {
    buffer: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Per recorded dispatch, the bind group of its part; `None` for one without checks.
    groups: Vec<Option<wgpu::BindGroup>>,
    /// Each checked dispatch's part: its offset and size in bytes, and what its report refers
    /// to.
    parts: Vec<(u64, u64, Arc<Checked>)>,
}

impl Reports {
    /// The bytes of each dispatch's part (`None` for one without checks), checked against
    /// the device's limit for one binding.
    pub(super) fn sizes(rt: &Runtime, recorded: &[Recorded]) -> Result<Vec<Option<u64>>> {
        let limit = rt.info().limits.max_storage_buffer_binding_size;
        recorded
            .iter()
            .map(|dispatch| {
                let Some(checked) = dispatch.pipeline.checked() else {
                    return Ok(None);
                };
                let size = |binding: u32| match dispatch.bound.get(binding as usize) {
                    Some(Bound::Storage(buffer)) => buffer.size(),
                    _ => 0,
                };
                let bytes = checked.words(size, dispatch.grid) * 4;
                if bytes > limit {
                    return Err(Error::InvalidArgument {
                        operation: format!("running `{}` with the sanitizer", checked.kernel()),
                        problem: format!(
                            "its checks need {bytes} bytes for the shadows of its buffers and \
                             of each of its {:?} workgroups' arrays, over this device's limit \
                             of {limit} bytes for one binding; sanitize it on a smaller grid",
                            dispatch.grid
                        ),
                    });
                }
                Ok(Some(bytes))
            })
            .collect()
    }

    /// The parts of the dispatches of `recorded` that have checks, `sizes` bytes each (as
    /// [`Reports::sizes`] gave them). Runs inside an error scope.
    pub(super) fn new(
        rt: &Runtime,
        recorded: &[Recorded],
        sizes: &[Option<u64>],
        layout: &wgpu::BindGroupLayout,
    ) -> Self {
        let alignment = u64::from(rt.info().limits.min_storage_buffer_offset_alignment).max(4);
        let mut parts = Vec::new();
        let mut end = 0u64;
        for (dispatch, bytes) in recorded.iter().zip(sizes) {
            let (Some(checked), Some(bytes)) = (dispatch.pipeline.checked(), bytes) else {
                continue;
            };
            let offset = end.next_multiple_of(alignment);
            end = offset + bytes;
            parts.push((offset, *bytes, Arc::clone(checked)));
        }
        let device = rt.device();
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tessera sanitizer"),
            size: end.max(REPORT_BYTES),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tessera sanitizer reports"),
            size: (parts.len() as u64 * REPORT_BYTES).max(REPORT_BYTES),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut part = parts.iter();
        let groups = recorded
            .iter()
            .map(|dispatch| {
                dispatch.pipeline.checked()?;
                let (offset, size, _) = part.next()?;
                Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("tessera sanitizer"),
                    layout,
                    entries: &[wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &buffer,
                            offset: *offset,
                            size: wgpu::BufferSize::new(*size),
                        }),
                    }],
                }))
            })
            .collect();
        Reports {
            buffer,
            readback,
            groups,
            parts,
        }
    }

    /// Per recorded dispatch, the bind group of its part (group 1), if it has checks.
    pub(super) fn bind_groups(&self) -> &[Option<wgpu::BindGroup>] {
        &self.groups
    }

    /// Zeroes every part: before the pass.
    pub(super) fn clear(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(&self.buffer, 0, None);
    }

    /// Copies each part's report out: after the pass.
    pub(super) fn copy_out(&self, encoder: &mut wgpu::CommandEncoder) {
        for (i, (offset, _, _)) in self.parts.iter().enumerate() {
            let at = i as u64 * REPORT_BYTES;
            encoder.copy_buffer_to_buffer(&self.buffer, *offset, &self.readback, at, REPORT_BYTES);
        }
    }

    /// Waits for `submission` and reads the reports: the first hazard, in dispatch order, is
    /// the error.
    pub(super) fn read(
        self,
        rt: &Runtime,
        submission: wgpu::SubmissionIndex,
    ) -> impl Future<Output = Result<()>> + '_ {
        let signal = Signal::new();
        self.readback
            .map_async(wgpu::MapMode::Read, .., signal.setter());
        let operation = "reading the sanitizer's reports".to_owned();
        let mapping = Completion::new(rt, signal, Some(submission), Progress::Async, operation);
        let Reports {
            readback, parts, ..
        } = self;
        async move {
            if let Err(error) = mapping.await? {
                let _ = rt.device().poll(wgpu::PollType::Poll);
                rt.check_device()?;
                return Err(error.into());
            }
            let words: Vec<u32> = bytemuck::pod_collect_to_vec(&readback.get_mapped_range(..)?);
            readback.unmap();
            for (report, (_, _, checked)) in words.chunks(HEADER_WORDS as usize).zip(&parts) {
                if let Some(hazard) = checked.hazard(report) {
                    return Err(Error::Hazard(Box::new(hazard)));
                }
            }
            parts
                .iter()
                .try_for_each(|(_, _, checked)| checked.passed())
        }
    }
}
