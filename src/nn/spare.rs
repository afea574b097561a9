//! Scratch memory the ops keep between recordings.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::{GpuBuffer, Result, Runtime};

/// A buffer an op keeps for what its caller does not see (the partial sums of a split sum, the
/// gradient before the activation, an output nobody asked for), grown to the largest
/// recording so far. The recordings of a batch run in order, and batches one after another,
/// so one buffer serves every recording of the op.
///
/// A clone starts empty: clones of an op share pipelines, not scratch.
#[derive(Debug, Default)]
pub(super) struct Spare(Mutex<Option<GpuBuffer<f32>>>);

impl Clone for Spare {
    fn clone(&self) -> Self {
        Spare::default()
    }
}

impl Spare {
    /// Locks the buffer for one recording. (A lock poisoned by a panicking recorder is taken
    /// over: what the buffer holds never has to be consistent.)
    pub(super) fn lock(&self) -> Held<'_> {
        Held(self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A locked [`Spare`].
pub(super) struct Held<'a>(MutexGuard<'a, Option<GpuBuffer<f32>>>);

impl Held<'_> {
    /// The buffer, at least `len` elements (and one: a binding cannot be empty), replaced by a
    /// larger one when it is shorter. A replaced buffer lives on in the recordings that bound
    /// it. Its length is a multiple of 4, so that it also binds as vectors.
    pub(super) fn at_least(&mut self, rt: &Runtime, len: usize) -> Result<&mut GpuBuffer<f32>> {
        let len = len.max(1).next_multiple_of(4);
        let buffer = match self.0.take() {
            Some(buffer) if buffer.len() >= len => buffer,
            _ => rt.zeros_labeled("tessera nn scratch", len)?,
        };
        Ok(self.0.insert(buffer))
    }
}
