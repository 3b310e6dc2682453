//! The writer thread's side: taking the threads' records ([`writer`]), decoding
//! them into nested events ([`resolve`]), naming code addresses ([`symbolize`]),
//! and at the end merging the profiles and writing every output.

pub mod resolve;
pub mod symbolize;
pub mod writer;
