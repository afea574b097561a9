//! Scratch memory the ops keep between recordings.

use std::sync::{Mutex, MutexGuard, PoisonError};

use bytemuck::Pod;

use tessera::{GpuBuffer, Result, Runtime};

/// A buffer an op keeps for what its caller does not see (the partial sums of a split sum, the
/// gradient before the activation, an output nobody asked for), grown to the largest
/// recording so far. The recordings of a batch run in order, and batches one after another,
/// so one buffer serves every recording of the op.
///
/// A new buffer holds zeros, which a kernel that leaves its scratch as it found it (a
/// stream's counts) relies on.
///
/// A clone starts empty: clones of an op share pipelines, not scratch.
#[derive(Debug)]
pub(super) struct Spare<T: Pod = f32>(Mutex<Option<GpuBuffer<T>>>);

impl<T: Pod> Default for Spare<T> {
    fn default() -> Self {
        Spare(Mutex::new(None))
    }
}

impl<T: Pod> Clone for Spare<T> {
    fn clone(&self) -> Self {
        Spare::default()
    }
}

impl<T: Pod> Spare<T> {
    /// Locks the buffer for one recording. (A lock poisoned by a panicking recorder is taken
    /// over: what the buffer holds never has to be consistent.)
    pub(super) fn lock(&self) -> Held<'_, T> {
        Held(self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A locked [`Spare`].
pub(super) struct Held<'a, T: Pod = f32>(MutexGuard<'a, Option<GpuBuffer<T>>>);

impl<T: Pod> Held<'_, T> {
    /// The buffer, at least `len` elements (and one: a binding cannot be empty), replaced by a
    /// larger one when it is shorter. A replaced buffer lives on in the recordings that bound
    /// it. Its length is a multiple of 4, so that it also binds as vectors.
    pub(super) fn at_least(&mut self, rt: &Runtime, len: usize) -> Result<&mut GpuBuffer<T>> {
        let len = len.max(1).next_multiple_of(4);
        let buffer = match self.0.take() {
            Some(buffer) if buffer.len() >= len => buffer,
            _ => rt.zeros_labeled("tessera nn scratch", len)?,
        };
        Ok(self.0.insert(buffer))
    }

    /// `given`, or where the caller gives none, the buffer at least `len` long (as
    /// [`Held::at_least`]).
    pub(super) fn unless_given<'b>(
        &'b mut self,
        given: Option<&'b mut GpuBuffer<T>>,
        rt: &Runtime,
        len: usize,
    ) -> Result<&'b mut GpuBuffer<T>> {
        match given {
            Some(given) => Ok(given),
            None => self.at_least(rt, len),
        }
    }
}
