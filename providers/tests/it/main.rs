//! The one integration test binary of `pai-providers`: the recordings
//! decoded to their expected parts, every chunking of them giving the same
//! parts, and the bad-stream table; with feature `http`, `HttpModel`
//! against a local server.

mod bad_streams;
mod chunking;
mod common;
mod corpus;
#[cfg(feature = "http")]
mod http;
mod props;
mod recordings;
