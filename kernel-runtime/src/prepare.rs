//! Building pipelines ahead of their first use, over any collection of launchers.

use crate::{Result, Runtime};

/// Something that can build its compute pipelines now rather than at its first dispatch:
/// every launcher and family that `#[tessera::kernels]` generates implements it (each
/// launcher's inherent `prepare` is the same call), and so do references, slices, arrays,
/// `Vec`s, `Option`s and tuples of up to eight such things, so code that keeps kernels in a
/// struct of its own can prepare them all without naming each one's type.
///
/// ```no_run
/// use kernel_runtime::{Prepare, Result, Runtime};
///
/// /// An op's kernels, whatever their launcher types.
/// struct Op<Forward, Backward> {
///     forward: Vec<Forward>,
///     backward: Backward,
/// }
///
/// impl<F: Prepare, B: Prepare> Op<F, B> {
///     fn prepare(&self, rt: &Runtime) -> Result<()> {
///         (&self.forward, &self.backward).prepare(rt)
///     }
/// }
/// ```
pub trait Prepare {
    /// Builds every pipeline now (or fetches it from `rt`'s cache); the first error stops it.
    fn prepare(&self, rt: &Runtime) -> Result<()>;
}

impl<T: Prepare + ?Sized> Prepare for &T {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        (**self).prepare(rt)
    }
}

impl<T: Prepare> Prepare for [T] {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.iter().try_for_each(|item| item.prepare(rt))
    }
}

impl<T: Prepare, const N: usize> Prepare for [T; N] {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.as_slice().prepare(rt)
    }
}

impl<T: Prepare> Prepare for Vec<T> {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.as_slice().prepare(rt)
    }
}

impl<T: Prepare> Prepare for Option<T> {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.as_ref().map_or(Ok(()), |item| item.prepare(rt))
    }
}

/// `Prepare` for tuples of the given element names, each prepared in order.
macro_rules! tuples {
    ($($name:ident)+) => {
        impl<$($name: Prepare),+> Prepare for ($($name,)+) {
            fn prepare(&self, rt: &Runtime) -> Result<()> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                $($name.prepare(rt)?;)+
                Ok(())
            }
        }
    };
}

tuples!(A);
tuples!(A B);
tuples!(A B C);
tuples!(A B C D);
tuples!(A B C D E);
tuples!(A B C D E F);
tuples!(A B C D E F G);
tuples!(A B C D E F G H);
