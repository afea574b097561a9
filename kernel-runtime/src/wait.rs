//! Waiting for the GPU: a future of a wgpu callback's result ([`Completion`]) that blocks the
//! calling thread or not, as [`Progress`] says. The blocking forms of reading and waiting
//! (`GpuBuffer::read`, `Runtime::wait`) and their `async` forms run the same code; only the
//! way the device is polled while the GPU works differs.
//!
//! wgpu runs a callback (a buffer mapped, submitted work done) inside a poll of the device.
//! In a browser the browser does that; on native backends someone must call
//! `Device::poll`. A blocking form polls on the calling thread, waiting for the submission.
//! An `async` form, when polled, polls the device without waiting (`PollType::Poll`); when
//! the callback has not run yet, it leaves the waiting to a short-lived thread of its own,
//! which polls the device until the submission is done and then wakes the task: the executor's
//! thread is never blocked, and the future is not polled again in a busy loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// How a [`Completion`] gets the device polled while the GPU works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Waits on the polling thread: for the blocking forms, under `pollster::block_on`.
    Block,
    /// Never waits on the polling thread (see the module's documentation).
    Async,
}

/// How long a blocking wait waits, after the GPU finished, for another thread's poll of the
/// device to run the callback it took.
const CALLBACK_WAIT: Duration = Duration::from_secs(10);

/// Where a wgpu callback leaves its result and finds the task to wake.
pub(crate) struct Signal<T>(Arc<Mutex<State<T>>>);

/// The callback's result once known, and the task waiting for it.
struct State<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

impl<T> Clone for Signal<T> {
    fn clone(&self) -> Self {
        Signal(Arc::clone(&self.0))
    }
}

impl<T: Send + 'static> Signal<T> {
    pub(crate) fn new() -> Self {
        Signal(Arc::new(Mutex::new(State {
            value: None,
            waker: None,
        })))
    }

    /// The callback to hand wgpu: it leaves its argument here and wakes the waiting task.
    pub(crate) fn setter(&self) -> impl FnOnce(T) + Send + 'static {
        let signal = self.clone();
        move |value| {
            let waker = {
                let mut state = signal.lock();
                state.value = Some(value);
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) -> Option<T> {
        self.lock().value.take()
    }

    /// The result if the callback has run; otherwise `waker` is woken when it does.
    fn take_or_register(&self, waker: &Waker) -> Option<T> {
        let mut state = self.lock();
        let value = state.value.take();
        if value.is_none() {
            state.waker = Some(waker.clone());
        }
        value
    }

    /// Wakes the waiting task, whether the callback has run or not.
    fn wake(&self) {
        let waker = self.lock().waker.take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The result of a wgpu callback of `submission` (all submitted work when `None`), as a
/// future that gets the device polled as `progress` says.
pub(crate) struct Completion<'a, T> {
    rt: &'a Runtime,
    signal: Signal<T>,
    submission: Option<wgpu::SubmissionIndex>,
    progress: Progress,
    /// Whether a thread is polling the device for this future ([`Progress::Async`]).
    polling: bool,
    /// What is waited for, for errors: e.g. "reading the buffer `x` back".
    operation: String,
}

impl<'a, T: Send + 'static> Completion<'a, T> {
    pub(crate) fn new(
        rt: &'a Runtime,
        signal: Signal<T>,
        submission: Option<wgpu::SubmissionIndex>,
        progress: Progress,
        operation: String,
    ) -> Self {
        Completion {
            rt,
            signal,
            submission,
            progress,
            polling: false,
            operation,
        }
    }

    /// Waits on this thread for the submission, then for the callback.
    fn block(&self) -> Result<T> {
        self.rt.wait_until(self.submission.clone())?;
        // wgpu runs a callback on a thread that polls the device: another thread's poll may
        // have taken this one's and not yet run it when this thread's wait returns.
        let deadline = Instant::now() + CALLBACK_WAIT;
        loop {
            if let Some(value) = self.signal.take() {
                return Ok(value);
            }
            if Instant::now() > deadline {
                return Err(Error::Internal {
                    operation: self.operation.clone(),
                    message: "wgpu did not run the callback after the GPU finished".into(),
                });
            }
            // Runs the callbacks nobody else has taken (and fails only on a lost device,
            // which the callback's result then reports).
            let _ = self.rt.device().poll(wgpu::PollType::Poll);
            std::thread::yield_now();
        }
    }

    /// Polls the device without waiting; when the callback has not run, a thread of its own
    /// waits for the submission and wakes the task.
    fn poll_async(&mut self, cx: &mut Context<'_>) -> Poll<Result<T>> {
        if let Err(error) = self.rt.device().poll(wgpu::PollType::Poll) {
            return Poll::Ready(Err(error.into()));
        }
        if let Some(value) = self.signal.take_or_register(cx.waker()) {
            return Poll::Ready(Ok(value));
        }
        if !self.polling {
            self.polling = self.spawn_poller();
            if !self.polling {
                // No thread to wait on: polled again, the future polls the device again.
                cx.waker().wake_by_ref();
            }
        }
        Poll::Pending
    }

    /// Starts a thread that waits for the submission and wakes the task; whether it started.
    #[cfg(not(target_arch = "wasm32"))]
    fn spawn_poller(&self) -> bool {
        let device = self.rt.device().clone();
        let signal = self.signal.clone();
        let poll = wgpu::PollType::Wait {
            submission_index: self.submission.clone(),
            timeout: None,
        };
        std::thread::Builder::new()
            .name("tessera wait".into())
            .spawn(move || {
                // The callback runs in this poll (or in another thread's), and wakes the task;
                // the task is woken once more in case the poll failed (a lost device), so that
                // it reports the loss.
                let _ = device.poll(poll);
                signal.wake();
            })
            .is_ok()
    }

    /// In a browser, the browser polls the device and runs the callback.
    #[cfg(target_arch = "wasm32")]
    fn spawn_poller(&self) -> bool {
        true
    }
}

impl<T: Send + 'static> Future for Completion<'_, T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        if let Some(value) = this.signal.take() {
            return Poll::Ready(Ok(value));
        }
        if let Err(error) = this.rt.check_device() {
            return Poll::Ready(Err(error));
        }
        match this.progress {
            Progress::Block => Poll::Ready(this.block()),
            Progress::Async => this.poll_async(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_callback_leaves_its_result_and_wakes_the_task_that_waits() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));

        // The callback before the task asks: the result is there, nobody is woken.
        let signal = Signal::new();
        signal.setter()(1);
        assert_eq!(signal.take_or_register(&waker), Some(1));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);

        // The task asks first: the callback, run on another thread, wakes it once.
        let signal = Signal::new();
        assert_eq!(signal.take_or_register(&waker), None);
        let set = signal.setter();
        std::thread::spawn(move || set(2)).join().unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(signal.take(), Some(2));

        // A poller's wake without a result wakes the task, which finds nothing yet.
        let signal = Signal::<u32>::new();
        assert_eq!(signal.take_or_register(&waker), None);
        signal.wake();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        assert_eq!(signal.take(), None);
    }
}
