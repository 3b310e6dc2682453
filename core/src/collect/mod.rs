//! The writer thread's side: taking the threads' records ([`writer`]), decoding
//! them into nested events ([`resolve`]), naming code addresses ([`symbolize`]),
//! and at the end merging the profiles and writing every output; and sampling the
//! process and the node ([`sampler`], reading [`procfs`] and [`nvml`]) between
//! rounds.

pub mod nvml;
pub mod procfs;
pub mod resolve;
pub mod sampler;
pub mod symbolize;
pub mod writer;
