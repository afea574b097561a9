//! Every device library of the nn kernels at once, so that each kernels module imports one
//! library (a library hands over the items of the libraries it imports): `#[device] use
//! crate::kernels::parts::parts;`.

#[tessera::device]
pub mod parts {
    #[device]
    use crate::kernels::activation::activation;
    #[device]
    use crate::kernels::conv::conv;
    #[device]
    use crate::kernels::fragments::fragments;
    #[device]
    use crate::kernels::gradients::gradients;
    #[device]
    use crate::kernels::params::params;
    #[device]
    use crate::kernels::staging::staging;
    #[device]
    use crate::kernels::stream::stream;
    #[device]
    use crate::kernels::wide::wide;
    #[device]
    use crate::kernels::window::window;
    #[device]
    use crate::kernels::winograd::winograd;
}
